package policy

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	goldenfile "github.com/sysprof/sysprof/internal/golden"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/policy")

const goldenDir = "../testdata/policy"

// sampleProfile uses every field of the format.
func sampleProfile() *Profile {
	return &Profile{
		APIVersion: APIVersion,
		Kind:       Kind,
		Metadata: Metadata{
			Name:              "cargo-build",
			Command:           []string{"cargo", "build", "--release"},
			SysprofVersion:    "0.1.0",
			Kernel:            "6.18.0",
			Created:           "2026-11-30T04:00:00Z",
			Updated:           "2026-11-30T05:00:00Z",
			Runs:              3,
			Incomplete:        true,
			IncompleteReasons: []string{"lost 12 events", "interrupted: SIGINT"},
		},
		Syscalls: Syscalls{
			Architectures: []string{"x86_64", "aarch64"},
			Allow: []Syscall{
				{Name: "read", Provenance: Provenance{By: "$CARGO_HOME/bin/cargo", Seen: 3}},
				{Name: "openat", Provenance: Provenance{By: "$CARGO_HOME/bin/cargo", Seen: 3}},
				{Name: "rt_sigreturn", Base: true},
				{Name: "socket", Provenance: Provenance{By: "/usr/bin/git", Seen: 1}},
				{Name: "clone", Provenance: Provenance{By: "$CARGO_HOME/bin/cargo", Seen: 3}},
				{Name: "ioctl", Provenance: Provenance{By: "/usr/bin/cc", Seen: 2}},
			},
			Args: []ArgRule{
				{Syscall: "socket", Arg: 0, Name: "domain", Values: []string{"AF_UNIX", "AF_INET6", "AF_INET"}, Errno: "EAFNOSUPPORT", Provenance: Provenance{By: "/usr/bin/git", Seen: 1}},
				{Syscall: "socket", Arg: 1, Name: "type", Mask: "0xf", Values: []string{"SOCK_STREAM", "SOCK_DGRAM"}},
				{Syscall: "clone", Arg: 0, Name: "flags", Flags: []string{"CLONE_VM", "CLONE_FS", "CLONE_FILES", "CLONE_SIGHAND", "CLONE_THREAD", "CLONE_SYSVSEM", "CLONE_SETTLS", "CLONE_PARENT_SETTID", "CLONE_CHILD_CLEARTID", "SIGCHLD"}},
				{Syscall: "ioctl", Arg: 1, Name: "request", Values: []string{"TCGETS", "TIOCGWINSZ", "FIONBIO", "0x5401"}},
			},
		},
		Filesystem: Filesystem{
			Read: []PathRule{
				{Path: "/usr", Provenance: Provenance{By: "/usr/bin/cc", Seen: 3}, Note: "rolled up from 412 files"},
				{Path: "$WORKDIR", Provenance: Provenance{By: "$CARGO_HOME/bin/cargo", Seen: 3}},
				{Path: "/etc/ld.so.cache", Provenance: Provenance{Seen: 3}},
				{Path: "$HOME/.gitconfig", Note: "note: with \"quotes\", commas, and # hashes"},
			},
			Write: []PathRule{
				{Path: "$WORKDIR/target", Provenance: Provenance{By: "$CARGO_HOME/bin/cargo", Seen: 3}},
				{Path: "$TMPDIR/rustc*", Provenance: Provenance{By: "$RUSTUP_HOME/toolchains/stable/bin/rustc", Seen: 2}},
			},
			Exec: []PathRule{
				{Path: "$CARGO_HOME/bin/cargo", Provenance: Provenance{Seen: 3}},
				{Path: "/usr/bin/cc"},
			},
			Hidden: []PathRule{
				{Path: "$HOME/.ssh", Note: "credential store"},
				{Path: "$HOME/.cargo/credentials*", Note: "credential store"},
			},
			PrivateTmp: true,
		},
		Network: Network{
			Connect: []Endpoint{
				{Endpoint: "registry.example:443", Proto: "tcp", Provenance: Provenance{By: "$CARGO_HOME/bin/cargo", Seen: 2}},
				{Endpoint: "[::1]:8080", Proto: "tcp"},
				{Endpoint: "10.0.0.0/8:9418", Proto: "tcp"},
				{Endpoint: "unix:/run/nscd/socket"},
				{Endpoint: "unix:@/tmp/.X11-unix/X0"},
			},
			Send: []Endpoint{{Endpoint: "127.0.0.53:53", Proto: "udp", Provenance: Provenance{Seen: 3}}},
			Bind: []Endpoint{{Endpoint: "127.0.0.1:0", Proto: "tcp"}},
		},
		Binaries: []Binary{
			{Path: "$CARGO_HOME/bin/cargo", SHA256: strings.Repeat("ab", 32), Provenance: Provenance{Seen: 3}},
			{Path: "/usr/bin/cc", SHA256: strings.Repeat("01", 32), Provenance: Provenance{By: "$CARGO_HOME/bin/cargo", Seen: 2}},
		},
	}
}

