package e2e

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/report"
)

// freshBuild is a build whose exec rule lies in an output directory a fresh checkout lacks.
type freshBuild struct {
	name   string
	need   []string
	setup  func(t *testing.T, b *testutil.Box)
	script string // builds the output and runs it; its stdout holds ran
	ran    string
	warm   bool // also learned in a warm tree (the output there already)
	asUser bool // also as an ordinary user (the toolchain must be reachable for it)
}

var freshBuilds = []freshBuild{
	{name: "mkdir", need: []string{"gcc"}, script: "mkdir -p out && gcc -o out/app main.c && ./out/app", ran: "APP RAN", warm: true, asUser: true},
	// Run at once: the command's mkdir is made and bound by the init stage before it returns.
	{name: "at-once", need: []string{"cp"}, script: "mkdir out && cp /bin/echo out/app && ./out/app APP RAN", ran: "APP RAN", asUser: true},
	// Made elsewhere, then renamed into place and built into, as cargo makes target/.
	{name: "renamed", need: []string{"gcc"}, script: "mkdir -p .out.tmp && mv .out.tmp out && gcc -o out/app main.c && ./out/app", ran: "APP RAN", asUser: true},
	{name: "cargo", need: []string{"cargo"}, setup: buildCrate, script: "cargo build -q --offline && ./target/debug/crate", ran: "hello, sysprof"},
	// Written straight into the work tree, beside the shipped evil: the file alone is bound
	// exec when the command runs it.
	// (ln learned: the attack gives the shipped evil the output's name by a hard link.)
	{name: "top", need: []string{"gcc"}, script: "gcc -o app main.c && ln -f main.c main.l && ./app", ran: "APP RAN", warm: true, asUser: true},
	// As configure does: run it, remove it, build and run it again (the bind is undone before
	// its name goes), renamed away and back.
	// (test -x first, as autoconf's link test does: the noexec stage answers X_OK EACCES.)
	{name: "conftest", need: []string{"gcc"}, script: "gcc -o conftest main.c && test -x conftest && ./conftest && rm -f conftest && gcc -o conftest main.c && mv conftest c2 && mv c2 conftest && ./conftest", ran: "APP RAN", warm: true, asUser: true},
}

// Issue 23 item 2 in a fresh checkout (every CI runner): a build whose exec rule lies in an
// output directory the checkout does not have yet (out/, cargo's target/) stages the work tree
// for it, and Landlock can only grant exec on the work tree. The staged work tree stays noexec:
// the output directory becomes exec-mappable when the build makes it (or renames it into
// place), so the build runs what it wrote, while a program or library the checkout shipped
// (evil, evil.so, never written in the run) does not run through LD_PRELOAD, `ld.so ./evil` or
// a plain `./evil`. As root each attempt is a denial naming the file; as an ordinary user it is
// refused and the report says the kind is not observable. Profiles learned in a fresh checkout
// and in a warm tree (out/ there already: rules on out/app itself) both run the build clean.
func TestFreshCheckoutRunsOnlyWhatItWrites(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "gcc", "setpriv")
	ldso, err := filepath.EvalSymlinks("/lib64/ld-linux-x86-64.so.2")
	if err != nil {
		t.Fatal(err)
	}
	for _, fb := range freshBuilds {
		t.Run(fb.name, func(t *testing.T) {
			testutil.RequireTools(t, hostPath, fb.need...)
			testFreshBuild(t, fb, ldso)
		})
	}
}

