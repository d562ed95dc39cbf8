// Package auditcorpus writes a synthetic month of run reports for `sysprof audit`'s benchmark
// and tests: many machines, projects and steps, mostly routine escapes (cache writes, new
// tool versions, registry mirrors, harmless syscalls), some overbroad ones (a linter loading a
// cloud SDK or connecting out) and a few planted suspicious ones (hook writes, secret reads,
// raw addresses). It is deterministic for a seed.
package auditcorpus

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// Options of Generate.
type Options struct {
	Reports  int
	Machines int
	Projects int
	Days     int
	End      time.Time
	Seed     uint64
}

type step struct {
	name    string
	command []string
	exe     string
	parents []string
}

var steps = []step{
	{"format", []string{"npx", "prettier", "--check", "."}, "/usr/bin/node", []string{"/usr/bin/npx"}},
	{"lint", []string{"npx", "markdownlint", "."}, "/usr/bin/node", []string{"/usr/bin/npx"}},
	{"build", []string{"cargo", "build"}, "$CARGO_HOME/bin/cargo", []string{"$CARGO_HOME/bin/rustup"}},
	{"test", []string{"go", "test", "./..."}, "/usr/local/go/bin/go", nil},
	{"install", []string{"npm", "ci"}, "/usr/bin/node", []string{"/usr/bin/npm"}},
	{"lsp", []string{"gopls", "serve"}, "$HOME/go/bin/gopls", nil},
}

func file(path, access, exe string, parents []string, risk policy.Risk) report.Denial {
	section := policy.SectionRead
	if access != "read" {
		section = policy.SectionWrite
	}
	return report.Denial{Kind: report.KindFile, What: path + " " + access, Path: path, Access: access, Exe: exe, Parents: parents,
		Suggest: section + ": + " + path, Risk: risk, Count: 1}
}

func net(ep, host, exe string, parents []string, risk policy.Risk) report.Denial {
	return report.Denial{Kind: report.KindNetwork, What: ep + " tcp", Endpoint: ep, Host: host, Proto: "tcp", Exe: exe, Parents: parents,
		Suggest: policy.SectionConnect + ": + " + ep + " tcp", Risk: risk, Count: 1}
}

// routine escapes of a step: what a month of runs mostly shows.
func routine(r *rand.Rand, s step, day int) report.Denial {
	switch r.IntN(6) {
	case 0:
		return file(fmt.Sprintf("$HOME/.cache/%s/v%d/index-%d", s.name, 1+day/10, r.IntN(40)), "write", s.exe, s.parents, policy.RiskLow)
	case 1:
		return file(fmt.Sprintf("$TMPDIR/%s-%d/out", s.name, r.IntN(30)), "create", s.exe, s.parents, policy.RiskLow)
	case 2:
		sc := []string{"getrandom", "statx", "rseq", "clone3", "pidfd_open", "sched_getaffinity"}[r.IntN(6)]
		return report.Denial{Kind: report.KindSyscall, What: sc + "()", Syscall: sc, Arch: "x86_64", Exe: s.exe, Parents: s.parents,
			Suggest: policy.SectionSyscalls + ": + " + sc, Risk: policy.RiskLow, Count: 1 + r.IntN(20)}
	case 3:
		return file(fmt.Sprintf("$WORKDIR/target/gen-%d.rs", r.IntN(50)), "write", s.exe, s.parents, policy.RiskLow)
	case 4:
		return file(fmt.Sprintf("/usr/share/zoneinfo/zone-%d", r.IntN(20)), "read", s.exe, s.parents, policy.RiskLow)
	default:
		return file(fmt.Sprintf("$HOME/.npm/_cacache/index-v5/%02x", r.IntN(256)), "write", s.exe, s.parents, policy.RiskLow)
	}
}

// Generate writes o.Reports run reports into dir, one subdirectory per machine, and returns
// how many escapes of each planted kind it wrote.
func Generate(dir string, o Options) (map[string]int, error) {
	r := rand.New(rand.NewPCG(o.Seed, 0x5eed))
	planted := map[string]int{}
	start := o.End.Add(-time.Duration(o.Days) * 24 * time.Hour)
	for i := range o.Reports {
		s := steps[r.IntN(len(steps))]
		day := r.IntN(o.Days)
		at := start.Add(time.Duration(day)*24*time.Hour + time.Duration(r.IntN(86400))*time.Second)
		host := fmt.Sprintf("ci-%02d", r.IntN(o.Machines))
		e := report.NewEnvelope(report.RunEnforce, "bench")
		e.Host, e.Project, e.Step, e.Time, e.Command = host, fmt.Sprintf("project-%02d", r.IntN(o.Projects)), s.name, at, s.command
		e.ProfileSHA256 = fmt.Sprintf("%064x", r.Uint64())
		e.ProfileHosts = []string{"registry.pkgs.example.org:443", "index.crates.example.org:443"}
		e.Report = report.New(s.command, ".sysprof/"+s.name+".yaml", false)
		e.Report.Started, e.Report.Finished = at.Add(-time.Minute), at
		for range r.IntN(8) {
			e.Report.Add(routine(r, s, day))
		}
		if s.name != "lint" && s.name != "format" && r.IntN(20) == 0 {
			e.Report.Add(net(fmt.Sprintf("mirror%d.pkgs.example.org:443", r.IntN(3)), "", s.exe, s.parents, policy.RiskHigh))
		}
		if r.IntN(30) == 0 {
			e.Report.ChangedBinaries = append(e.Report.ChangedBinaries, report.ChangedBinary{Path: s.exe, File: s.exe, Learned: "aa", Now: "bb"})
		}
		// Overbroad: about 8% of runs.
		if (s.name == "lint" || s.name == "format") && r.IntN(4) == 0 {
			planted["overbroad"]++
			if r.IntN(2) == 0 {
				e.Report.Add(file("$WORKDIR/node_modules/@aws-sdk/client-s3/dist-cjs/index.js", "read", s.exe, s.parents, policy.RiskLow))
			} else {
				e.Report.Add(net("telemetry.example.com:443", "telemetry.example.com", s.exe, s.parents, policy.RiskHigh))
			}
		}
		// Suspicious: about 2% of runs.
		if r.IntN(50) == 0 {
			planted["suspicious"]++
			switch r.IntN(3) {
			case 0:
				e.Report.Add(file("$WORKDIR/.git/hooks/pre-commit", "write", s.exe, s.parents, policy.RiskCritical))
			case 1:
				e.Report.Add(file("$HOME/.ssh/id_ed25519", "read", s.exe, s.parents, policy.RiskCritical))
			default:
				e.Report.Add(net("198.51.100.23:8443", "", s.exe, s.parents, policy.RiskCritical))
			}
		}
		if _, err := e.SaveIn(fmt.Sprintf("%s/%s", dir, host)); err != nil {
			return nil, fmt.Errorf("report %d: %w", i, err)
		}
	}
	return planted, nil
}
