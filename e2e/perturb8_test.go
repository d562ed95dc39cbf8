package e2e

import (
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// The eighth perturbation round (issue 24, what the hidden matrices still found, and
// dimensions the other tables lack): a preload the user set (Debian's faketime wrapper, and
// LD_PRELOAD of libfaketime by hand), the environment said another way (LANG and LC_ALL unset,
// a multiplexer's TERM, TZ naming a file, every XDG directory elsewhere, a HOME with spaces and
// non-ASCII, GIT_DIR and GIT_WORK_TREE set, a stale PWD, an environment of 100 kB), how the
// command is started (fds 3..9 inherited open, as a CI runner's; SIGINT ignored by the parent;
// nice 19; stdin or stdout a socket; a background job at a terminal; LD_LIBRARY_PATH naming
// the user's directories), and another user whose home does not exist; each learned into a
// file and at a terminal, enforced and drifted.

// faketimeLib is Debian's libfaketime as its faketime wrapper names it ($LIB: the loader's).
const faketimeLib = "/usr/$LIB/faketime/libfaketime.so.1"

var perturb8Dims = []perturbation{
	{name: "faketime", stdout: "pipe", stdin: "null", wrap: []string{"faketime", "-f", "-1h"}},
	{name: "faketime-tty", stdout: "tty", stdin: "tty", ctty: true, env: []string{"TERM=xterm"}, wrap: []string{"faketime", "-f", "-1h"}},
	{name: "ld-preload-faketime", stdout: "pipe", stdin: "null", env: []string{"LD_PRELOAD=" + faketimeLib, "FAKETIME=-1h"}},
	{name: "lang-unset", stdout: "pipe", stdin: "null", unset: []string{"LANG", "LC_ALL", "LANGUAGE"}},
	// The box's TERM is dumb (the learn at a terminal's xterm): a terminal multiplexer's.
	{name: "term-screen", stdout: "pipe", stdin: "null", env: []string{"TERM=screen-256color"}},
	{name: "tz-localtime", stdout: "pipe", stdin: "null", env: []string{"TZ=:/etc/localtime"}},
	{name: "xdg-all", stdout: "pipe", stdin: "null", envf: func(b *testutil.Box) []string {
		x := filepath.Join(filepath.Dir(b.Home), "xdg8")
		var env []string
		for _, v := range []string{"CONFIG", "CACHE", "DATA", "STATE", "RUNTIME"} {
			env = append(env, "XDG_"+v+"_HOME="+filepath.Join(x, strings.ToLower(v)))
		}
		env[4] = "XDG_RUNTIME_DIR=" + filepath.Join(x, "runtime")
		return env
	}},
	// A job in the background of a terminal: its process group is not the terminal's
	// foreground one (output to the terminal goes on; no pager: it would stop on its read).
	{name: "background-job", stdout: "tty", stdin: "tty", ctty: true, env: []string{"TERM=xterm", "GIT_PAGER=cat"}, wrap: []string{"python3", "-c",
		"import os, sys\npid = os.fork()\nif pid == 0:\n    os.setpgid(0, 0)\n    os.execvp(sys.argv[1], sys.argv[1:])\n_, st = os.waitpid(pid, os.WUNTRACED)\nif os.WIFSTOPPED(st):\n    os.kill(pid, 9)\n    sys.exit('stopped by signal %d' % os.WSTOPSIG(st))\nsys.exit(os.waitstatus_to_exitcode(st))"}},
	{name: "home-spaces-unicode", stdout: "pipe", stdin: "null", envf: func(b *testutil.Box) []string {
		// A fresh HOME (cold caches) of the tree's owner.
		d := filepath.Join(filepath.Dir(b.Home), "Jürgen Müller")
		var st unix.Stat_t
		if err := os.MkdirAll(d, 0o755); err != nil || unix.Stat(b.Work, &st) != nil || os.Lchown(d, int(st.Uid), int(st.Gid)) != nil {
			panic("make HOME with spaces: " + d)
		}
		return []string{"HOME=" + d}
	}},
	{name: "git-dir-set", stdout: "pipe", stdin: "null", envf: func(b *testutil.Box) []string {
		return []string{"GIT_DIR=" + filepath.Join(b.Work, ".git"), "GIT_WORK_TREE=" + b.Work}
	}},
	{name: "pwd-stale", stdout: "pipe", stdin: "null", envf: func(b *testutil.Box) []string {
		return []string{"PWD=" + filepath.Join(filepath.Dir(b.Work), "gone")}
	}},
	{name: "env-100kb", stdout: "pipe", stdin: "null", envf: func(*testutil.Box) []string {
		var env []string
		for i := range 100 {
			env = append(env, "CI_VAR_"+strings.Repeat("X", i%7)+string(rune('A'+i%26))+"_"+strings.Repeat("v", 1000))
		}
		for i := range env {
			env[i] = strings.Replace(env[i], "_v", "_"+string(rune('a'+i/26))+"=v", 1)
		}
		return env
	}},
	{name: "fds-3-to-9", stdout: "pipe", stdin: "null", wrap: shWrap("exec 3</dev/null 4>/dev/null 5</dev/null 6>/dev/null 7</dev/null 8>/dev/null 9</dev/null")},
	{name: "sigint-ignored", stdout: "pipe", stdin: "null", wrap: []string{"sh", "-c", `trap '' INT; exec "$@"`, "sh"}},
	{name: "nice-19", stdout: "pipe", stdin: "null", wrap: []string{"nice", "-n", "19"}},
	{name: "stdin-socket", stdout: "pipe", stdin: "null", wrap: []string{"python3", "-c",
		"import os, socket, sys; a, b = socket.socketpair(); b.close(); os.dup2(a.fileno(), 0); a.close(); os.execvp(sys.argv[1], sys.argv[1:])"}},
	// stdout a socket (a supervisor's or a log collector's): the wrapper copies it to its own.
	{name: "stdout-socket", stdout: "pipe", stdin: "null", wrap: []string{"python3", "-c",
		"import os, socket, sys\na, b = socket.socketpair()\npid = os.fork()\nif pid == 0:\n    b.close(); os.dup2(a.fileno(), 1); a.close()\n    os.execvp(sys.argv[1], sys.argv[1:])\na.close()\nwhile True:\n    d = b.recv(65536)\n    if not d:\n        break\n    os.write(1, d)\nsys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))"}},
	// Libraries searched first in the user's own directories (one missing, one empty).
	{name: "ld-library-path", stdout: "pipe", stdin: "null", envf: func(b *testutil.Box) []string {
		return []string{"LD_LIBRARY_PATH=" + filepath.Join(b.Home, ".local", "lib") + ":/usr/local/lib"}
	}},
	// Last: the tree becomes uid 65534's. Its password-database home, /nonexistent, is missing.
	{name: "user-without-home", stdout: "pipe", stdin: "null", nobody: true, env: []string{"HOME=/nonexistent"},
		wrap: []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}},
}