func testFreshBuild(t *testing.T, fb freshBuild, ldso string) {
	root := t.TempDir()
	b := newBox(t, root, "x", "dev", "work", "")
	if fb.setup != nil {
		fb.setup(t, b)
	}
	files := map[string]string{
		"main.c": "#include <stdio.h>\nint main(void) { puts(\"APP RAN\"); return 0; }\n",
		"lib.c":  "#include <stdio.h>\n__attribute__((constructor)) static void c(void) { puts(\"EVIL RAN\"); fflush(stdout); }\n",
		"prog.c": "#include <stdio.h>\nint main(void) { puts(\"EVIL RAN\"); return 0; }\n",
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(b.Work, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b.Sh(t, "cd "+b.Work+" && gcc -shared -fPIC -o evil.so lib.c && gcc -o evil prog.c && rm lib.c prog.c")
	fresh := func() {
		t.Helper()
		for _, d := range []string{"out", ".out.tmp", "target", "app", "main.l", "conftest", "c2"} {
			if err := os.RemoveAll(filepath.Join(b.Work, d)); err != nil {
				t.Fatal(err)
			}
		}
	}
	profiles := map[string]string{"fresh": filepath.Join(root, "fresh.yaml")}
	fresh()
	if r := b.Sysprof(t, "learn", "-p", profiles["fresh"], "--", "sh", "-c", fb.script); r.Code != 0 || !strings.Contains(r.Stdout, fb.ran) {
		t.Fatalf("learn in a fresh checkout: %s", r)
	}
	if fb.warm {
		profiles["warm"] = filepath.Join(root, "warm.yaml")
		b.Sh(t, "cd "+b.Work+" && "+fb.script+" >/dev/null")
		if r := b.Sysprof(t, "learn", "-p", profiles["warm"], "--", "sh", "-c", fb.script); r.Code != 0 || !strings.Contains(r.Stdout, fb.ran) {
			t.Fatalf("learn in a warm tree: %s", r)
		}
	}
	app := strings.TrimPrefix(fb.script[strings.LastIndex(fb.script, "&& ")+3:], "./")
	attack := fb.script + "; LD_PRELOAD=./evil.so ./" + app + "; " + ldso + " ./evil; ./evil; true"
	wantDenials := []struct{ base, syscall string }{{"evil.so", "mmap"}, {"evil", "mmap"}, {"evil", "execve"}}
	users := []struct {
		name string
		wrap []string
	}{{"root", nil}}
	if fb.asUser {
		users = append(users, struct {
			name string
			wrap []string
		}{"ordinary-user", []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}})
		openForNobody(t, root)
	}
	for _, as := range users {
		if as.name == "ordinary-user" {
			chownTree(t, b.Work, 65534)
			chownTree(t, b.Home, 65534)
			chownTree(t, b.Tmp, 65534)
		}
		for _, learned := range slices.Sorted(maps.Keys(profiles)) {
			run := func(rep, script string) testutil.Result {
				fresh()
				argv := append(slicesClone(as.wrap), testutil.SysprofBin, "enforce", "-p", profiles[learned], "--report", rep, "--", "sh", "-c", script)
				return runPerturbed(t, b, perturbation{name: as.name, stdout: "pipe", stdin: "null"}, argv)
			}
			what := as.name + ", learned " + learned
			rep := filepath.Join(root, as.name+"-"+learned+"-build.json")
			if r := run(rep, fb.script); r.Code != 0 || !strings.Contains(r.Stdout, fb.ran) {
				t.Errorf("%s: the build does not run in a fresh checkout: exit %d, stdout %q\n%s", what, r.Code, r.Stdout, r.Stderr)
			} else if d := testutil.ReadReport(t, rep).Denials; len(d) > 0 {
				t.Errorf("%s: the build in a fresh checkout was denied: %+v", what, d)
			}

			rep = filepath.Join(root, as.name+"-"+learned+"-attack.json")
			r := run(rep, attack)
			if strings.Contains(r.Stdout, "EVIL RAN") {
				t.Errorf("%s: a file the checkout shipped ran: exit %d, stdout %q\n%s", what, r.Code, r.Stdout, r.Stderr)
			}
			if !strings.Contains(r.Stdout, fb.ran) {
				t.Errorf("%s: the build's own output did not run: stdout %q\n%s", what, r.Stdout, r.Stderr)
			}
			got := testutil.ReadReport(t, rep)
			if as.name != "root" {
				if !slices.ContainsFunc(got.Unobservable, func(u string) bool { return strings.Contains(u, "ld.so") }) {
					t.Errorf("%s: the report does not say the loader's refusals are unobservable: %q", what, got.Unobservable)
				}
				continue
			}
			for _, want := range wantDenials {
				if !slices.ContainsFunc(got.Denials, func(d report.Denial) bool {
					return d.Kind == report.KindFile && d.Access == "exec" && filepath.Base(d.Path) == want.base && d.Syscall == want.syscall
				}) {
					t.Errorf("%s: the report has no %s denial of %s: %+v", what, want.syscall, want.base, got.Denials)
				}
			}
		}
	}
}
