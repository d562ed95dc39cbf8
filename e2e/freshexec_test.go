package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/report"
)

// Issue 23 item 2 in a fresh checkout (every CI runner): a build whose exec rule lies in an
// output directory the checkout does not have yet (out/, cargo's target/) stages the work tree
// for it, and Landlock can only grant exec on the work tree. The staged work tree stays noexec:
// out/ becomes exec-mappable when the build makes it, so the build runs what it wrote, while a
// program or library the checkout shipped (evil, evil.so, never written in the run) does not
// run through LD_PRELOAD, `ld.so ./evil` or a plain `./evil`. As root each attempt is a denial
// naming the file; as an ordinary user it is refused and the report says the kind is not
// observable. Profiles learned in a fresh checkout and in a warm tree (out/ there already:
// rules on out/app itself) both run the build clean.
func TestFreshCheckoutRunsOnlyWhatItWrites(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "gcc", "setpriv")
	root := t.TempDir()
	b := newBox(t, root, "x", "dev", "work", "")
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
	ldso, err := filepath.EvalSymlinks("/lib64/ld-linux-x86-64.so.2")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(b.Work, "out")
	fresh := func() {
		t.Helper()
		if err := os.RemoveAll(out); err != nil {
			t.Fatal(err)
		}
	}
	build := "mkdir -p out && gcc -o out/app main.c && ./out/app"
	profiles := map[string]string{"fresh": filepath.Join(root, "fresh.yaml"), "warm": filepath.Join(root, "warm.yaml")}
	fresh()
	if r := b.Sysprof(t, "learn", "-p", profiles["fresh"], "--", "sh", "-c", build); r.Code != 0 || !strings.Contains(r.Stdout, "APP RAN") {
		t.Fatalf("learn in a fresh checkout: %s", r)
	}
	b.Sh(t, "cd "+b.Work+" && "+build+" >/dev/null")
	if r := b.Sysprof(t, "learn", "-p", profiles["warm"], "--", "sh", "-c", build); r.Code != 0 || !strings.Contains(r.Stdout, "APP RAN") {
		t.Fatalf("learn in a warm tree: %s", r)
	}

	attack := build + "; LD_PRELOAD=./evil.so ./out/app; " + ldso + " ./evil; ./evil; true"
	openForNobody(t, root)
	for _, as := range []struct {
		name string
		wrap []string
	}{{"root", nil}, {"ordinary-user", []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}}} {
		t.Run(as.name, func(t *testing.T) {
			if as.name == "ordinary-user" {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
				chownTree(t, b.Tmp, 65534)
			}
			for _, learned := range []string{"fresh", "warm"} {
				run := func(rep, script string) testutil.Result {
					fresh()
					argv := append(slicesClone(as.wrap), testutil.SysprofBin, "enforce", "-p", profiles[learned], "--report", rep, "--", "sh", "-c", script)
					return runPerturbed(t, b, perturbation{name: as.name, stdout: "pipe", stdin: "null"}, argv)
				}
				rep := filepath.Join(root, as.name+"-"+learned+"-build.json")
				if r := run(rep, build); r.Code != 0 || !strings.Contains(r.Stdout, "APP RAN") {
					t.Errorf("learned %s: the build does not run in a fresh checkout: exit %d, stdout %q\n%s", learned, r.Code, r.Stdout, r.Stderr)
				} else if d := testutil.ReadReport(t, rep).Denials; len(d) > 0 {
					t.Errorf("learned %s: the build in a fresh checkout was denied: %+v", learned, d)
				}

				rep = filepath.Join(root, as.name+"-"+learned+"-attack.json")
				r := run(rep, attack)
				if strings.Contains(r.Stdout, "EVIL RAN") {
					t.Errorf("learned %s: a file the checkout shipped ran: exit %d, stdout %q\n%s", learned, r.Code, r.Stdout, r.Stderr)
				}
				if !strings.Contains(r.Stdout, "APP RAN") {
					t.Errorf("learned %s: the build's own output did not run: stdout %q\n%s", learned, r.Stdout, r.Stderr)
				}
				got := testutil.ReadReport(t, rep)
				if as.name != "root" {
					if !slices.ContainsFunc(got.Unobservable, func(u string) bool { return strings.Contains(u, "ld.so") }) {
						t.Errorf("learned %s: as an ordinary user the report does not say the loader's refusals are unobservable: %q", learned, got.Unobservable)
					}
					continue
				}
				for _, want := range []struct{ base, syscall string }{{"evil.so", "mmap"}, {"evil", "mmap"}, {"evil", "execve"}} {
					if !slices.ContainsFunc(got.Denials, func(d report.Denial) bool {
						return d.Kind == report.KindFile && d.Access == "exec" && filepath.Base(d.Path) == want.base && d.Syscall == want.syscall
					}) {
						t.Errorf("learned %s: the report has no %s denial of %s: %+v", learned, want.syscall, want.base, got.Denials)
					}
				}
			}
		})
	}
}
