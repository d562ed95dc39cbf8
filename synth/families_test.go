package synth

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/enforcer"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/trace"
)

// A tool's per-shard cache files ($HOME/.cache/gopls/<hash>/<nn>/...) roll up to the tool's cache
// directory, never to $HOME/.cache or $HOME.
func TestToolCacheRollsUpToItsDirectory(t *testing.T) {
	ctx := map[string]string{"HOME": "/home/a", "WORKDIR": "/home/a/src/p", "TMPDIR": "/tmp"}
	exe := "/usr/bin/gopls"
	tr := &trace.Trace{Version: trace.Version, Command: []string{"gopls", "check"}, Context: ctx,
		Processes: []trace.Process{{ID: 1, PID: 10, Exe: exe}}}
	for _, p := range []string{"/home/a/.cache/gopls/0f3e/25/ab-diagnostics", "/home/a/.cache/gopls/0f3e/26/cd-diagnostics", "/home/a/.cache/gopls/77aa/01/ef-index"} {
		tr.Files = append(tr.Files, trace.FileAccess{Exe: exe, Path: p, Access: trace.AccessCreate, OK: true})
	}
	tr.Files = append(tr.Files, trace.FileAccess{Exe: exe, Path: "/home/a/.cache/notes.txt", Access: trace.AccessCreate, OK: true})
	res, err := Synthesize(tr, testOpts())
	if err != nil {
		t.Fatal(err)
	}
	got := rulePaths(res.Profile.Filesystem.Write)
	want := []string{"$HOME/.cache/gopls", "$HOME/.cache/notes.txt", "/dev/tty"} // /dev/tty: the terminal family
	if !sameSet(got, want) {
		t.Errorf("write rules %q, want %q", got, want)
	}
}

// pnpm's home holds its global bins (on PATH): its store is a tool cache and its hard-link
// probe beside the store is granted as the probe's glob, never $PNPM_HOME itself (issue 24:
// learn made all of $HOME/.local/share/pnpm writable, rated critical).
func TestPnpmStoreAndProbe(t *testing.T) {
	ctx := map[string]string{"HOME": "/home/a", "WORKDIR": "/home/a/src/p", "TMPDIR": "/tmp", "PNPM_HOME": "/home/a/.local/share/pnpm"}
	exe := "/usr/bin/node"
	tr := &trace.Trace{Version: trace.Version, Command: []string{"pnpm", "install"}, Context: ctx,
		Processes: []trace.Process{{ID: 1, PID: 10, Exe: exe}}}
	probe := "/home/a/.local/share/pnpm/_tmp_5267_aae715369491dc8a23d596d2eda1f04a"
	for _, f := range []trace.FileAccess{
		{Path: probe, Access: trace.AccessCreate, Dir: true},
		{Path: probe + "/_tmp_5267_27c994235d30810eea41c94b412ebac4", Access: trace.AccessCreate},
		{Path: probe + "/_tmp_5267_27c994235d30810eea41c94b412ebac4", Access: trace.AccessDelete},
		{Path: probe, Access: trace.AccessDelete},
		{Path: "/home/a/.local/share/pnpm/store/v10/files/c4/5045ce9cd786", Access: trace.AccessCreate},
		{Path: "/home/a/.local/share/pnpm/store/v10/index/e4/b6af2e6dce44.json", Access: trace.AccessCreate},
		// The index file of a package from a tarball names the project's path: another
		// checkout reads another one.
		{Path: "/home/a/.local/share/pnpm/store/v10/index/5a/0c1d-file+vendor+leftpad-1.0.0.tgz.json", Access: trace.AccessRead},
	} {
		f.Exe, f.OK = exe, true
		tr.Files = append(tr.Files, f)
	}
	res, err := Synthesize(tr, testOpts())
	if err != nil {
		t.Fatal(err)
	}
	got := rulePaths(res.Profile.Filesystem.Write)
	want := []string{"$PNPM_HOME/_tmp_*", "$PNPM_HOME/store", "/dev/tty"} // /dev/tty: the terminal family
	if !sameSet(got, want) {
		t.Errorf("write rules %q, want %q", got, want)
	}
	for _, r := range rulePaths(res.Profile.Filesystem.Read) {
		if strings.HasPrefix(r, "$PNPM_HOME/store/") {
			t.Errorf("read rule %s below the store: the store is read whole", r)
		}
	}
	for _, w := range res.Profile.Filesystem.Write {
		if r, why := policy.PathRisk("write", w.Path, nil); r > policy.RiskLow {
			t.Errorf("write %s rated %v (%s), want low", w.Path, r, why)
		}
	}
	// A warm store is only read: its root is the rule.
	tr.Files = []trace.FileAccess{{Exe: exe, Path: "/home/a/.local/share/pnpm/store/v10/index/5a/0c1d-file+vendor+leftpad-1.0.0.tgz.json", Access: trace.AccessRead, OK: true}}
	if res, err = Synthesize(tr, testOpts()); err != nil {
		t.Fatal(err)
	}
	if got := rulePaths(res.Profile.Filesystem.Read); !slices.Contains(got, "$PNPM_HOME/store") {
		t.Errorf("read rules of a warm store %q, want $PNPM_HOME/store", got)
	}
	// pnpm's home itself (its global bins) stays critical.
	if r, _ := policy.PathRisk("write", "$PNPM_HOME", nil); r != policy.RiskCritical {
		t.Errorf("write $PNPM_HOME rated %v, want critical", r)
	}
	if r, _ := policy.PathRisk("write", "$PNPM_HOME/eslint", nil); r != policy.RiskCritical {
		t.Errorf("write $PNPM_HOME/eslint (a global bin) rated %v, want critical", r)
	}
}