// golden checks got against testdata/policy/name (internal/golden: testutil imports policy).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join(goldenDir, name), got, *update)
}

func TestMarshalGolden(t *testing.T) {
	out, err := Marshal(sampleProfile())
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "full.golden.yaml", out)

	out, err = Marshal(&Profile{Metadata: Metadata{Name: "true", Command: []string{"true"}, Runs: 1}})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "minimal.golden.yaml", out)
}

func TestRoundTrip(t *testing.T) {
	for _, p := range []*Profile{sampleProfile(), {Metadata: Metadata{Name: "x"}}} {
		first, err := Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		q, err := Parse("first.yaml", first)
		if err != nil {
			t.Fatalf("parse what Marshal wrote: %v\n%s", err, first)
		}
		second, err := Marshal(q)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, second) {
			t.Errorf("Marshal→Parse→Marshal is not byte-identical:\n%s", cmp.Diff(string(first), string(second)))
		}
		n := Clone(p)
		Normalize(n)
		if n.APIVersion == "" {
			n.APIVersion, n.Kind = APIVersion, Kind
		}
		if d := cmp.Diff(n, q, cmpNilEmpty); d != "" {
			t.Errorf("parsed profile differs from the normalized original (-want +got):\n%s", d)
		}
	}
}

func TestMarshalDoesNotMutate(t *testing.T) {
	p := sampleProfile()
	before := Clone(p)
	if _, err := Marshal(p); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(before, p); d != "" {
		t.Errorf("Marshal changed its input:\n%s", d)
	}
}