// perturb8Commands: perturb7's (git status and log, cc, python3, node, go version) and make.
var perturb8Commands = append(slicesCloneEveryday(perturb7Commands), byNameEveryday(treeEnvCommands, "make")...)

func slicesCloneEveryday(eds []everyday) []everyday { return append([]everyday(nil), eds...) }

// TestPerturbationsEight: each command learned once into a file and once at a terminal, then
// run under this round's dimensions unsandboxed and enforced: the same exit code and output,
// zero denials, and drift finds nothing that widens the profile.
func TestPerturbationsEight(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "faketime")
	before := faketimeObjects()
	t.Cleanup(func() { removeFaketimeObjects(before) })
	for _, ed := range perturb8Commands {
		t.Run(ed.name, func(t *testing.T) {
			h := perturbHooks{output: func(t *testing.T, b *testutil.Box, r testutil.Result) testutil.Result {
				r.Stdout = dropSysprofLines(r.Stdout)
				return ed.output(t, b, r)
			}, edit: func(*testing.T, *testutil.Box, perturbation) { removeFaketimeObjects(before) }}
			fh := h
			if ed.name == "git-log" {
				fh.open = map[string]string{"faketime-tty": pagerOpen} // as TestTreeAndEnvironment's tty
			}
			t.Run("learned-to-file", func(t *testing.T) { learnThenPerturb(t, ed, perturb8Dims, fh) })
			th := h
			th.learn = &learnedAtTTY
			t.Run("learned-at-tty", func(t *testing.T) { learnThenPerturb(t, ed, perturb8Dims, th) })
		})
	}
}

