package e2e

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

// The third red team (issue 23, "a fresh red team will try new classes"): the attacks run under
// a realistic profile, one learned from an ordinary build and test (make compiling the probe
// with cc and running it, then pytest with a subprocess and a temp directory). Such a profile
// allows far more than the probe's own benign run (AF_UNIX sockets and connect, symlink,
// rename, kill, setrlimit, the terminal ioctls, chmod), so an attack that was refused only
// because its call was never learned shows here.

// realisticMakefile builds the probe and runs the project's tests: what `make` does in a small
// C project with Python tests.
const realisticMakefile = `all: rt
	./rt benign
	pytest-3 -q -p no:cacheprovider
rt: rt.c
	cc -O1 -o rt rt.c -lpthread
`

// realisticTest is the project's test: a subprocess, a temp directory, $HOME.
const realisticTest = `import os, subprocess
def test_sub(tmp_path):
    (tmp_path / "f").write_text("x")
    assert subprocess.run(["sh", "-c", "echo hi"], capture_output=True).stdout == b"hi\n"
    assert os.path.isdir(os.environ["HOME"])
`

// realisticBox learns `make` in a fresh C + Python project; the probe it built stays in the
// work tree, and the attacks run as `./rt …` under the learned profile.
func realisticBox(t *testing.T) (b *testutil.Box, root, profile string) {
	t.Helper()
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "setpriv", "make", "cc", "pytest-3")
	root, err := os.MkdirTemp("/var/cache", "sysprof-e2e-redteam3-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	b = newBox(t, root, "x", "dev", "work", "")
	src, err := os.ReadFile(testutil.Testdata("redteam", "rt.c"))
	if err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, filepath.Join(b.Work, "rt.c"), string(src), 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "Makefile"), realisticMakefile, 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "test_probe.py"), realisticTest, 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "in.txt"), "input\n", 0o644)
	profile = filepath.Join(root, "make.yaml")
	if r := b.Sysprof(t, "learn", "-p", profile, "--", "make"); r.Code != 0 || !strings.Contains(r.Stdout, "benign: ok") || !strings.Contains(r.Stdout, "1 passed") {
		t.Fatalf("learn make: %s", r)
	}
	p := loadProfile(t, profile)
	for _, want := range []string{"socket", "connect", "symlink", "kill"} {
		if !slices.ContainsFunc(p.Syscalls.Allow, func(s policy.Syscall) bool { return s.Name == want }) {
			t.Fatalf("the realistic profile does not allow %s: the test no longer tries what a wide profile lets through", want)
		}
	}
	openForNobody(t, root)
	return b, root, profile
}

// TestRedTeamRealisticProfile runs every attack of the suite under the realistic profile, as
// root and as an ordinary user: each blocked and on the record. A host daemon's socket by path
// (an ssh agent's, docker's) is connected with calls the profile allows (socket AF_UNIX,
// connect): the cover over it refuses and the guard records it.
func TestRedTeamRealisticProfile(t *testing.T) {
	b, root, profile := realisticBox(t)
	agent := filepath.Join(root, "agent.sock")
	l, err := net.Listen("unix", agent)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := os.Chmod(agent, 0o777); err != nil {
		t.Fatal(err)
	}
	attacks := slices.Concat(redteamAttacks, redteam3Attacks)
	// What this profile learned is no longer refused by seccomp: the probe's link and symlink
	// attacks go to TestRedTeamPersistence's changeset checks, and an abstract socket of the host
	// is simply not in the run's network namespace (ECONNREFUSED, nothing to record).
	attacks = slices.DeleteFunc(attacks, func(a redteamAttack) bool {
		return strings.HasPrefix(a.action, "symlink=") || strings.HasPrefix(a.action, "abstract=")
	})
	attacks = append(attacks, redteamAttack{action: "unix=" + agent, line: "unix: EACCES", endpoint: "unix:" + agent, unobservable: "file denials"})
	argv := []string{"./rt", "benign", "fdleak"}
	for _, a := range attacks {
		argv = append(argv, expandAttack(b, a.action))
	}
	argv = append(argv, "abstract=sysprof-redteam", "prlimit-self", "thread", "benign")
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			if as.wrap != nil {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
			}
			rep := filepath.Join(root, as.name+".json")
			r := enforceAs(t, b, as.wrap, profile, rep, argv...)
			if strings.Count(r.Stdout, "benign: ok") != 2 || !strings.Contains(r.Stdout, "\nthread: ok") || !strings.Contains(r.Stdout, "\nprlimit-self: ok") {
				t.Errorf("the ordinary work failed under the realistic profile: %s", r)
			}
			if !strings.Contains(r.Stdout, "\nabstract: ECONNREFUSED") && !strings.Contains(r.Stdout, "\nabstract: EPERM") {
				t.Errorf("an abstract unix socket reached something: %s", r.Stdout)
			}
			if !strings.Contains(r.Stdout, "\nfdleak: none\n") {
				t.Errorf("the command inherited a descriptor beyond stdio:\n%s", r.Stdout)
			}
			checkAttacks(t, r, testutil.ReadReport(t, rep), attacks, as.wrap != nil)
		})
	}
}