func TestVersionless(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/bin/gcc-12":                                "/usr/bin/gcc-*",
		"/usr/bin/x86_64-linux-gnu-gcc-12":               "/usr/bin/x86_64-linux-gnu-gcc-*",
		"/usr/bin/python3.11":                            "/usr/bin/python3.*",
		"/usr/lib/python3.11/os.py":                      "/usr/lib/python3.*/os.py",
		"/usr/lib/gcc/x86_64-linux-gnu/12/cc1":           "/usr/lib*/gcc/x86_64-linux-gnu/*/cc1",
		"/usr/libexec/gcc/x86_64-linux-gnu/14/cc1":       "/usr/lib*/gcc/x86_64-linux-gnu/*/cc1",
		"$HOME/.pyenv/versions/3.11.7/bin/python3.11":    "$HOME/.pyenv/versions/*/bin/python3.*",
		"/usr/bin/python3":                               "/usr/bin/python3",
		"/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0": "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0",
		"/usr/bin/make":                                  "/usr/bin/make",
		"$WORKDIR/build-12":                              "$WORKDIR/build-12",
	} {
		if got := versionless(in); got != want {
			t.Errorf("versionless(%s) = %s, want %s", in, got, want)
		}
	}
}

// sysprof's own cache ($HOME/.cache/sysprof, where enforce keeps the binary hashes it trusts) is
// never a tool cache root: a write there stays exact, and diff rates it critical.
func TestSysprofCacheIsNotAToolCache(t *testing.T) {
	if got := writeAnchor("$HOME/.cache/sysprof/binhash"); got != "" {
		t.Errorf("writeAnchor($HOME/.cache/sysprof/binhash) = %q, want no roll-up", got)
	}
	if got := writeAnchor("$HOME/.cache/gopls/0f/x"); got != "$HOME/.cache/gopls" {
		t.Errorf("writeAnchor($HOME/.cache/gopls/0f/x) = %q (control)", got)
	}
}