// faketimeObjects are libfaketime's semaphores and shared memory in the host's /dev/shm.
func faketimeObjects() map[string]bool {
	out := map[string]bool{}
	for _, pat := range []string{"/dev/shm/faketime_shm_*", "/dev/shm/sem.faketime_sem_*"} {
		m, _ := filepath.Glob(pat)
		for _, p := range m {
			out[p] = true
		}
	}
	return out
}

// removeFaketimeObjects removes those made since before: libfaketime preloaded by hand makes
// its own in every process, named by its pid, and never removes them (the unsandboxed and the
// drift runs use the host's /dev/shm); a later faketime wrapper of the same pid then fails
// with "sem_open: File exists".
func removeFaketimeObjects(before map[string]bool) {
	for p := range faketimeObjects() {
		if !before[p] {
			_ = os.Remove(p)
		}
	}
}

// TestLearnUnderSudoUsersHome: learn under sudo in the user's tree (sudo left HOME, USER and
// LOGNAME root's) runs the command with the user's, from the password database, as enforce
// runs it: the learned run sees the user's home, the profile is the one learned for the user
// (sysprof diff finds nothing either way), and enforce then has no denial and the learn's
// output. drift under sudo learns the same way: no widening.
func TestLearnUnderSudoUsersHome(t *testing.T) {
	testutil.RequireRoot(t)
	const uid = 65534
	u, err := user.LookupId("65534")
	if err != nil {
		t.Fatalf("the password database has no uid %d: %v", uid, err)
	}
	rootHome := "/root"
	if r, err := user.LookupId("0"); err == nil {
		rootHome = r.HomeDir
	}
	root := t.TempDir()
	b := newBox(t, root, "x", "alice", filepath.Join("src", "project"), "")
	gitRepo(t, b)
	openForNobody(t, root)
	for _, d := range []string{b.Work, b.Tmp} {
		chownTree(t, d, uid)
	}
	sudoVars := []string{"SUDO_UID=65534", "SUDO_GID=65534", "SUDO_USER=" + u.Username, "SUDO_COMMAND=/usr/bin/sysprof"}
	userEnv := append(slicesClone(b.Extra), sudoVars...)
	b.Extra = append(b.Extra, append(sudoVars, "HOME="+rootHome, "USER=root", "LOGNAME=root")...)
	argv := []string{"sh", "-c", `git status --short && echo "home $HOME $USER $LOGNAME"`}
	profile := filepath.Join(root, "sudo.yaml")
	lr := b.Sysprof(t, append([]string{"learn", "-p", profile, "--"}, argv...)...)
	testutil.MustCode(t, "learn under sudo", lr, 0)
	wantLine := "home " + u.HomeDir + " " + u.Username + " " + u.Username + "\n"
	if !strings.HasSuffix(lr.Stdout, wantLine) {
		t.Errorf("learn under sudo ran the command with root's HOME/USER/LOGNAME, want %q:\n%s", wantLine, lr)
	}
	// The profile learned for the user: the same tree, the user's HOME, USER and LOGNAME set
	// by hand (sudo -E of a login of theirs; git trusts the tree for SUDO_UID as before).
	ub := *b
	ub.Extra = append(userEnv, "HOME="+u.HomeDir, "USER="+u.Username, "LOGNAME="+u.Username)
	ub.Home = u.HomeDir
	userProfile := filepath.Join(root, "user.yaml")
	testutil.MustCode(t, "learn for the user", runPerturbed(t, &ub, perturbation{name: "user", stdout: "pipe", stdin: "null"},
		append([]string{testutil.SysprofBin, "learn", "-p", userProfile, "--"}, argv...)), 0)
	for _, pair := range [][2]string{{profile, userProfile}, {userProfile, profile}} {
		if d := b.Sysprof(t, "diff", "--fail-on", "low", pair[0], pair[1]); d.Code != 0 {
			t.Errorf("sysprof diff %s %s widens:\n%s", filepath.Base(pair[0]), filepath.Base(pair[1]), d)
		}
	}
	rep := filepath.Join(root, "report.json")
	got := b.Sysprof(t, append([]string{"enforce", "-p", profile, "--report", rep, "--"}, argv...)...)
	if got.Code != 0 || dropSysprofLines(got.Stdout) != dropSysprofLines(lr.Stdout) {
		t.Errorf("enforce under sudo: want exit 0 and the learn's output %q:\n%s", lr.Stdout, got)
	}
	for _, d := range testutil.ReadReport(t, rep).Denials {
		t.Errorf("denial: [%s] %s by %s (%s): suggest %q", d.Kind, d.What, d.Exe, d.Risk, d.Suggest)
	}
	if dr := b.Sysprof(t, append([]string{"drift", "--fail-on", "low", "-p", profile, "--"}, argv...)...); dr.Code != 0 {
		t.Errorf("drift under sudo widened (exit %d):\n%s", dr.Code, dr)
	}
}

