package export

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"golang.org/x/net/bpf"
)

// bwrapHost is a small tree for running bubblewrap against: a read-only source tree with a
// writable out/ and a .env, and a home with credentials. Its root has a space and a quote in
// its name so the shell form's quoting is exercised.
type bwrapHost struct {
	root, home, work string
	env              Env
}

func newBwrapHost(t *testing.T) bwrapHost {
	t.Helper()
	root := filepath.Join(t.TempDir(), "it's a host")
	h := bwrapHost{root: root, home: filepath.Join(root, "home"), work: filepath.Join(root, "work")}
	for _, d := range []string{h.work + "/out", h.home + "/.ssh", h.work + "/sub/deeper"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for path, data := range map[string]string{
		h.work + "/src.txt":         "source\n",
		h.work + "/.env":            "TOKEN=TOPSECRET-ENV\n",
		h.work + "/sub/deeper/.env": "TOKEN=TOPSECRET-DEEP\n",
		h.home + "/.netrc":          "machine x password TOPSECRET-NETRC\n",
		h.home + "/.ssh/id_ed":      "TOPSECRET-KEY\n",
	} {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h.env = Env{"HOME": h.home, "WORKDIR": h.work}
	return h
}

func (h bwrapHost) profile(script string) *policy.Profile {
	return &policy.Profile{
		Metadata: policy.Metadata{Name: "bwrap-test", Command: []string{"sh", "-c", script}},
		Filesystem: policy.Filesystem{
			Read:   []policy.PathRule{{Path: "$WORKDIR"}, {Path: "/usr"}},
			Write:  []policy.PathRule{{Path: "$WORKDIR/out"}, {Path: "$WORKDIR/out/not-there"}},
			Hidden: []policy.PathRule{{Path: "$HOME/.netrc"}, {Path: "$HOME/.ssh"}, {Path: "$WORKDIR/.env"}, {Path: "$WORKDIR/**/.env"}, {Path: "$HOME/.aws"}},
		},
	}
}

// runBwrap runs bubblewrap with the exported arguments and returns its combined output.
func runBwrap(t *testing.T, p *policy.Profile, opts Options) (string, error) {
	t.Helper()
	args, _, err := BwrapArgs(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bwrap", args...)
	if opts.SeccompFDPath != "" {
		f, err := os.Open(opts.SeccompFDPath)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.ExtraFiles = []*os.File{f} // fd 3
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func requireBwrap(t *testing.T) {
	t.Helper()
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "bwrap")
	// bwrap needs namespaces; a host that refuses them is a missing capability, not a pass.
	out, err := exec.Command("bwrap", "--ro-bind", "/", "/", "--unshare-all", "true").CombinedOutput()
	testutil.RequireNoErr(t, "bwrap namespaces", wrapOut(err, out))
}

func wrapOut(err error, out []byte) error {
	if err != nil {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

func TestBwrapFilesystem(t *testing.T) {
	requireBwrap(t)
	h := newBwrapHost(t)
	for _, tc := range []struct {
		name, script string
		ok           bool
		notIn        string // output must not contain it
		in           string // output must contain it: the failure is the sandbox's doing
	}{
		{name: "write to the read-only source tree fails", script: `echo x > src.txt`, in: "Read-only file system"},
		{name: "create in the read-only source tree fails", script: `touch new-file`, in: "Read-only file system"},
		{name: "write to a writable dir works", script: `echo hello > out/f && cat out/f`, ok: true},
		{name: "a hidden file is empty", script: `cat "$HOME/.netrc" .env; true`, ok: true, notIn: "TOPSECRET"},
		{name: "a ** hidden file deeper down is empty", script: `cat sub/deeper/.env; true`, ok: true, notIn: "TOPSECRET"},
		{name: "a hidden dir is empty", script: `ls -A "$HOME/.ssh"; cat "$HOME/.ssh/id_ed"`, notIn: "TOPSECRET", in: "No such file"},
		{name: "a hidden dir is read-only", script: `touch "$HOME/.ssh/planted"`, in: "Read-only file system"},
		{name: "the source tree is readable", script: `cat src.txt`, ok: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// $HOME is the test's home, not the host's: the host's may not even exist.
			script := strings.ReplaceAll(tc.script, "$HOME", h.home)
			out, err := runBwrap(t, h.profile(script), Options{Env: h.env})
			if (err == nil) != tc.ok {
				t.Errorf("%s: err=%v, want success=%v; output:\n%s", tc.script, err, tc.ok, out)
			}
			if !strings.Contains(out, tc.in) {
				t.Errorf("%s: output lacks %q:\n%s", tc.script, tc.in, out)
			}
			if tc.notIn != "" && strings.Contains(out, tc.notIn) {
				t.Errorf("%s: output shows %q:\n%s", tc.script, tc.notIn, out)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(h.work, "out", "f")); err != nil || string(b) != "hello\n" {
		t.Errorf("the write inside the sandbox did not reach the host: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(h.home, ".ssh", "planted")); err == nil {
		t.Error("a file planted in a hidden dir reached the host")
	}
}

func TestBwrapPrivateTmp(t *testing.T) {
	requireBwrap(t)
	h := newBwrapHost(t)
	marker, err := os.CreateTemp("/tmp", "sysprof-export-marker-")
	if err != nil {
		t.Fatal(err)
	}
	marker.Close()
	defer os.Remove(marker.Name())
	p := h.profile(fmt.Sprintf(`test ! -e %s && cat src.txt && echo y > out/g && echo t > /tmp/scratch`, shellQuote(marker.Name())))
	p.Filesystem.PrivateTmp = true
	if out, err := runBwrap(t, p, Options{Env: h.env}); err != nil {
		t.Fatalf("private /tmp: %v\n%s", err, out)
	}
	if _, err := os.Stat("/tmp/scratch"); err == nil {
		t.Error("a file written to the private /tmp reached the host's /tmp")
	}
}

func TestBwrapNetwork(t *testing.T) {
	requireBwrap(t)
	testutil.RequireTool(t, "ip")
	testutil.RequireTool(t, "bash")
	h := newBwrapHost(t)
	port := testutil.LoopbackTCP(t)
	connect := fmt.Sprintf(`exec bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d'`, port)

	// No endpoints: a private network namespace with nothing but a loopback.
	out, err := runBwrap(t, h.profile(`ip -o link`), Options{Env: h.env})
	if err != nil {
		t.Fatalf("ip link: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.Contains(line, ": lo:") {
			t.Errorf("a profile without network sees an interface other than lo: %s", line)
		}
	}
	if out, err := runBwrap(t, h.profile(connect), Options{Env: h.env}); err == nil || !strings.Contains(out, "refused") {
		t.Errorf("a profile without network: connect to the host's loopback listener gave %v, want connection refused:\n%s", err, out)
	}

	// With an endpoint the network is shared, and the same connect works: the check above is
	// not vacuous.
	p := h.profile(connect)
	p.Network.Connect = []policy.Endpoint{{Endpoint: fmt.Sprintf("127.0.0.1:%d", port), Proto: "tcp"}}
	if out, err := runBwrap(t, p, Options{Env: h.env}); err != nil {
		t.Errorf("a profile with a loopback endpoint could not connect: %v\n%s", err, out)
	}
}

// denyMkdirFilter compiles a small real filter (allow all but mkdir/mkdirat → EPERM) to the raw
// struct sock_filter array bwrap reads, the way the enforcer's compiler will.
func denyMkdirFilter(*policy.Profile) ([]byte, error) {
	pol := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls:      []seccomp.SyscallGroup{{Action: seccomp.ActionErrno, Names: []string{"mkdir", "mkdirat"}}},
	}
	insts, err := pol.Assemble()
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	for _, r := range raw {
		if err := binary.Write(&buf, binary.NativeEndian, struct {
			Op     uint16
			Jt, Jf uint8
			K      uint32
		}{r.Op, r.Jt, r.Jf, r.K}); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

func TestBwrapSeccomp(t *testing.T) {
	requireBwrap(t)
	h := newBwrapHost(t)
	p := h.profile(`mkdir out/d`)
	filter, err := denyMkdirFilter(p)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(h.root, "filter.bpf")
	if err := os.WriteFile(path, filter, 0o644); err != nil {
		t.Fatal(err)
	}
	opts := Options{Env: h.env, SeccompFDPath: path}

	out, err := runBwrap(t, p, opts)
	if err == nil || !strings.Contains(out, "Operation not permitted") {
		t.Errorf("mkdir under the exported filter: err=%v, want EPERM; output:\n%s", err, out)
	}
	// The rendered script: quoting of a path with a space and a quote, and the 3<FILE redirect.
	var script bytes.Buffer
	if err := Write(&script, p, "bwrap", opts); err != nil {
		t.Fatal(err)
	}
	sh := filepath.Join(h.root, "run.sh")
	if err := os.WriteFile(sh, script.Bytes(), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := exec.Command("sh", sh).CombinedOutput()
	if err == nil || !strings.Contains(string(b), "Operation not permitted") {
		t.Errorf("the bwrap script: err=%v, want mkdir to fail with EPERM; output:\n%s\nscript:\n%s", err, b, script.String())
	}
	// Control: without the filter the same mkdir works.
	if out, err := runBwrap(t, p, Options{Env: h.env}); err != nil {
		t.Errorf("mkdir without a filter failed: %v\n%s", err, out)
	}
}

// A writable work tree keeps its existing protected paths read-only under bwrap, as under
// enforce; a rule naming one makes it writable; a missing one is noted (bwrap cannot stage).
func TestBwrapProtectedPathsInWritableTree(t *testing.T) {
	requireBwrap(t)
	h := newBwrapHost(t)
	if err := os.MkdirAll(filepath.Join(h.work, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := h.profile(`echo ok > notes.txt && echo evil > .git/hooks/pre-commit`)
	p.Filesystem.Write = []policy.PathRule{{Path: "$WORKDIR"}}
	out, err := runBwrap(t, p, Options{Env: h.env})
	if err == nil || !strings.Contains(out, "Read-only file system") {
		t.Errorf("a hook write in a writable work tree: err %v, want EROFS:\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(h.work, "notes.txt")); string(b) != "ok\n" {
		t.Errorf("the control write did not land: %q", b)
	}
	if _, err := os.Stat(filepath.Join(h.work, ".git", "hooks", "pre-commit")); err == nil {
		t.Error("a hook was planted")
	}
	_, notes, err := BwrapArgs(p, Options{Env: h.env})
	if err != nil || !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "$WORKDIR/.github") }) {
		t.Errorf("notes %q: want the missing protected paths named", notes)
	}
	p.Filesystem.Write = append(p.Filesystem.Write, policy.PathRule{Path: "$WORKDIR/.git/hooks"})
	if out, err := runBwrap(t, p, Options{Env: h.env}); err != nil {
		t.Errorf("a named protected path must stay writable: %v\n%s", err, out)
	}
}

// A build in a fresh tree writes files that did not exist at export time (main.o, the
// binary): the script makes their directory writable (with a note), and runs from any
// directory with its arguments passed through, on another copy of the tree.
func TestBwrapScriptFreshTree(t *testing.T) {
	requireBwrap(t)
	h := newBwrapHost(t)
	p := h.profile(`echo built > main.o`)
	p.Filesystem.Write = []policy.PathRule{{Path: "$WORKDIR/main.o"}}
	var script bytes.Buffer
	if err := Write(&script, p, "bwrap", Options{Env: h.env}); err != nil {
		t.Fatal(err)
	}
	notes, err := Notes(p, "bwrap", Options{Env: h.env})
	if err != nil || !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "$WORKDIR/main.o: does not exist yet") }) {
		t.Errorf("notes %q: want the widened write named", notes)
	}
	sh := filepath.Join(h.root, "run.sh")
	if err := os.WriteFile(sh, script.Bytes(), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", sh)
	cmd.Dir = "/"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the script from /: %v\n%s\n%s", err, out, script.String())
	}
	if b, _ := os.ReadFile(filepath.Join(h.work, "main.o")); string(b) != "built\n" {
		t.Errorf("main.o = %q, want the build's output", b)
	}
	// Arguments are the command; SYSPROF_WORKDIR points the script at another copy.
	other := filepath.Join(h.root, "copy")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command("sh", sh, "sh", "-c", `echo "$0 $1" > main.o`, "a b", "c")
	cmd.Env = append(os.Environ(), "SYSPROF_WORKDIR="+other)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the script with arguments: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(other, "main.o")); string(b) != "a b c\n" {
		t.Errorf("copy/main.o = %q, want the arguments passed through", b)
	}
}

// A learned pty (openpty: /dev/ptmx and /dev/pts) works under bwrap: its own --dev has a
// devpts of its own, which the host's /dev/ptmx bound over it would break.
func TestBwrapPty(t *testing.T) {
	requireBwrap(t)
	py := testutil.RequireTool(t, "python3")
	h := newBwrapHost(t)
	p := h.profile("")
	p.Metadata.Command = []string{py, "-c", "import os; m, s = os.openpty(); print(os.ttyname(s))"}
	p.Filesystem.Write = []policy.PathRule{{Path: "/dev/ptmx"}, {Path: "/dev/pts"}}
	out, err := runBwrap(t, p, Options{Env: h.env})
	if err != nil || !strings.Contains(out, "/dev/pts/") {
		t.Errorf("openpty under bwrap: %v\n%s", err, out)
	}
}

// A missing write path widens only to the work tree, below $TMPDIR, or two levels below $HOME.
func TestBwrapWidenable(t *testing.T) {
	env := Env{"WORKDIR": "/src/app", "HOME": "/home/dev", "TMPDIR": "/tmp/x"}
	for dir, want := range map[string]bool{
		"/src/app": true, "/src/app/build": true, "/home/dev/.cache/go": true, "/tmp/x/a": true,
		"/": false, "/etc": false, "/usr/lib": false, "/home/dev": false, "/home/dev/.cargo": false, "/home": false, "/tmp/x": false, "/src": false,
	} {
		if got := widenable(dir, env); got != want {
			t.Errorf("widenable(%s) = %v, want %v", dir, got, want)
		}
	}
}
