package synth

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/trace"
)

// passCredentialFlows finds the credential flows of the run: a binary that read a credential
// store (a touch the credentials pass dropped) whose entry names a host the run connected to
// gets a credentials rule for that entry and host, so that under enforce the tool holds a
// stand-in and the proxy presents the real value to that host only. The stores' entries come
// from learn (Options.Stores: keys and hosts, never values); a store entry referring to a
// variable (${NPM_TOKEN}) is brokered the same way (the variable holds the stand-in). One
// rule per host: a project store ($WORKDIR) wins over the user's, as npm reads them. The rule
// is by the binary that connected (git's helper reads .git-credentials, git-remote-https
// presents it).
func (s *state) passCredentialFlows() []string {
	if s.fromProfile || len(s.opts.Stores) == 0 && len(s.opts.EnvTokens) == 0 {
		return nil
	}
	readers := map[string][]string{} // store path -> binaries that read it
	for _, t := range s.secretTouches {
		if t.Access == "read" && !slices.Contains(readers[t.Path], t.Exe) {
			readers[t.Path] = append(readers[t.Path], t.Exe)
		}
	}
	connected := map[string]string{} // name and name:port -> the binary that connected
	for k, pr := range s.endpoints {
		if k.op != trace.OpConnect || k.proto != "tcp" {
			continue
		}
		h, port, err := net.SplitHostPort(k.endpoint)
		if err != nil {
			continue
		}
		for _, key := range []string{h, h + ":" + port} {
			if _, ok := connected[key]; !ok {
				connected[key] = pr.by
			}
		}
	}
	stores := sortedKeys(s.opts.Stores)
	slices.SortStableFunc(stores, func(a, b string) int { // $WORKDIR first
		return boolInt(!strings.HasPrefix(a, "$WORKDIR")) - boolInt(!strings.HasPrefix(b, "$WORKDIR"))
	})
	claimed := map[string]bool{}
	brokered := map[string]bool{}
	var msgs []string
	for _, store := range stores {
		exes := readers[store]
		if len(exes) == 0 {
			continue
		}
		slices.Sort(exes)
		for _, e := range s.opts.Stores[store] {
			by, ok := connected[strings.ToLower(e.Host)]
			if e.Host == "" || !ok || claimed[strings.ToLower(e.Host)] {
				continue
			}
			claimed[strings.ToLower(e.Host)] = true
			c := policy.Credential{File: store, Key: e.Key, Hosts: []string{strings.ToLower(e.Host)}, How: e.How,
				Provenance: policy.Provenance{By: cmpOr(by, exes[0]), Seen: 1}}
			s.creds = append(s.creds, c)
			brokered[store] = true
			via := ""
			if e.Env != "" {
				via = " (it refers to $" + e.Env + ")"
			}
			flow := fmt.Sprintf("%s reads %s %s%s and %s connects to %s: brokered (under enforce it holds a stand-in; the proxy presents the real value to %s only)",
				exes[0], store, e.Key, via, by, e.Host, e.Host)
			s.flows = append(s.flows, flow)
			msgs = append(msgs, flow)
		}
	}
	// A token variable set for the run whose service's host the run connected to: learn cannot
	// see the value go there (TLS), but that host is where its clients present it.
	for _, name := range slices.Sorted(slices.Values(s.opts.EnvTokens)) {
		tv, ok := policy.WellKnownToken(name)
		if !ok {
			continue
		}
		var hosts []string
		by := ""
		for _, h := range tv.Hosts {
			if b, ok := connected[h]; ok && !claimed[h] {
				claimed[h] = true
				hosts = append(hosts, h)
				by = cmpOr(by, b)
			}
		}
		if len(hosts) == 0 {
			continue
		}
		s.creds = append(s.creds, policy.Credential{Env: name, Hosts: hosts, How: tv.How, Provenance: policy.Provenance{By: by, Seen: 1}})
		flow := fmt.Sprintf("$%s is set and %s connects to %s, where its service reads it: brokered (under enforce the variable holds a stand-in; the proxy presents the real value to %s only)",
			name, by, strings.Join(hosts, ", "), strings.Join(hosts, ", "))
		s.flows = append(s.flows, flow)
		msgs = append(msgs, flow)
	}
	// Reading a brokered store is what the tool is meant to do (it sees the stand-ins): not a
	// secret touch for the review or drift.
	s.secretTouches = slices.DeleteFunc(s.secretTouches, func(t SecretTouch) bool { return brokered[t.Path] })
	s.warnings = slices.DeleteFunc(s.warnings, func(w string) bool {
		for st := range brokered {
			if strings.HasPrefix(w, "credential store touched: ") && strings.Contains(w, " "+st+" — ") {
				return true
			}
		}
		return false
	})
	return msgs
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