// TestUserPreloadOfTreeFile: the user's LD_PRELOAD of a library in the work tree (not a system
// library) brings nothing into the run (no preload family, said nowhere) and still cannot be
// loaded: the constructor never runs and the refusal is a denial; libfaketime's brings the
// family in and says so.
func TestUserPreloadOfTreeFile(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "gcc", "faketime")
	before := faketimeObjects() // the audit runs the command unsandboxed
	t.Cleanup(func() { removeFaketimeObjects(before) })
	root := t.TempDir()
	b := newBox(t, root, "x", "dev", "work", "")
	testutil.WriteFile(t, filepath.Join(b.Work, "lib.c"), `#include <stdio.h>
__attribute__((constructor)) static void c(void) { puts("EVIL RAN"); fflush(stdout); }
`, 0o644)
	b.Sh(t, "cd "+b.Work+" && gcc -shared -fPIC -o evil.so lib.c && rm lib.c")
	profile := filepath.Join(root, "profile.yaml")
	argv := []string{"sh", "-c", "echo ok"}
	testutil.MustCode(t, "learn", b.Sysprof(t, append([]string{"learn", "-p", profile, "--"}, argv...)...), 0)
	const familyNote = "the preload family allowed for this run"
	for _, c := range []struct {
		name, preload string
		family        bool
	}{
		{"tree-file", filepath.Join(b.Work, "evil.so"), false},
		{"system-and-tree-file", faketimeLib + ":" + filepath.Join(b.Work, "evil.so"), false},
		{"faketime", faketimeLib, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := filepath.Join(root, c.name+".json")
			pt := perturbation{name: c.name, stdout: "pipe", stdin: "null", env: []string{"LD_PRELOAD=" + c.preload, "FAKETIME=-1h"}}
			r := runPerturbed(t, b, pt, append([]string{testutil.SysprofBin, "enforce", "-p", profile, "--report", rep, "--"}, argv...))
			if strings.Contains(r.Stdout, "EVIL RAN") || !strings.Contains(r.Stdout, "ok") {
				t.Errorf("the work tree's library ran, or the command did not: %s", r)
			}
			got := testutil.ReadReport(t, rep)
			if has := strings.Contains(strings.Join(got.Notes, "\n"), familyNote); has != c.family {
				t.Errorf("LD_PRELOAD=%s: preload family said %v, want %v: %q", c.preload, has, c.family, got.Notes)
			}
			if c.family {
				for _, d := range got.Denials {
					t.Errorf("denial: [%s] %s by %s", d.Kind, d.What, d.Exe)
				}
			} else if !slices.ContainsFunc(got.Denials, func(d report.Denial) bool { return filepath.Base(d.Path) == "evil.so" }) {
				// A read denial where the profile reads nothing there, an exec one otherwise.
				t.Errorf("no denial of evil.so: %+v", got.Denials)
			}
		})
	}
	// enforce --audit (the command learned unsandboxed) lists none of the preload's calls.
	rep := filepath.Join(root, "audit.json")
	pt := perturbation{name: "audit", stdout: "pipe", stdin: "null", env: []string{"LD_PRELOAD=" + faketimeLib, "FAKETIME=-1h"}}
	r := runPerturbed(t, b, pt, append([]string{testutil.SysprofBin, "enforce", "--audit", "-p", profile, "--report", rep, "--"}, argv...))
	testutil.MustCode(t, "enforce --audit", r, 0)
	for _, d := range testutil.ReadReport(t, rep).Denials {
		if d.Kind == report.KindSyscall && slices.Contains(policy.PreloadCalls, d.Syscall) {
			t.Errorf("audit under the user's preload lists %s", d.What)
		}
	}
}