// TestFamiliesClosed: which member of a family a tool calls depends on its I/O condition (cat
// into a file calls copy_file_range, into a pipe or /dev/null write). Whatever member a learn
// saw, the profile allows the same syscalls, so that a drift under another I/O condition finds
// nothing new (issue 24 item 8: learned to /dev/null, drifted to a file, copy_file_range
// brought the copy-fallback family in: "6 widening").
func TestFamiliesClosed(t *testing.T) {
	allowed := func(seen ...string) map[string]bool {
		var sc []trace.SyscallCount
		for _, n := range append([]string{"openat", "close"}, seen...) {
			sc = append(sc, trace.SyscallCount{Exe: "/usr/bin/cat", Arch: trace.ArchX86_64, Name: n, Count: 1})
		}
		tr := &trace.Trace{Version: trace.Version, Command: []string{"cat", "in.txt"},
			Context:   map[string]string{"HOME": "/home/a", "WORKDIR": "/home/a/p", "TMPDIR": "/tmp"},
			Processes: []trace.Process{{ID: 1, PID: 10, Exe: "/usr/bin/cat"}}, Syscalls: sc}
		res, err := Synthesize(tr, testOpts())
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, s := range res.Profile.Syscalls.Allow {
			out[s.Name] = true
		}
		return out
	}
	for _, f := range policy.Families {
		first := ""
		var want map[string]bool
		triggers := f.Triggers
		if triggers == nil {
			triggers = f.Members
		}
		// A trigger that is not a member (process-session's clone) brings its own mates too
		// (fork, vfork): then only the family's members are compared.
		compared := func(n string) bool { return true }
		if slices.ContainsFunc(triggers, func(n string) bool { return !slices.Contains(f.Members, n) }) {
			compared = func(n string) bool { return slices.Contains(f.Members, n) }
		}
		for _, m := range triggers {
			got := allowed("read", m) // every tool reads: the data-copy family is always in
			if want == nil {
				first, want = m, got
				continue
			}
			for n := range got {
				if !want[n] && compared(n) {
					t.Errorf("family %s: seeing %s allows %s, seeing %s does not", f.Name, m, n, first)
				}
			}
			for n := range want {
				if !got[n] && compared(n) {
					t.Errorf("family %s: seeing %s allows %s, seeing %s does not", f.Name, first, n, m)
				}
			}
		}
	}
}

// TestFamilyMatesAgreeWithLearn: policy.FamilyMates, with which enforce and drift close the
// families of a profile, adds exactly what learn adds (issue 24 item 8: one way, in learn,
// enforce and drift), whichever members were learned; and learn --exact is recorded in the
// profile and survives a resynthesis.
func TestFamilyMatesAgreeWithLearn(t *testing.T) {
	synthesize := func(opts Options, seen ...string) *policy.Profile {
		t.Helper()
		var sc []trace.SyscallCount
		for _, n := range append([]string{"openat", "close"}, seen...) {
			sc = append(sc, trace.SyscallCount{Exe: "/usr/bin/cat", Arch: trace.ArchX86_64, Name: n, Count: 1})
		}
		tr := &trace.Trace{Version: trace.Version, Command: []string{"cat", "in.txt"},
			Context:   map[string]string{"HOME": "/home/a", "WORKDIR": "/home/a/p", "TMPDIR": "/tmp"},
			Processes: []trace.Process{{ID: 1, PID: 10, Exe: "/usr/bin/cat"}}, Syscalls: sc}
		res, err := Synthesize(tr, opts)
		if err != nil {
			t.Fatal(err)
		}
		return res.Profile
	}
	famNames := map[string]bool{}
	for _, f := range policy.Families {
		famNames[f.Name] = true
	}
	var cases [][]string
	for _, f := range policy.Families {
		for _, m := range f.Members {
			cases = append(cases, []string{m}, []string{"read", m}, []string{m, "sendto", "rename"})
		}
	}
	for _, seen := range cases {
		learned := synthesize(testOpts(), seen...)
		if learned.Metadata.Exact {
			t.Fatalf("learned %v without --exact: metadata.exact is set", seen)
		}
		// What learn added as family members.
		added := map[string]string{}
		var plain []policy.Syscall
		for _, s := range learned.Syscalls.Allow {
			if famNames[s.Family] {
				added[s.Name] = s.Family
			} else {
				plain = append(plain, s)
			}
		}
		// What closing the families of the profile without them adds.
		closed := map[string]string{}
		have := map[string]bool{}
		for _, s := range plain {
			have[s.Name] = true
		}
		for n, f := range policy.FamilyMates(&policy.Profile{Syscalls: policy.Syscalls{Allow: plain}, Network: learned.Network}) {
			if !have[n] {
				closed[n] = f
			}
		}
		if !maps.Equal(added, closed) {
			t.Errorf("learned %v: learn added %v, policy.FamilyMates closes %v", seen, added, closed)
		}
		exact := synthesize(Options{Exact: true, SysprofVersion: "0.0.0-test", Now: testOpts().Now}, seen...)
		if !exact.Metadata.Exact {
			t.Errorf("learned %v with --exact: metadata.exact is not set", seen)
		}
		if again, err := Resynthesize(exact, testOpts()); err != nil || !again.Profile.Metadata.Exact || len(again.Profile.Syscalls.Allow) != len(exact.Syscalls.Allow) {
			t.Errorf("resynthesized --exact profile of %v: err %v, exact %v, %d syscalls (was %d)", seen, err, again != nil && again.Profile.Metadata.Exact, len(again.Profile.Syscalls.Allow), len(exact.Syscalls.Allow))
		}
	}
}

