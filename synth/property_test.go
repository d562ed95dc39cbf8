package synth

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/trace"
)

// randomTrace builds a plausible but random learn run: a few processes and many file accesses
// spread over system trees, the work tree, home (credential stores included), temp dirs with
// per-run names, /proc and /dev. It returns the trace and the pid each access was made from.
func randomTrace(r *rand.Rand) (*trace.Trace, []int) {
	home := fmt.Sprintf("/home/u%d", r.IntN(100))
	ctx := map[string]string{
		"HOME": home, "WORKDIR": home + "/src/p", "TMPDIR": []string{"/tmp", "/var/tmp/t"}[r.IntN(2)],
		"GOCACHE": home + "/.cache/go-build", "GOROOT": "/usr/local/go", "CARGO_HOME": home + "/.cargo",
		"RUSTUP_HOME": home + "/.rustup", "NPM_CACHE": home + "/.npm", "GOMODCACHE": home + "/go/pkg/mod",
	}
	hex := func(n int) string {
		const digits = "0123456789abcdef"
		b := make([]byte, n)
		for i := range b {
			b[i] = digits[r.IntN(16)]
		}
		return string(b)
	}
	exes := []string{"/usr/bin/cc", "/usr/local/go/bin/go", home + "/src/p/target/debug/build/x-" + hex(16) + "/build-script-build",
		"/usr/bin/node", home + "/.local/bin/tool", "/usr/libexec/gcc/x86_64-linux-gnu/14/cc1"}
	tr := &trace.Trace{Version: trace.Version, Command: []string{"tool", "run"}, Context: ctx,
		Host: trace.Host{Kernel: "6.18.0", Arch: trace.ArchX86_64}}
	pidsOf := map[string][]int{}
	nproc := 1 + r.IntN(6)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < nproc; i++ {
		exe := exes[r.IntN(len(exes))]
		pid := 1000 + r.IntN(9000)
		pidsOf[exe] = append(pidsOf[exe], pid)
		tr.Processes = append(tr.Processes, trace.Process{ID: i + 1, Parent: i, PID: pid, Exe: exe,
			Start: t0.Add(time.Duration(r.IntN(5)) * time.Second), SHA256: hex(64)})
	}
	procExes := sortedKeys(pidsOf)
	bases := []string{
		"/usr/lib/x86_64-linux-gnu", "/usr/share/zoneinfo/Europe", "/usr/include", "/etc", "/etc/ssl/certs",
		"/opt/tool", "/lib64", ctx["WORKDIR"], ctx["WORKDIR"] + "/src", ctx["WORKDIR"] + "/target/debug/deps",
		home, home + "/.config/tool", home + "/.ssh", home + "/.aws", home + "/.cargo", home + "/.cargo/registry/src",
		home + "/.cache", ctx["GOCACHE"] + "/" + hex(2), ctx["TMPDIR"], ctx["TMPDIR"] + "/go-build" + fmt.Sprint(r.IntN(1e9)),
		ctx["TMPDIR"] + "/ssh-" + hex(10), "/usr/local/go/src/fmt", "/sys/fs/cgroup", "/dev", "/dev/pts", "/", home + "/.npm/_cacache",
		ctx["TMPDIR"] + "/tmp." + hex(10),
	}
	mixed := func(n int) string {
		const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
		b := []byte("aA0")[:0]
		for len(b) < n-2 {
			b = append(b, alphabet[r.IntN(len(alphabet))])
		}
		return string(append(b, 'Q', '7')) // always mixed case with a digit
	}
	leaves := []string{"a.txt", mixed(6), "target" + mixed(6), "main.go", ".env", ".env.local", "lib" + hex(8) + ".so", "config.toml", "id_rsa",
		"credentials", "null", "tty", "3", "known_hosts", "x" + hex(3), "cc" + hex(6) + ".o", "agent." + fmt.Sprint(r.IntN(99999))}
	kinds := []string{trace.AccessRead, trace.AccessRead, trace.AccessRead, trace.AccessList, trace.AccessMetadata,
		trace.AccessWrite, trace.AccessCreate, trace.AccessCreate, trace.AccessDelete, trace.AccessExec}
	var pids []int
	n := r.IntN(250)
	for i := 0; i < n; i++ {
		exe := procExes[r.IntN(len(procExes))]
		pid := pidsOf[exe][r.IntN(len(pidsOf[exe]))]
		var p string
		if r.IntN(12) == 0 {
			other := 1 + r.IntN(9999)
			if r.IntN(2) == 0 {
				other = pid
			}
			p = fmt.Sprintf("/proc/%d/%s", other, []string{"status", "cgroup", "task/" + fmt.Sprint(other+1) + "/stat"}[r.IntN(3)])
		} else {
			p = bases[r.IntN(len(bases))]
			for j := r.IntN(4); j > 0; j-- {
				p = strings.TrimSuffix(p, "/") + "/" + leaves[r.IntN(len(leaves))]
			}
		}
		f := trace.FileAccess{Exe: exe, Path: p, Access: kinds[r.IntN(len(kinds))], OK: r.IntN(5) != 0, Count: 1}
		if !f.OK {
			f.Errno = []int{2, 13, 17}[r.IntN(3)]
		}
		f.Dir = f.Access == trace.AccessList || (f.Access == trace.AccessCreate || f.Access == trace.AccessDelete) && r.IntN(3) == 0
		tr.Files = append(tr.Files, f)
		pids = append(pids, pid)
	}
	// Syscalls, argument values and network endpoints, to exercise the other passes.
	names := []string{"read", "write", "openat", "socket", "clone", "clone3", "unshare", "setns", "prctl",
		"personality", "ioctl", "mprotect", "connect", "sendto", "bind", "exit_group", "syscall_999"}
	for i := r.IntN(len(names)); i < len(names); i += 1 + r.IntN(3) {
		exe := procExes[r.IntN(len(procExes))]
		a := []string{trace.ArchX86_64, trace.ArchX86_64, trace.ArchI386}[r.IntN(3)]
		tr.Syscalls = append(tr.Syscalls, trace.SyscallCount{Exe: exe, Arch: a, Name: names[i], Nr: 999, Count: 1})
	}
	kindsOf := map[string]string{"clone": "clone_flags", "clone3": "clone3_flags", "unshare": "unshare_flags",
		"setns": "setns_nstype", "prctl": "prctl_option", "personality": "personality", "ioctl": "ioctl_request",
		"mprotect": "mprotect_prot"}
	for j := r.IntN(12); j > 0; j-- {
		exe := procExes[r.IntN(len(procExes))]
		sc := []string{"socket", "clone", "clone3", "unshare", "setns", "prctl", "personality", "ioctl", "mprotect"}[r.IntN(9)]
		v := trace.ArgValue{Exe: exe, Syscall: sc, Kind: kindsOf[sc], Count: 1,
			Value: []uint64{0, 0x11, 0x4111, 0x50f00, 0x10000000, 0x20000, 0x80, 15, 38, 0xffffffff, 0x5401, 0x5412, 5, 0x40000000}[r.IntN(14)]}
		if sc == "socket" {
			v.Kind = "socket"
			v.Fields = map[string]uint64{"domain": []uint64{1, 2, 10, 16, 38, 40}[r.IntN(6)],
				"type": []uint64{1, 2, 3, 0x80001, 0x80802}[r.IntN(5)], "protocol": []uint64{0, 6, 17, 262}[r.IntN(4)]}
		}
		tr.Args = append(tr.Args, v)
	}
	for j := r.IntN(8); j > 0; j-- {
		n := trace.NetworkAccess{Exe: procExes[r.IntN(len(procExes))], Op: []string{trace.OpConnect, trace.OpSend, trace.OpBind}[r.IntN(3)],
			Family: []string{"inet", "inet6", "unix"}[r.IntN(3)], Proto: []string{"tcp", "udp", "mptcp", "raw", "stream", ""}[r.IntN(6)],
			Port: []int{0, 53, 443, 8080}[r.IntN(4)], OK: r.IntN(4) != 0, Count: 1}
		switch n.Family {
		case "inet":
			n.Addr = []string{"127.0.0.1", "10.1.2.3", "0.0.0.0", ""}[r.IntN(4)]
		case "inet6":
			n.Addr = []string{"::1", "2001:db8::1", "fe80::1%eth0", "::ffff:10.0.0.1", "::"}[r.IntN(5)]
		default:
			n.Path = []string{"", "@abstract", ctx["TMPDIR"] + "/ssh-" + hex(10) + "/agent.1", "/run/user/1000/bus", home + "/.sock"}[r.IntN(5)]
		}
		if r.IntN(3) == 0 {
			n.Host = []string{"Registry.Example.org.", "goproxy.example"}[r.IntN(2)]
		}
		tr.Network = append(tr.Network, n)
	}
	return tr, pids
}

