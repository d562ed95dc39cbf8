package synth

import (
	"testing"

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
	for _, f := range Families {
		first := ""
		var want map[string]bool
		triggers := f.Triggers
		if triggers == nil {
			triggers = f.Members
		}
		for _, m := range triggers {
			got := allowed("read", m) // every tool reads: the data-copy family is always in
			if want == nil {
				first, want = m, got
				continue
			}
			for n := range got {
				if !want[n] {
					t.Errorf("family %s: seeing %s allows %s, seeing %s does not", f.Name, m, n, first)
				}
			}
			for n := range want {
				if !got[n] {
					t.Errorf("family %s: seeing %s allows %s, seeing %s does not", f.Name, first, n, m)
				}
			}
		}
	}
}

// A profile that learned one send call has the others in effect (drift of an older profile).
func TestFamilyMates(t *testing.T) {
	allowing := func(names ...string) *policy.Profile {
		p := &policy.Profile{}
		for _, n := range names {
			p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: n})
		}
		return p
	}
	m := FamilyMates(allowing("sendto", "openat"))
	if !m["sendmmsg"] || !m["sendmsg"] {
		t.Errorf("sendto's family mates = %v, want sendmsg and sendmmsg", m)
	}
	if m["ptrace"] || m["connect"] {
		t.Errorf("mates name a syscall no family holds: %v", m)
	}
	// copy_file_range is no trigger of copy-fallback: it does not bring renames in.
	if m2 := FamilyMates(allowing("copy_file_range")); m2["renameat2"] {
		t.Errorf("copy_file_range brings renameat2: %v", m2)
	}
	// A profile that reaches a unix socket by path has no fd-passing mates (drift reports them).
	p := allowing("sendto")
	p.Network.Connect = []policy.Endpoint{{Endpoint: "unix:/run/dbus/system_bus_socket"}}
	if m3 := FamilyMates(p); m3["sendmsg"] || m3["sendmmsg"] || !m3["sendto"] {
		t.Errorf("sendto's mates with a unix socket rule = %v, want sendto only", m3)
	}
}