// A family comes with its trigger and never without it, whatever else the command did:
//   - remove with a rename: a cache learned cold is only filled (written, renamed into place); a
//     later warm run drops stale entries (mypy unlinks .mypy_cache/*.meta.json after an edit, or
//     as another user);
//   - process-session with a process start: a command may detach a child into a session of its
//     own depending on who runs it (the go command's telemetry child: once a day per user);
//   - touch with a link or rename into place: git commit writes a new object through a temp
//     file and link, and only sets the times of one it has already (the same tree again).
//
// (working-directory, sleep and runtime-timing are in every profile: TestEveryProfileFamilies.)
func TestTriggerBringsFamily(t *testing.T) {
	ctx := map[string]string{"HOME": "/home/a", "WORKDIR": "/w", "TMPDIR": "/tmp"}
	for _, c := range []struct {
		exe, trigger string
		command      []string
		want         []string
	}{
		{"/usr/bin/python3.11", "rename", []string{"mypy", "."}, []string{"unlink", "unlinkat"}},
		{"/usr/local/go/bin/go", "clone", []string{"go", "test", "-race", "."}, []string{"setsid"}},
		{"/usr/bin/git", "link", []string{"git", "commit"}, []string{"utimensat"}},
	} {
		for _, triggered := range []bool{true, false} {
			tr := &trace.Trace{Version: trace.Version, Command: c.command, Context: ctx,
				Host:      trace.Host{Kernel: "6.18", Arch: trace.ArchX86_64},
				Processes: []trace.Process{{ID: 1, PID: 10, Exe: c.exe}},
				Syscalls:  []trace.SyscallCount{{Name: "openat", Arch: trace.ArchX86_64, Exe: c.exe, Count: 1}}}
			if triggered {
				tr.Syscalls = append(tr.Syscalls, trace.SyscallCount{Name: c.trigger, Arch: trace.ArchX86_64, Exe: c.exe, Count: 1})
			}
			res, err := Synthesize(tr, testOpts())
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range c.want {
				got := slices.ContainsFunc(res.Profile.Syscalls.Allow, func(r policy.Syscall) bool { return r.Name == n })
				if got != triggered {
					t.Errorf("%v, %s seen=%v: %s allowed=%v", c.command, c.trigger, triggered, n, got)
				}
			}
		}
	}
}