// secretsOf returns the default credential stores of ctx (expanded) and a matcher telling
// whether an absolute path is a secret no allowance named.
func secretFilter(ctx map[string]string, allow []string) func(string) bool {
	var stores, allowed []string
	for _, c := range append(paths.CredentialStores(), sshAgentDefault) {
		stores = append(stores, expandOr(c, ctx))
	}
	for _, a := range allow {
		a = strings.Replace(a, "~", "$HOME", 1)
		allowed = append(allowed, expandOr(a, ctx))
	}
	return func(p string) bool {
		for _, a := range allowed {
			if paths.Covers(a, p) {
				return false
			}
		}
		for _, s := range stores {
			if paths.Covers(s, p) {
				return true
			}
		}
		return false
	}
}

// refusedByDesign reports accesses synthesis deliberately does not grant (documented in
// passRead and passWrite): reading /, $HOME, /etc … themselves, writing $WORKDIR, $HOME …
// themselves.
func refusedByDesign(f trace.FileAccess, ctx map[string]string) bool {
	p := paths.NewRoots(ctx).Generalize(f.Path, nil)
	switch {
	case f.Access == trace.AccessRead && !f.Dir:
		return tooBroadToRead(p) || p == ptyDir // a terminal: the enforcer grants the stdio one
	case isWriteKind(f.Access):
		target, _ := writeTarget(p, f.Access, f.Dir, newPatternSet(append(paths.CredentialStores(), sshAgentDefault)))
		return target == ""
	case f.Access == trace.AccessExec:
		return tooBroadToExec(p)
	}
	return false
}

