package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
)

// learnStores reads the credential stores of this host that sysprof can broker (by format:
// .npmrc) for learn's credential-flows pass: each secret entry's key and the host its store
// names, never a value. A store that does not parse is said (file, line, key) and skipped.
func learnStores(w io.Writer, workdir string) map[string][]policy.SecretEntry {
	if workdir == "" {
		workdir, _ = os.Getwd()
	}
	vars := paths.Host(workdir, os.LookupEnv)
	out := map[string][]policy.SecretEntry{}
	for _, store := range paths.CredentialStores() {
		format := policy.StoreFormat(store)
		if format == "" || strings.ContainsAny(store, "*?[") {
			continue
		}
		file, err := paths.Expand(store, vars)
		if err != nil {
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			continue // absent or unreadable: nothing the tool read either
		}
		entries, err := policy.ParseStore(format, file, data)
		if err != nil {
			fmt.Fprintf(w, "sysprof: credential store not read for credential flows: %v\n", err)
			continue
		}
		if se := policy.SecretEntries(format, entries); len(se) > 0 {
			out[store] = se
		}
	}
	return out
}

// learnEnvTokens names the well-known token variables set (not empty) in learn's environment,
// for the credential-flows pass: names only.
func learnEnvTokens() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if _, ok := policy.WellKnownToken(k); ok && v != "" {
			out = append(out, k)
		}
	}
	return out
}

// printCredentialFlows lists the credential flows learn brokered (part of its review).
func printCredentialFlows(w io.Writer, flows []string) {
	if len(flows) == 0 {
		return
	}
	fmt.Fprintf(w, "sysprof: %d credential flow(s) brokered (credentials: in the profile; `sysprof show` lists them):\n", len(flows))
	for _, f := range flows {
		fmt.Fprintf(w, "  %s\n", f)
	}
}