func TestMarshalOddStrings(t *testing.T) {
	p := &Profile{Metadata: Metadata{Name: "odd", Command: []string{
		"sh", "-c", "echo 'a: b' # not a comment", "true", "null", "0x10", "1e3", "", "[x]", "{y}", "*alias",
		"&anchor", "!tag", "%dir", "@at", "`tick`", "- dash", "?q", "tab\there", "nl\nhere", "ünïcode", "\x00\x7f",
		"yes", "~", " lead", "trail ", "a,b", "a:b",
	}}}
	out, err := Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	q, err := Parse("odd.yaml", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if d := cmp.Diff(p.Metadata.Command, q.Metadata.Command); d != "" {
		t.Errorf("command did not survive:\n%s\n%s", d, out)
	}
	if _, err := Marshal(&Profile{Metadata: Metadata{Name: "bad\xff"}}); err == nil {
		t.Error("Marshal accepted invalid UTF-8")
	}
}

// cmpNilEmpty treats nil and empty slices as equal: YAML `[]` and an absent list are the same.
var cmpNilEmpty = cmp.FilterValues(func(a, b any) bool {
	return isEmptySlice(a) && isEmptySlice(b)
}, cmp.Comparer(func(a, b any) bool { return true }))

func isEmptySlice(v any) bool {
	switch s := v.(type) {
	case []string:
		return len(s) == 0
	case []Syscall:
		return len(s) == 0
	case []ArgRule:
		return len(s) == 0
	case []PathRule:
		return len(s) == 0
	case []Endpoint:
		return len(s) == 0
	case []Binary:
		return len(s) == 0
	}
	return false
}

func TestParseAcceptsHandWritten(t *testing.T) {
	src := `apiVersion: sysprof.dev/v1
kind: Profile
metadata:
  name: go-vet
  command: [go, vet, ./...]
  runs: 1
syscalls:
  architectures: [x86_64]
  allow:
    - name: read
    - {name: write, seen: 1}
  args:
    - syscall: socket
      arg: 0
      values: [AF_UNIX, 2, "0xa", "SOCK_STREAM|SOCK_CLOEXEC"]
    - syscall: personality
      arg: 0
      values: [PER_LINUX, "PER_LINUX|ADDR_NO_RANDOMIZE", 0xffffffff]
filesystem:
  read:
    - path: /
  hidden:
    - path: $HOME/.ssh
network:
  connect:
    - endpoint: "[2001:db8::/32]:443"
      proto: mptcp
    - endpoint: localhost:8080
      proto: tcp
  bind:
    - endpoint: unix:$TMPDIR/sock
`
	// socket arg 0 with SOCK_* values is wrong: check that the kind check fires.
	_, err := Parse("vet.yaml", []byte(src))
	var le *LoadError
	if !errors.As(err, &le) || le.Field != "syscalls.args[0].values[3]" || le.Line != 15 {
		t.Fatalf("want a kind error at line 15 syscalls.args[0].values[3], got %v", err)
	}
	src = strings.Replace(src, `, "SOCK_STREAM|SOCK_CLOEXEC"`, "", 1)
	p, err := Parse("vet.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Syscalls.Args[0].Values; !cmp.Equal(got, []string{"AF_UNIX", "2", "0xa"}) {
		t.Errorf("values = %q", got)
	}
}

func TestParseErrors(t *testing.T) {
	const head = "apiVersion: sysprof.dev/v1\nkind: Profile\nmetadata:\n  name: t\n"
	tests := []struct {
		name, src, want string
	}{
		{"empty", "", `x.yaml: empty file: want a profile (apiVersion: sysprof.dev/v1, kind: Profile)`},
		{"comment only", "# nothing\n", `x.yaml: empty file: want a profile (apiVersion: sysprof.dev/v1, kind: Profile)`},
		{"not a mapping", "- a\n- b\n", `x.yaml:1: a profile is a mapping (apiVersion: ..., kind: Profile, ...)`},
		{"bad yaml", "apiVersion: [\n", `x.yaml:1: invalid YAML: did not find expected node content`},
		{"tab indent", "apiVersion: x\n\tkind: y\n", `x.yaml:2: invalid YAML: found a tab character that violates indentation`},
		{"two documents", head + "---\nfoo: 1\n", `x.yaml:5: more than one YAML document: a profile file holds exactly one`},
		{"missing apiVersion", "kind: Profile\n", `x.yaml:1: apiVersion: missing; this sysprof reads profiles with apiVersion sysprof.dev/v1`},
		{"newer apiVersion", "apiVersion: sysprof.dev/v2\nkind: Profile\n",
			`x.yaml:1: apiVersion: "sysprof.dev/v2" is not a profile version this sysprof reads (it reads sysprof.dev/v1); a newer sysprof wrote it: upgrade sysprof`},
		{"foreign apiVersion", "apiVersion: v1\nkind: Pod\n", `x.yaml:1: apiVersion: "v1" is not a profile version this sysprof reads (it reads sysprof.dev/v1)`},
		{"wrong kind", "apiVersion: sysprof.dev/v1\nkind: Pod\n", `x.yaml:2: kind: "Pod" is not a profile; want kind: Profile`},
		{"missing metadata", "apiVersion: sysprof.dev/v1\nkind: Profile\n", `x.yaml:1: metadata: missing (required)`},
		{"unknown top field", head + "sycalls: {}\n", `x.yaml:5: sycalls: unknown field (known: apiVersion, kind, metadata, syscalls, filesystem, network, env, credentials, binaries, limits, hostRoot)`},
		{"unknown nested field", head + "  runz: 3\n", `x.yaml:5: metadata.runz: unknown field (known: name, command, sysprofVersion, kernel, learnedOn, created, updated, runs, incomplete, incompleteReasons, exact)`},
		{"wrong type", head + "  runs: three\n", `x.yaml:5: metadata.runs: must be an integer, not a string`},
		{"negative runs", head + "  runs: -1\n", `x.yaml:5: metadata.runs: must be at least 0`},
		{"bad time", head + "  created: yesterday\n", `x.yaml:5: metadata.created: "yesterday" is not an RFC 3339 time (2006-01-02T15:04:05Z)`},
		{"alias", head + "  command: &c [a]\n  kernel: *c\n", `x.yaml:6: metadata.kernel: YAML aliases (*name) are not allowed in profiles: write the value out`},
		{"duplicate key", head + "  name: u\n", `x.yaml:5: metadata.name: duplicate key`},
		{"unknown syscall", head + "syscalls:\n  allow:\n    - {name: read}\n    - {name: write}\n    - {name: close}\n    - {name: opennat}\n",
			`x.yaml:10: syscalls.allow[3].name: "opennat" is not a syscall on any supported architecture (did you mean "openat"?)`},
		{"syscall shape", head + "syscalls:\n  allow:\n    - name: Open\n", `x.yaml:7: syscalls.allow[0].name: "Open" is not a syscall name (lowercase letters, digits and _)`},
		{"missing syscall name", head + "syscalls:\n  allow:\n    - seen: 1\n", `x.yaml:7: syscalls.allow[0].name: missing (required)`},
		{"bad arch", head + "syscalls:\n  architectures: [x86_64, mips]\n", `x.yaml:6: syscalls.architectures[1]: "mips" is not a supported architecture (x86_64, i386, x32, aarch64, arm)`},
		{"arg index", head + "syscalls:\n  args:\n    - syscall: socket\n      arg: 6\n", `x.yaml:8: syscalls.args[0].arg: argument index must be 0..5`},
		{"unknown constant", head + "syscalls:\n  args:\n    - syscall: socket\n      arg: 0\n      values: [AF_INET, AF_BOGUS]\n",
			`x.yaml:9: syscalls.args[0].values[1]: "AF_BOGUS" is not a known constant (see policy.Kinds) or a number`},
		{"wrong constant kind", head + "syscalls:\n  args:\n    - syscall: clone\n      arg: 0\n      flags:\n        - CLONE_VM\n        - AF_INET\n",
			`x.yaml:11: syscalls.args[0].flags[1]: AF_INET is a family constant, but argument 0 of clone takes clone constants`},
		{"bad errno", head + "syscalls:\n  args:\n    - syscall: socket\n      arg: 0\n      errno: EWHATEVER\n",
			`x.yaml:9: syscalls.args[0].errno: "EWHATEVER" is not an errno sysprof knows (EPERM, EACCES, ENOSYS, EAFNOSUPPORT, ...)`},
		{"relative path", head + "filesystem:\n  read:\n    - path: usr/lib\n",
			`x.yaml:7: filesystem.read[0].path: "usr/lib" must be absolute or start with a variable ($WORKDIR $HOME $TMPDIR $CARGO_HOME $RUSTUP_HOME $GOROOT $GOMODCACHE $GOCACHE $NPM_CACHE $GOPATH $GOCONFIG $PNPM_HOME)`},
		{"unknown variable", head + "filesystem:\n  write:\n    - {path: $CACHE/x}\n",
			`x.yaml:7: filesystem.write[0].path: "$CACHE/x" must be absolute or start with a variable ($WORKDIR $HOME $TMPDIR $CARGO_HOME $RUSTUP_HOME $GOROOT $GOMODCACHE $GOCACHE $NPM_CACHE $GOPATH $GOCONFIG $PNPM_HOME)`},
		{"dotdot", head + "filesystem:\n  write:\n    - {path: $WORKDIR/../x}\n",
			`x.yaml:7: filesystem.write[0].path: "$WORKDIR/../x" is not clean: write "x" (no //, ., .. or trailing /)`},
		{"bad glob", head + "filesystem:\n  read:\n    - {path: \"/usr/[a\"}\n", `x.yaml:7: filesystem.read[0].path: "/usr/[a" has a malformed glob in "[a"`},
		{"privateTmp type", head + "filesystem:\n  privateTmp: yes please\n", `x.yaml:6: filesystem.privateTmp: must be a boolean, not a string`},
		{"endpoint shape", head + "network:\n  connect:\n    - {endpoint: example, proto: tcp}\n",
			`x.yaml:7: network.connect[0].endpoint: "example" is not an endpoint: want host:port, CIDR:port, [v6]:port, unix:/path or unix:@name`},
		{"endpoint port", head + "network:\n  connect:\n    - {endpoint: \"host.example:70000\", proto: tcp}\n",
			`x.yaml:7: network.connect[0].endpoint: "host.example:70000": port "70000" is not a number 0..65535`},
		{"cidr host bits", head + "network:\n  connect:\n    - {endpoint: \"10.1.2.3/8:443\", proto: tcp}\n",
			`x.yaml:7: network.connect[0].endpoint: "10.1.2.3/8:443": prefix has host bits set; did you mean 10.0.0.0/8:443?`},
		{"v6 without brackets", head + "network:\n  connect:\n    - {endpoint: \"::1:80\", proto: tcp}\n",
			`x.yaml:7: network.connect[0].endpoint: "::1:80" is not an endpoint: want host:port, CIDR:port, [v6]:port, unix:/path or unix:@name`},
		{"bad v6", head + "network:\n  connect:\n    - {endpoint: \"[1.2.3.4]:80\", proto: tcp}\n",
			`x.yaml:7: network.connect[0].endpoint: "[1.2.3.4]:80": "1.2.3.4" is not an IPv6 address or prefix`},
		{"broken ip", head + "network:\n  connect:\n    - {endpoint: \"1.2.3:80\", proto: tcp}\n",
			`x.yaml:7: network.connect[0].endpoint: "1.2.3:80": "1.2.3" is not a host name, IPv4 address or CIDR`},
		{"connect port 0", head + "network:\n  connect:\n    - {endpoint: \"127.0.0.1:0\", proto: tcp}\n",
			`x.yaml:7: network.connect[0].endpoint: "127.0.0.1:0": port 0 only means "any ephemeral port" in bind rules`},
		{"missing proto", head + "network:\n  connect:\n    - {endpoint: \"host.example:443\"}\n",
			`x.yaml:7: network.connect[0].proto: want tcp, udp or mptcp for "host.example:443" (got "")`},
		{"unix with proto", head + "network:\n  connect:\n    - {endpoint: \"unix:/run/x.sock\", proto: tcp}\n",
			`x.yaml:7: network.connect[0].proto: unix socket endpoints take no proto (got "tcp")`},
		{"bad proto", head + "network:\n  send:\n    - {endpoint: \"h.example:53\", proto: sctp}\n",
			`x.yaml:7: network.send[0].proto: "sctp" is not a supported protocol (tcp, udp, mptcp)`},
		{"env pass name", head + "env:\n  pass:\n    - GITHUB_TOKEN\n    - 9LIVES\n", `x.yaml:8: env.pass[1]: "9LIVES" does not match pattern "^[A-Za-z_][A-Za-z0-9_]*$"`},
		{"env unknown field", head + "env:\n  keep: [A]\n", `x.yaml:6: env.keep: unknown field (known: pass)`},
		{"bad sha", head + "binaries:\n  - {path: /usr/bin/cc, sha256: ABC}\n", `x.yaml:6: binaries[0].sha256: "ABC" is not a sha256 (64 lowercase hex digits)`},
		{"custom tag", head + "  kernel: !secret x\n", `x.yaml:5: metadata.kernel: unsupported YAML tag !secret`},
		{"merge key", head + "  <<: {a: 1}\n", `x.yaml:5: metadata: mapping keys must be plain names (no merge keys or complex keys)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tt.src))
			if err == nil {
				t.Fatalf("no error for:\n%s", tt.src)
			}
			var le *LoadError
			if !errors.As(err, &le) {
				t.Errorf("error is %T, want *LoadError", err)
			}
			if err.Error() != tt.want {
				t.Errorf("got  %s\nwant %s", err, tt.want)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file: %v, want ErrNotExist", err)
	}
}

func TestSchemaIsValidJSONSchema(t *testing.T) {
	if _, err := compiledSchema(); err != nil {
		t.Fatal(err)
	}
}