// TestPropertyAllowsObserved: every successful access of a random trace is allowed by the
// synthesized profile, except credential stores (never, unless allowed) and the few accesses
// refused by design; and nothing inside a credential store is allowed unless AllowSecrets
// names it.
func TestPropertyAllowsObserved(t *testing.T) {
	iterations := 300
	if testing.Short() {
		iterations = 50
	}
	for seed := 0; seed < iterations; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 0x5e5))
		tr, pids := randomTrace(r)
		opts := testOpts()
		opts.RollupThreshold = 1 + r.IntN(10)
		switch r.IntN(4) {
		case 0:
			opts.AllowSecrets = []string{"~/.aws"}
		case 1:
			opts.AllowSecrets = []string{tr.Context["HOME"] + "/.ssh/known_hosts"}
		}
		res, err := Synthesize(tr, opts)
		if err != nil {
			t.Fatal(err)
		}
		p, ctx := res.Profile, tr.Context
		secret := secretFilter(ctx, opts.AllowSecrets)
		for i, f := range tr.Files {
			a := Access{Kind: f.Access, Path: f.Path, PID: pids[i]}
			switch {
			case secret(f.Path):
				// Listing is not checked: a list rule on $HOME lets the tool see the names in a
				// store that --allow-secret un-hid, never their contents.
				for _, k := range []string{trace.AccessRead, trace.AccessWrite, trace.AccessCreate, trace.AccessExec} {
					if Allows(p, ctx, Access{Kind: k, Path: f.Path, PID: pids[i]}) {
						t.Fatalf("seed %d: secret %s allowed for %s (allow-secret %q)\n%s", seed, f.Path, k, opts.AllowSecrets, dump(t, res))
					}
				}
			case !f.OK || refusedByDesign(f, ctx):
			case !Allows(p, ctx, a):
				t.Fatalf("seed %d: observed %s %s (pid %d, by %s) is not allowed\n%s", seed, f.Access, f.Path, pids[i], f.Exe, dump(t, res))
			}
		}
		for _, pr := range tr.Processes {
			if !Allows(p, ctx, Access{Kind: trace.AccessExec, Path: pr.Exe}) && !secret(pr.Exe) {
				t.Fatalf("seed %d: binary %s that ran cannot be executed", seed, pr.Exe)
			}
		}
		// Nothing the tool never wrote at the top of the work tree or home becomes writable
		// (those directories only ever get exact-file write rules).
		for _, p0 := range []string{ctx["WORKDIR"] + "/SENTINEL.rs", ctx["HOME"] + "/.bashrc"} {
			if Allows(p, ctx, Access{Kind: trace.AccessWrite, Path: p0}) {
				t.Fatalf("seed %d: %s writable\n%s", seed, p0, dump(t, res))
			}
		}
		// Fixed probes into every store.
		for _, c := range paths.CredentialStores() {
			probe := strings.ReplaceAll(expandOr(c, ctx), "**", "deep/er")
			probe = strings.ReplaceAll(probe, "*", "x") + "/inner"
			if secret(probe) && (Allows(p, ctx, Access{Kind: trace.AccessRead, Path: probe}) || Allows(p, ctx, Access{Kind: trace.AccessWrite, Path: probe})) {
				t.Fatalf("seed %d: %s allowed\n%s", seed, probe, dump(t, res))
			}
		}
	}
}

// TestPropertyIdempotent: on random traces too, resynthesis changes nothing.
func TestPropertyIdempotent(t *testing.T) {
	for seed := 0; seed < 100; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 0x1de))
		tr, _ := randomTrace(r)
		opts := testOpts()
		opts.Exact = r.IntN(2) == 0
		first, err := Synthesize(tr, opts)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Resynthesize(first.Profile, opts)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := string(marshal(t, first.Profile)), string(marshal(t, again.Profile)); a != b {
			t.Fatalf("seed %d: resynthesis changed the profile:\n--- first\n%s\n--- again\n%s", seed, a, b)
		}
	}
}

func dump(t *testing.T, r *Result) string {
	return string(marshal(t, r.Profile)) + string(explainText(r))
}
