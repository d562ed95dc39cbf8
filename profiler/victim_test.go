package profiler_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/profiler"
	"github.com/sysprof/sysprof/trace"
)

// TestVictim runs the scripted victim once and checks that every action shows up with the right
// executable and kind, and that what it did not do is absent.
func TestVictim(t *testing.T) {
	testutil.RequireRoot(t)
	victim := realPath(t, testutil.BuildC(t, "victim/victim.c"))
	trueBin := realPath(t, "/bin/true")
	falseBin := realPath(t, "/bin/false")

	dir := realPath(t, t.TempDir())
	writeFile(t, filepath.Join(dir, "rel.txt"), "rel")
	writeFile(t, filepath.Join(dir, "target.txt"), "target")
	os.Symlink("target.txt", filepath.Join(dir, "link"))
	os.Symlink("d", filepath.Join(dir, "dlink"))
	os.Mkdir(filepath.Join(dir, "d"), 0o755)
	writeFile(t, filepath.Join(dir, "d", "inner.txt"), "inner")
	writeFile(t, filepath.Join(dir, "never.txt"), "the victim never opens this")
	writeFile(t, filepath.Join(dir, "script.sh"), "#!/bin/sh\nexit 0\n")
	os.Chmod(filepath.Join(dir, "script.sh"), 0o755)
	shBin := realPath(t, "/bin/sh")
	sock := filepath.Join(dir, "s.sock")
	testutil.Listen(t, "unix", sock)
	abstract := fmt.Sprintf("@sysprof-victim-%d", os.Getpid())
	testutil.Listen(t, "unix", abstract)

	tport := testutil.LoopbackTCP(t)
	t6port := testutil.Port(testutil.Listen(t, "tcp6", "[::1]:0"))
	uport := testutil.LoopbackUDP(t)
	const dnsAddr = "127.0.83.53"
	dnsResponder(t, dnsAddr, [4]byte{127, 0, 0, 1})
	tp, up := strconv.Itoa(tport), strconv.Itoa(uport)

	args := []string{victim,
		"open-rel", "rel.txt",
		"open-dirfd", "d", "inner.txt",
		"open-symlink", "link",
		"open-missing", "missing.txt",
		"write", "out.txt",
		"stat-missing", "nothere",
		"stat-missing", "dlink/nothere2",
		"unix-bind", filepath.Join(dir, "bound.sock"),
		"mkdir", "newdir",
		"rename", "out.txt", "out2.txt",
		"unlink", "out2.txt",
		"exec", "/bin/true",
		"exec", "./script.sh",
		"exec-missing", "/nonexistent/prog",
		"thread",
		"vfork", "/bin/false",
		"clone3",
		"udp-send", "127.0.0.1", up,
		"tcp-connect", "127.0.0.1", tp,
		"tcp-connect6", "::1", strconv.Itoa(t6port),
		"dns-query", dnsAddr, "53", "victim.test", tp,
		"unix-connect", sock,
		"unix-connect", abstract,
		"int80", "getpid",
		"x32",
		"socket", "2", strconv.Itoa(unix.SOCK_DGRAM | unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC), "17",
		"prctl", "3",
		"mprotect-exec",
		"storm", "1000",
	}
	tr := learn(t, withTimeout(t, time.Minute), profiler.Options{Command: args, Dir: dir})

	if tr.ExitCode != 0 || tr.Incomplete || tr.Loss.Any() {
		t.Errorf("exit %d, incomplete %v %q, loss %+v; want a clean run", tr.ExitCode, tr.Incomplete, tr.Reasons, tr.Loss)
	}

	// Process tree.
	if len(tr.Processes) == 0 || tr.Processes[0].Exe != victim || tr.Processes[0].Parent != 0 || tr.Processes[0].Argv0 != victim {
		t.Fatalf("root process = %+v, want the victim %s", tr.Processes[:min(1, len(tr.Processes))], victim)
	}
	root := tr.Processes[0]
	if root.SHA256 == "" || root.ExitCode == nil || *root.ExitCode != 0 {
		t.Errorf("root process: sha256 %q exit %v", root.SHA256, root.ExitCode)
	}
	for _, want := range []struct {
		exe  string
		exit int
	}{{trueBin, 0}, {falseBin, 1}} {
		ps := processesOf(tr, want.exe)
		if len(ps) != 1 || ps[0].Parent != root.ID || ps[0].ExecOf || ps[0].ExitCode == nil || *ps[0].ExitCode != want.exit {
			t.Errorf("processes of %s = %+v; want one child of the victim (id %d) exiting %d", want.exe, ps, root.ID, want.exit)
		}
	}
	if got := exes(tr); len(got) != 4 || !slices.Contains(got, shBin) {
		t.Errorf("executables = %q, want the victim, true, false and %s (the script's interpreter) only", got, shBin)
	}
	if findFile(tr, shBin, filepath.Join(dir, "script.sh"), trace.AccessExec, true) == nil {
		t.Errorf("the script executed through a relative name is not recorded; %s has:\n%q", shBin, filesOf(tr, shBin))
	}

	// Files.
	j := func(p string) string { return filepath.Join(dir, p) }
	for _, w := range []struct {
		path, access string
		ok           bool
	}{
		{j("rel.txt"), trace.AccessRead, true},
		{j("d"), trace.AccessList, true},
		{j("d/inner.txt"), trace.AccessRead, true},
		{j("target.txt"), trace.AccessRead, true}, // through the symlink, resolved by the kernel
		{j("missing.txt"), trace.AccessRead, false},
		{j("out.txt"), trace.AccessCreate, true},
		{j("nothere"), trace.AccessMetadata, false},
		{j("d/nothere2"), trace.AccessMetadata, false}, // the symlinked directory resolved
		{j("bound.sock"), trace.AccessCreate, true},    // bind of a unix socket
		{j("newdir"), trace.AccessCreate, true},
		{j("out.txt"), trace.AccessDelete, true},  // rename source
		{j("out2.txt"), trace.AccessCreate, true}, // rename target
		{j("out2.txt"), trace.AccessDelete, true}, // unlink
		{"/nonexistent/prog", trace.AccessExec, false},
		{victim, trace.AccessExec, true},
	} {
		if findFile(tr, victim, w.path, w.access, w.ok) == nil {
			t.Errorf("missing file access %s %s ok=%v by the victim; it has:\n%q", w.access, w.path, w.ok, filesOf(tr, victim))
		}
	}
	// A directory made and never touched again is still the directory's own rule in synth.
	if f := findFile(tr, victim, j("newdir"), trace.AccessCreate, true); f != nil && !f.Dir {
		t.Errorf("mkdir's create of %s is not marked a directory: %+v", j("newdir"), *f)
	}
	if f := findFile(tr, victim, j("missing.txt"), trace.AccessRead, false); f != nil && f.Errno != int(unix.ENOENT) {
		t.Errorf("failed open errno = %d, want ENOENT", f.Errno)
	}
	if findFile(tr, victim, j("missing.txt"), trace.AccessRead, true) != nil {
		t.Errorf("the failed open is also recorded as a success")
	}
	if findFile(tr, trueBin, trueBin, trace.AccessExec, true) == nil {
		t.Errorf("no exec of %s", trueBin)
	}
	for _, f := range tr.Files {
		if f.Path == j("never.txt") || f.Path == j("link") && f.Access == trace.AccessRead {
			t.Errorf("recorded %+v, which the victim never did", f)
		}
	}

	// Syscalls, per arch.
	for _, w := range []struct {
		arch, name string
		min        uint64
	}{
		{trace.ArchX86_64, "getppid", 1000},
		{trace.ArchX86_64, "clock_getres", 1}, // the thread
		{trace.ArchX86_64, "getpgid", 1},      // the clone3 child, before it exits
		{trace.ArchX86_64, "clone3", 1},
		{trace.ArchX86_64, "vfork", 1},
		{trace.ArchX86_64, "execve", 1},
		{trace.ArchI386, "getpid", 1},
		{trace.ArchX32, "getpid", 1},
	} {
		if got := syscallCount(tr, victim, w.arch, w.name); got < w.min {
			t.Errorf("%s %s by the victim: count %d, want >= %d", w.arch, w.name, got, w.min)
		}
	}
	for _, s := range tr.Syscalls {
		if s.Arch == trace.ArchI386 && s.Name != "getpid" {
			t.Errorf("i386 syscall %+v: the victim made only getpid through int 0x80", s)
		}
	}
	// The gate: the launcher runs the test binary between fork and exec (dup3, rt_sigaction);
	// none of it may show up, neither under its own name nor the victim's.
	self, _ := os.Executable()
	for _, s := range tr.Syscalls {
		if s.Exe == realPath(t, self) || s.Exe != victim && s.Exe != trueBin && s.Exe != falseBin && s.Exe != shBin {
			t.Errorf("syscall %+v attributed to an executable outside the run", s)
		}
	}
	if n := syscallCount(tr, victim, trace.ArchX86_64, "dup3"); n != 0 {
		t.Errorf("dup3 counted %d times for the victim: the launcher's pre-exec work leaked through the gate", n)
	}

	// Argument domains.
	sockets := argValues(tr, victim, "socket")
	wantSock := map[string]uint64{"domain": unix.AF_INET, "type": unix.SOCK_DGRAM, "protocol": unix.IPPROTO_UDP}
	if !slices.ContainsFunc(sockets, func(a trace.ArgValue) bool { return fmt.Sprint(a.Fields) == fmt.Sprint(wantSock) }) {
		t.Errorf("socket args = %+v, want one with %v (flags masked off)", sockets, wantSock)
	}
	checkArg := func(kind string, want uint64) {
		t.Helper()
		if !slices.ContainsFunc(argValues(tr, victim, kind), func(a trace.ArgValue) bool { return a.Value == want }) {
			t.Errorf("%s args = %+v, want %#x", kind, argValues(tr, victim, kind), want)
		}
	}
	checkArg("clone3_flags", unix.CLONE_PARENT_SETTID)
	checkArg("prctl_option", 3)
	checkArg("mprotect_prot", unix.PROT_READ|unix.PROT_EXEC)
	if len(argValues(tr, victim, "clone_flags")) == 0 {
		t.Errorf("no clone flags: glibc's fork for `exec` uses clone")
	}
	for _, kind := range []string{"unshare_flags", "setns_nstype", "personality"} {
		if a := argValues(tr, victim, kind); len(a) != 0 {
			t.Errorf("%s recorded %+v; the victim never called it", kind, a)
		}
	}

	// Network.
	hasNet := func(w trace.NetworkAccess) bool {
		return slices.ContainsFunc(tr.Network, func(n trace.NetworkAccess) bool {
			return n.Exe == victim && n.Op == w.Op && n.Family == w.Family && n.Proto == w.Proto &&
				n.Addr == w.Addr && n.Port == w.Port && n.Path == w.Path && n.Host == w.Host
		})
	}
	for _, w := range []trace.NetworkAccess{
		{Op: trace.OpConnect, Family: "inet", Proto: "tcp", Addr: "127.0.0.1", Port: tport, Host: "victim.test"},
		{Op: trace.OpSend, Family: "inet", Proto: "udp", Addr: "127.0.0.1", Port: uport, Host: "victim.test"},
		{Op: trace.OpSend, Family: "inet", Proto: "udp", Addr: dnsAddr, Port: 53},
		{Op: trace.OpConnect, Family: "inet6", Proto: "tcp", Addr: "::1", Port: t6port},
		{Op: trace.OpConnect, Family: "unix", Proto: "stream", Path: sock},
		{Op: trace.OpConnect, Family: "unix", Proto: "stream", Path: abstract},
		{Op: trace.OpBind, Family: "unix", Proto: "dgram", Path: filepath.Join(dir, "bound.sock")},
	} {
		if !hasNet(w) {
			t.Errorf("missing network access %+v; have %+v", w, tr.Network)
		}
	}
	if len(tr.DNS) != 1 || tr.DNS[0].Name != "victim.test" || !slices.Equal(tr.DNS[0].Addrs, []string{"127.0.0.1"}) || tr.DNS[0].Server != dnsAddr+":53" {
		t.Errorf("DNS = %+v, want victim.test -> 127.0.0.1 via %s:53", tr.DNS, dnsAddr)
	}
	for _, n := range tr.Network {
		if n.Op == trace.OpBind && n.Family != "unix" {
			t.Errorf("bind %+v: the victim never binds an inet socket", n)
		}
	}
}
