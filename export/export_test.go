package export

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/seccomp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/export")

// loadFixture reads a profile from testdata/export strictly (unknown fields are errors). It
// decodes with yaml.v3 rather than policy.Load because the loader's schema does not accept
// ArgRule.Deny yet.
func loadFixture(t *testing.T, name string) *policy.Profile {
	t.Helper()
	b, err := os.ReadFile(testutil.Testdata("export", name))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var p policy.Profile
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	policy.Normalize(&p)
	return &p
}

// fakeHost builds a small home and work tree under a temp dir, the way a developer machine
// looks, and returns its root and the Env for it. Golden output replaces the root with /host.
// The root is under /var/tmp: a work tree under /tmp would add a re-bind for the private /tmp.
func fakeHost(t *testing.T) (string, Env) {
	t.Helper()
	root, err := os.MkdirTemp("/var/tmp", "sysprof-export-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	env := Env{
		"HOME":        root + "/home/dev",
		"WORKDIR":     root + "/home/dev/src/hello",
		"TMPDIR":      root + "/tmp",
		"CARGO_HOME":  root + "/home/dev/.cargo",
		"RUSTUP_HOME": root + "/home/dev/.rustup",
	}
	for _, d := range []string{
		"home/dev/src/hello/target", "home/dev/.cargo/registry", "home/dev/.cargo/bin",
		"home/dev/.ssh", "home/dev/.gnupg", "home/dev/.rustup/toolchains", "tmp/rustc1a2b3c",
	} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"home/dev/.cargo/credentials.toml", "home/dev/.git-credentials", "home/dev/.ssh/id_ed25519", "home/dev/src/hello/.env"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("secret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root, env
}

func goldenOptions(env Env) Options {
	return Options{Env: env, Arch: "x86_64", SeccompFDPath: "/host/home/dev/.sysprof/cargo-build.bpf"}
}

var goldenExt = map[string]string{"oci": "json", "spo": "yaml", "systemd": "conf", "bwrap": "sh", "bpf": "bpf"}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	testutil.Golden(t, testutil.Testdata("export", name), got, *update)
}

func TestGolden(t *testing.T) {
	p := loadFixture(t, "cargo-build.yaml")
	root, env := fakeHost(t)
	opts := goldenOptions(env)
	var notes bytes.Buffer
	for _, format := range Formats() {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, p, format, opts); err != nil {
				t.Fatal(err)
			}
			got := []byte(strings.ReplaceAll(buf.String(), root, "/host"))
			checkGolden(t, "cargo-build."+format+".golden."+goldenExt[format], got)
			n, err := Notes(p, format, opts)
			if err != nil {
				t.Fatal(err)
			}
			notes.WriteString("== " + format + "\n")
			for _, l := range n {
				notes.WriteString(strings.ReplaceAll(l, root, "/host") + "\n")
			}
		})
	}
	checkGolden(t, "cargo-build.notes.golden.txt", notes.Bytes())
}

func TestDeterministicAndPure(t *testing.T) {
	p := loadFixture(t, "cargo-build.yaml")
	before := loadFixture(t, "cargo-build.yaml")
	_, env := fakeHost(t)
	opts := goldenOptions(env)
	for _, format := range Formats() {
		var a, b bytes.Buffer
		if err := Write(&a, p, format, opts); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if err := Write(&b, p, format, opts); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s: two exports of one profile differ", format)
		}
	}
	if d := cmp.Diff(before, p); d != "" {
		t.Errorf("export changed the profile (-before +after):\n%s", d)
	}
}

func TestUnknownFormat(t *testing.T) {
	p := loadFixture(t, "cargo-build.yaml")
	err := Write(&bytes.Buffer{}, p, "docker", Options{})
	if err == nil || !strings.Contains(err.Error(), "oci") {
		t.Fatalf("unknown format: got %v, want an error listing the formats", err)
	}
}

// The bpf format is the program sysprof enforce loads (notify answered with EPERM), with
// bwrap's runtime set: run in the interpreter, it allows what the profile allows, refuses the
// rest with EPERM, and keeps the hardening.
func TestBPF(t *testing.T) {
	p := loadFixture(t, "cargo-build.yaml")
	var buf bytes.Buffer
	if err := Write(&buf, p, "bpf", Options{Arch: "x86_64"}); err != nil {
		t.Fatal(err)
	}
	raw, err := seccomp.Decode(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	vm, err := seccomp.NewVM(raw)
	if err != nil {
		t.Fatal(err)
	}
	nr := func(n string) uint32 { return uint32(arch.X86_64.SyscallNames[n]) }
	eperm := seccomp.RetErrno(unix.EPERM)
	for _, tc := range []struct {
		call string
		args [6]uint64
		want uint32
	}{
		{"read", [6]uint64{}, seccomp.RetAllow},
		{"wait4", [6]uint64{}, seccomp.RetAllow},
		{"ptrace", [6]uint64{}, eperm},
		{"ioctl", [6]uint64{0, unix.TIOCSTI}, eperm},
		{"ioctl", [6]uint64{0, 1<<32 | unix.TIOCSTI}, eperm},
		{"clone", [6]uint64{unix.CLONE_NEWUSER}, eperm},
		{"socket", [6]uint64{unix.AF_INET, unix.SOCK_STREAM, seccomp.IPProtoMPTCP}, eperm},
	} {
		got, err := vm.Run(uint32(arch.X86_64.ID), nr(tc.call), tc.args)
		if err != nil || got != tc.want {
			t.Errorf("%s%x = %s (%v), want %s", tc.call, tc.args, seccomp.ActionName(got), err, seccomp.ActionName(tc.want))
		}
	}
}

func TestExpand(t *testing.T) {
	env := Env{"HOME": "/home/dev", "WORKDIR": "/src/app/"}
	for _, tc := range []struct {
		in, want string
		err      bool
	}{
		{in: "$HOME/.ssh", want: "/home/dev/.ssh"},
		{in: "${HOME}/.ssh", want: "/home/dev/.ssh"},
		{in: "$WORKDIR/target", want: "/src/app/target"},
		{in: "$WORKDIR", want: "/src/app"},
		{in: "/usr/lib", want: "/usr/lib"},
		{in: "$CARGO_HOME/bin", err: true},
		{in: "relative/path", err: true},
	} {
		got, err := env.Expand(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("Expand(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestHiddenPathNeedsItsVariable(t *testing.T) {
	p := loadFixture(t, "cargo-build.yaml")
	_, env := fakeHost(t)
	delete(env, "CARGO_HOME")
	for _, format := range []string{"bwrap", "systemd"} {
		err := Write(&bytes.Buffer{}, p, format, Options{Env: env})
		if err == nil || !strings.Contains(err.Error(), "$CARGO_HOME") {
			t.Errorf("%s: a hidden path with an unset variable gave %v, want an error naming $CARGO_HOME", format, err)
		}
	}
}

func TestDNSLabel(t *testing.T) {
	for in, want := range map[string]string{
		"cargo-build":                  "cargo-build",
		"Cargo Build!!":                "cargo-build",
		"go_test ./...":                "go-test",
		"--npm--":                      "npm",
		"":                             "sysprof",
		"Ünïcode":                      "n-code",
		strings.Repeat("a", 70):        strings.Repeat("a", 63),
		strings.Repeat("a", 62) + ".b": strings.Repeat("a", 62),
	} {
		if got := dnsLabel(in); got != want {
			t.Errorf("dnsLabel(%q) = %q, want %q", in, got, want)
		}
	}
}
