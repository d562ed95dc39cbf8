package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sysprof/sysprof/enforcer"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/profiler"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/synth"
)

// auditByLearning is `enforce --audit` where learning works (root, eBPF): the command runs with
// nothing blocked under the profiler, what it did is synthesized exactly (no families, the
// profile's own architectures), and every allowance the profile lacks becomes a denial that was
// let through, with the kinds, fields and suggestions of a real denial. A sandboxed audit
// cannot do this: a file the mount layout or Landlock refuses is refused, audit or not, and the
// tool then fails or changes course, so each run showed only the first denial of a path.
// refine --from the report accepts them in one round.
func auditByLearning(ctx context.Context, o *enforceOptions, p *policy.Profile) (*report.Report, int, error) {
	rep := report.New(o.Command, o.Profile, true)
	rep.Started = time.Now().UTC()
	// The environment enforce would give it: a secret the profile does not pass is not let
	// through by an audit either (nothing would record its use).
	env, removed := policy.ScrubEnv(os.Environ(), p.Env.Pass)
	env = append(env, paths.RunEnv(p.ExecPaths(), paths.EnvList(env))...)
	rep.SetEnvRemoved(removed)
	// Under sudo in the user's tree, the user's HOME (as enforce and learn give it).
	userHome := ""
	if uenv, note := enforcer.UserEnviron(".", env); uenv != nil {
		env = uenv
		userHome, _ = paths.EnvList(uenv)("HOME")
		rep.Notes = append(rep.Notes, note)
	}
	tr, res, _, err := learnOnce(ctx, profiler.Options{Command: o.Command, Env: env}, synth.Options{
		Exact:          true,
		Architectures:  p.Syscalls.Architectures,
		SysprofVersion: version,
	})
	if tr != nil && userHome != "" {
		giveHomeFilesToSudoUser(tr, userHome)
	}
	if err != nil {
		return nil, 0, err
	}
	// What enforce allows the user's preload is no denial of the audit either.
	p, note := policy.WithUserPreload(p, paths.EnvList(env))
	if note != "" {
		rep.Notes = append(rep.Notes, note)
	}
	o.trace = tr // the real process tree, for --html
	rep.Finished = time.Now().UTC()
	rep.ExitCode = tr.ExitCode
	rep.Notes = append(rep.Notes, "audit: the command ran unsandboxed under eBPF recording (nothing was blocked); every access the profile would have refused is listed, allowed")
	if tr.Loss.Any() {
		rep.Notes = append(rep.Notes, fmt.Sprintf("audit: %d ring-buffer events and %d map entries were lost: the list may be incomplete", tr.Loss.RingbufDrops, tr.Loss.MapFull))
	}
	for _, d := range auditDenials(p, res.Profile) {
		rep.Add(d)
	}
	for _, st := range res.SecretTouches {
		rep.Add(report.Denial{Kind: report.KindFile, What: st.Path + " " + st.Access + " (credential store " + st.Store + ")",
			Path: st.Path, Access: st.Access, Exe: st.Exe, Allowed: true, Risk: report.RiskCritical,
			Suggest: "none: " + st.Store + " is a credential store (learn --allow-secret names one)"})
	}
	rep.Sort()
	return rep, tr.ExitCode, nil
}

// auditDenials lists what learned allows and p does not, as denials that were let through.
// policy.Diff decides what widens (coverage, write implies read); the learned profile gives
// the structured fields.
func auditDenials(p, learned *policy.Profile) []report.Denial {
	changes := policy.Diff(p, learned)
	widens := map[[2]string]policy.Change{}
	for _, c := range changes {
		if c.Widens {
			widens[[2]string{c.Section, c.Item}] = c
		}
	}
	var out []report.Denial
	for _, s := range learned.Syscalls.Allow {
		if c, ok := widens[[2]string{policy.SectionSyscalls, s.Name}]; ok {
			out = append(out, report.Denial{Kind: report.KindSyscall, What: s.Name + "()", Syscall: s.Name, Exe: s.By,
				Allowed: true, Risk: reportRisk(c.Risk), Suggest: policy.SectionSyscalls + ": + " + s.Name})
		}
	}
	allowed := map[string]bool{}
	for _, s := range p.Syscalls.Allow {
		allowed[s.Name] = true
	}
	for _, c := range changes {
		// An argument of a syscall the profile does not allow at all is that syscall's denial.
		if c.Widens && c.Section == policy.SectionArgs && allowed[strings.Fields(c.Item)[0]] {
			out = append(out, report.Denial{Kind: report.KindSyscall, What: c.Item, Exe: c.By, Allowed: true,
				Risk: reportRisk(c.Risk), Suggest: policy.SectionArgs + ": " + c.Item})
		}
	}
	for _, sec := range []struct {
		section, access string
		rules           []policy.PathRule
	}{
		{policy.SectionRead, "read", learned.Filesystem.Read},
		{policy.SectionList, "list", learned.Filesystem.List},
		{policy.SectionWrite, "write", learned.Filesystem.Write},
		{policy.SectionExec, "exec", learned.Filesystem.Exec},
	} {
		for _, r := range sec.rules {
			c, ok := widens[[2]string{sec.section, r.Path}]
			if !ok {
				continue
			}
			out = append(out, report.Denial{Kind: report.KindFile, What: r.Path + " " + sec.access, Path: r.Path, Access: sec.access,
				Exe: r.By, Allowed: true, Risk: reportRisk(c.Risk), Suggest: sec.section + ": + " + r.Path})
		}
	}
	for _, sec := range []struct {
		section string
		eps     []policy.Endpoint
	}{{policy.SectionConnect, learned.Network.Connect}, {policy.SectionSend, learned.Network.Send}, {policy.SectionBind, learned.Network.Bind}} {
		for _, e := range sec.eps {
			hit, ok := widens[[2]string{sec.section, policy.EndpointItem(e)}]
			if !ok {
				continue
			}
			out = append(out, report.Denial{Kind: report.KindNetwork, What: e.Endpoint + " " + e.Proto, Endpoint: e.Endpoint, Proto: e.Proto,
				Exe: e.By, Allowed: true, Risk: reportRisk(hit.Risk), Suggest: sec.section + ": + " + e.Endpoint})
		}
	}
	return out
}

// reportRisk is a policy risk for a denial: at least low (report.Risk is policy.Risk).
func reportRisk(r policy.Risk) report.Risk { return max(r, report.RiskLow) }

// canAuditByLearning reports whether this process can learn (eBPF needs root here).
func canAuditByLearning() bool { return os.Geteuid() == 0 }