// TestEveryProfileFamilies: the members of policy.EveryProfileFamilies are in every profile but
// --exact, learned or not: git started below its tree's top goes there (chdir), which a learn
// at the top never sees (issue 24, the command started from a subdirectory); a cold build cache
// starts one compiler per package in its directory, a warm one none; Go's scheduler sleeps in
// its spin by timing and a runtime polls its stdout only before a write (shellcheck learned
// with nothing to report, enforced with findings) (go version learned at a terminal was denied nanosleep at enforce:
// TestIOMatrix/go-version), a garbage collector returns memory when its timer fires.
func TestEveryProfileFamilies(t *testing.T) {
	ctx := map[string]string{"HOME": "/home/a", "WORKDIR": "/w", "TMPDIR": "/tmp"}
	want := []string{"chdir", "fchdir", "nanosleep", "clock_nanosleep", "madvise", "rseq", "getrandom", "futex_waitv"}
	for _, f := range policy.Families {
		if slices.Contains(policy.EveryProfileFamilies, f.Name) {
			for _, n := range f.Members {
				if !slices.Contains(want, n) {
					want = append(want, n)
				}
			}
		}
	}
	for _, exact := range []bool{false, true} {
		tr := &trace.Trace{Version: trace.Version, Command: []string{"git", "log"}, Context: ctx,
			Host:      trace.Host{Kernel: "6.18", Arch: trace.ArchX86_64},
			Processes: []trace.Process{{ID: 1, PID: 10, Exe: "/usr/bin/git"}},
			Syscalls:  []trace.SyscallCount{{Name: "openat", Arch: trace.ArchX86_64, Exe: "/usr/bin/git", Count: 1}}}
		opts := testOpts()
		opts.Exact = exact
		res, err := Synthesize(tr, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range want {
			got := slices.ContainsFunc(res.Profile.Syscalls.Allow, func(r policy.Syscall) bool { return r.Name == n })
			if got == exact {
				t.Errorf("exact=%v: %s allowed=%v", exact, n, got)
			}
		}
	}
}

// A write of a base device (/dev/null: libuv opens it O_RDWR over a closed stdin; a shell's
// `>/dev/null` on one branch of a script, an open with O_CREAT the learn records as a create)
// makes no rule: the enforcer grants those devices whole in every profile, and a learn that saw
// the write must not drift from one that did not (TestPerturbationsSeven/node/stdin-closed
// drifted "+ filesystem.write /dev/null").
func TestBaseDeviceWriteNoRule(t *testing.T) {
	ctx := map[string]string{"HOME": "/home/a", "WORKDIR": "/w", "TMPDIR": "/tmp"}
	for _, access := range []string{trace.AccessWrite, trace.AccessCreate} {
		tr := &trace.Trace{Version: trace.Version, Command: []string{"node", "-e", "1"}, Context: ctx,
			Host:      trace.Host{Kernel: "6.18", Arch: trace.ArchX86_64},
			Processes: []trace.Process{{ID: 1, PID: 10, Exe: "/usr/bin/node"}},
			Syscalls:  []trace.SyscallCount{{Name: "openat", Arch: trace.ArchX86_64, Exe: "/usr/bin/node", Count: 1}},
			Files: []trace.FileAccess{{Exe: "/usr/bin/node", Access: access, OK: true, Path: "/dev/null"},
				{Exe: "/usr/bin/node", Access: trace.AccessWrite, OK: true, Path: "/w/out.txt"}}}
		res, err := Synthesize(tr, testOpts())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Profile.Filesystem.Write {
			if r.Path == "/dev/null" {
				t.Errorf("%s: a %s of /dev/null made a rule: %v", access, access, res.Profile.Filesystem.Write)
			}
		}
		if !slices.ContainsFunc(res.Profile.Filesystem.Write, func(r policy.PathRule) bool { return r.Path == "$WORKDIR/out.txt" }) {
			t.Errorf("%s: the other write made no rule: %v", access, res.Profile.Filesystem.Write)
		}
		if !Allows(res.Profile, ctx, Access{Kind: access, Path: "/dev/null"}) {
			t.Errorf("the model does not allow a %s of /dev/null", access)
		}
		if Allows(res.Profile, ctx, Access{Kind: trace.AccessCreate, Path: "/dev/nullx"}) || Allows(res.Profile, ctx, Access{Kind: trace.AccessDelete, Path: "/dev/null"}) {
			t.Error("the model allows creating a name in /dev or removing /dev/null")
		}
	}
	// What makes no rule here is what the enforcer grants whole in every profile: its base
	// reads, which Landlock takes as devices (read and write), one file each.
	for _, p := range baseReads {
		if baseDevice(p) && !slices.Contains(enforcer.BaseRead, p) {
			t.Errorf("%s: a write makes no rule, but enforcer.BaseRead does not grant it", p)
		}
	}
}
