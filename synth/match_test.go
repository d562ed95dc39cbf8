package synth

import (
	"testing"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/trace"
)

type policyPathRule = policy.PathRule

func TestAllows(t *testing.T) {
	p := &policy.Profile{Filesystem: policy.Filesystem{
		Read:   []policy.PathRule{{Path: "$WORKDIR"}, {Path: "/usr"}, {Path: "$HOME"}, {Path: "/proc/self/status"}},
		Write:  []policy.PathRule{{Path: "$WORKDIR/target"}, {Path: "$TMPDIR/go-build*"}},
		Exec:   []policy.PathRule{{Path: "/usr/bin/cc"}},
		List:   []policy.PathRule{{Path: "/"}},
		Hidden: []policy.PathRule{{Path: "$HOME/.ssh"}, {Path: "$WORKDIR/**/.env"}, {Path: "$UNKNOWN/x"}},
	}}
	ctx := map[string]string{"WORKDIR": "/w", "HOME": "/h", "TMPDIR": "/tmp"}
	for _, c := range []struct {
		a    Access
		want bool
	}{
		{Access{Kind: trace.AccessRead, Path: "/w/src/main.rs"}, true},
		{Access{Kind: trace.AccessList, Path: "/w/src"}, true},
		{Access{Kind: trace.AccessWrite, Path: "/w/src/main.rs"}, false},
		{Access{Kind: trace.AccessRead, Path: "/w/target/debug/x"}, true}, // write implies read
		{Access{Kind: trace.AccessCreate, Path: "/w/target/debug/x"}, true},
		{Access{Kind: trace.AccessDelete, Path: "/tmp/go-build42/b001"}, true},
		{Access{Kind: trace.AccessExec, Path: "/usr/bin/cc"}, true},
		{Access{Kind: trace.AccessExec, Path: "/usr/bin/ld"}, false},
		{Access{Kind: trace.AccessRead, Path: "/h/.ssh/id_rsa"}, false}, // hidden beats $HOME
		{Access{Kind: trace.AccessMetadata, Path: "/h/.ssh/id_rsa"}, false},
		{Access{Kind: trace.AccessMetadata, Path: "/etc/shadow"}, true}, // visible, not readable
		{Access{Kind: trace.AccessRead, Path: "/etc/shadow"}, false},
		{Access{Kind: trace.AccessList, Path: "/etc"}, true}, // list: names only
		{Access{Kind: trace.AccessRead, Path: "/etc"}, false},
		{Access{Kind: trace.AccessList, Path: "/h/.ssh"}, false},
		{Access{Kind: trace.AccessRead, Path: "/w/deploy/.env"}, false},
		{Access{Kind: trace.AccessRead, Path: "/proc/77/status", PID: 77}, true},
		{Access{Kind: trace.AccessRead, Path: "/proc/78/status", PID: 77}, false},
		{Access{Kind: "bogus", Path: "/w/x"}, false},
	} {
		if got := Allows(p, ctx, c.a); got != c.want {
			t.Errorf("Allows(%s %s) = %v, want %v", c.a.Kind, c.a.Path, got, c.want)
		}
	}
	// A rule whose variable the context lacks covers nothing.
	if Allows(p, map[string]string{"HOME": "/h"}, Access{Kind: trace.AccessRead, Path: "$WORKDIR/x"}) {
		t.Error("unexpanded $WORKDIR rule matched")
	}
}

func TestName(t *testing.T) {
	for _, c := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"cargo", "build"}, "cargo-build"},
		{[]string{"cargo", "build", "--release"}, "cargo-build"},
		{[]string{"go", "build", "-o", "hello", "."}, "go-build"},
		{[]string{"go", "test", "./..."}, "go-test"},
		{[]string{"/usr/bin/npm", "run", "build"}, "npm-run-build"},
		{[]string{"npm", "run", "build", "extra"}, "npm-run-build"},
		{[]string{"make", "-j8"}, "make"},
		{[]string{"python3", "-m", "pytest", "-q"}, "python3-pytest"},
		{[]string{"python3", "-m", "mypy", "src"}, "python3-mypy-src"},
		{[]string{"/usr/bin/python3.11", "-m", "venv", "--without-pip", "venv"}, "python3.11-venv"},
		{[]string{"python3", "-c", "print(1)"}, "python3"},
		{[]string{"python3", "-m"}, "python3"},
		{[]string{"env", "FOO=bar", "make"}, "env-make"},
		{[]string{"./configure"}, "configure"},
		{[]string{"My Tool!", "Do It"}, "my-tool-do-it"},
		{[]string{".hidden"}, "hidden"},
		{[]string{"/"}, "profile"},
		{nil, "profile"},
		{[]string{"x", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}, "x-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
	} {
		if got := Name(c.cmd); got != c.want {
			t.Errorf("Name(%q) = %q, want %q", c.cmd, got, c.want)
		}
		if got := Name(c.cmd); len(got) > maxNameLen {
			t.Errorf("Name(%q) = %q: longer than %d", c.cmd, got, maxNameLen)
		}
	}
}
