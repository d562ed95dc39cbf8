package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/report"
)

// Issue 23 item 2 (and its part of item 5): executing means an exec rule, also through the
// loader. A shared object and a program that sit in the work tree before the run (shipped, not
// written by it) and that no rule names do not run through `ld.so ./evil`, `LD_PRELOAD=./evil.so`
// or python's ctypes.CDLL: the read-only work tree is mounted noexec, and only the learned
// library (mapped executable in the learn run) stays mappable. As root each attempt is a denial
// in the report naming the file; as an ordinary user it is refused and the report says that kind
// is not observable. Anonymous executable memory is refused unless learned, and reported.
func TestLoaderExecRefusedAndRecorded(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "gcc", "python3", "setpriv")
	root := t.TempDir()
	b := newBox(t, root, "x", "dev", "work", "")
	lib := `#include <stdio.h>
__attribute__((constructor)) static void c(void) { puts("EVIL RAN"); fflush(stdout); }
int f(void) { return 42; }
`
	prog := `#include <stdio.h>
int main(void) { puts("EVIL RAN"); return 0; }
`
	for name, src := range map[string]string{"lib.c": lib, "prog.c": prog} {
		if err := os.WriteFile(filepath.Join(b.Work, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b.Sh(t, "cd "+b.Work+" && gcc -shared -fPIC -o good.so lib.c && gcc -shared -fPIC -o evil.so lib.c && gcc -o evil prog.c && rm lib.c prog.c")
	ldso, err := filepath.EvalSymlinks("/lib64/ld-linux-x86-64.so.2")
	if err != nil {
		t.Fatal(err)
	}

	jit := `python3 -c 'import mmap; mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC); print("EVIL RAN")'`
	profile := filepath.Join(root, "profile.yaml")
	// The learn run maps good.so (ctypes, LD_PRELOAD) and runs the loader on /bin/true: the
	// loader and good.so are learned, evil and evil.so are not.
	learn := `python3 -c 'import ctypes; print(ctypes.CDLL("./good.so").f())' && LD_PRELOAD=./good.so /usr/bin/true && ` + ldso + ` /bin/true`
	if r := b.Sysprof(t, "learn", "-p", profile, "--", "sh", "-c", learn); r.Code != 0 || !strings.Contains(r.Stdout, "42") {
		t.Fatalf("learn: %s", r)
	}

	attempts := []struct {
		name, script string
	}{
		{"ld.so", ldso + " ./evil"},
		{"LD_PRELOAD", "LD_PRELOAD=./evil.so /usr/bin/true"},
		{"ctypes", `python3 -c 'import ctypes; ctypes.CDLL("./evil.so")'`},
		// Executable memory no file backs (injected code, a JIT): seccomp refuses it unless
		// learned, and the supervisor reports it in both modes.
		{"anon-exec", jit},
		// A memfd written with a binary and executed: memfd_create was not learned, so
		// seccomp refuses it and the supervisor reports it (a learned memfd_create is a known
		// limit: memfds live on the kernel's internal mount, which no mount flag reaches).
		{"memfd", `python3 -c 'import os; fd = os.memfd_create("x"); os.write(fd, open("./evil", "rb").read()); os.execv("/proc/self/fd/%d" % fd, ["evil"])'`},
		// The same through fexecve (execveat(fd, "", AT_EMPTY_PATH)): no path at all.
		{"memfd-execveat", `python3 -c 'import os; fd = os.memfd_create("x"); os.write(fd, open("./evil", "rb").read()); os.execve(fd, ["evil"], {})'`},
		// Writable anonymous memory made executable afterwards (a JIT's W^X flip, injected code).
		{"mprotect", `python3 -c 'import mmap, ctypes; m = mmap.mmap(-1, 4096); a = ctypes.addressof(ctypes.c_char.from_buffer(m)); r = ctypes.CDLL(None).mprotect(ctypes.c_void_p(a), 4096, 7); print("EVIL RAN" if r == 0 else "refused")'`},
	}
	// A JIT the learn run saw keeps working.
	jitProfile := filepath.Join(root, "jit.yaml")
	testutil.MustCode(t, "learn the JIT", b.Sysprof(t, "learn", "-p", jitProfile, "--", "sh", "-c", jit), 0)
	if r := b.Sysprof(t, "enforce", "-p", jitProfile, "--", "sh", "-c", jit); r.Code != 0 || !strings.Contains(r.Stdout, "EVIL RAN") {
		t.Errorf("a learned executable mapping is refused: %s", r)
	}
	// A JIT engine (node's V8: executable anonymous memory, mprotect flips) learned so keeps
	// running, as root and as an ordinary user (below).
	nodeScript := `node -e 'let s = 0; for (let i = 0; i < 1e6; i++) s += i; console.log("NODE " + s)'`
	nodeProfile := filepath.Join(root, "node.yaml")
	if _, err := exec.LookPath("node"); err == nil {
		testutil.MustCode(t, "learn node", b.Sysprof(t, "learn", "-p", nodeProfile, "--", "sh", "-c", nodeScript), 0)
	} else {
		nodeProfile = ""
	}
	openForNobody(t, root)
	for _, as := range []struct {
		name string
		wrap []string
	}{{"root", nil}, {"ordinary-user", []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}}} {
		t.Run(as.name, func(t *testing.T) {
			if as.name == "ordinary-user" {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
			}
			run := func(rep, script string) testutil.Result {
				argv := append(slicesClone(as.wrap), testutil.SysprofBin, "enforce", "-p", profile, "--report", rep, "--", "sh", "-c", script)
				return runPerturbed(t, b, perturbation{name: as.name, stdout: "pipe", stdin: "null"}, argv)
			}
			if nodeProfile != "" {
				argv := append(slicesClone(as.wrap), testutil.SysprofBin, "enforce", "-p", nodeProfile, "--", "sh", "-c", nodeScript)
				if r := runPerturbed(t, b, perturbation{name: as.name, stdout: "pipe", stdin: "null"}, argv); r.Code != 0 || !strings.Contains(r.Stdout, "NODE 499999500000") {
					t.Errorf("node (a JIT learned) does not run: exit %d, stdout %q\n%s", r.Code, r.Stdout, r.Stderr)
				}
			}
			// The learned library still loads.
			rep := filepath.Join(root, as.name+"-good.json")
			if r := run(rep, `python3 -c 'import ctypes; print(ctypes.CDLL("./good.so").f())'`); r.Code != 0 || !strings.Contains(r.Stdout, "42") {
				t.Errorf("the learned work-tree library does not load: exit %d, stdout %q\n%s", r.Code, r.Stdout, r.Stderr)
			}
			for _, a := range attempts {
				rep := filepath.Join(root, as.name+"-"+a.name+".json")
				r := run(rep, a.script)
				if strings.Contains(r.Stdout, "EVIL RAN") {
					t.Errorf("%s: the unlearned file ran: exit %d, stdout %q\n%s", a.name, r.Code, r.Stdout, r.Stderr)
				}
				got := testutil.ReadReport(t, rep)
				if sc := map[string]string{"anon-exec": "mmap", "memfd": "memfd_create", "memfd-execveat": "memfd_create", "mprotect": "mprotect"}[a.name]; sc != "" {
					if !slices.ContainsFunc(got.Denials, func(d report.Denial) bool { return d.Kind == report.KindSyscall && d.Syscall == sc }) {
						t.Errorf("%s: the report has no %s denial: %+v", a.name, sc, got.Denials)
					}
					continue
				}
				if as.name == "root" {
					if !slices.ContainsFunc(got.Denials, loaderDenial) {
						t.Errorf("%s: the report has no exec denial of the unlearned file: %+v", a.name, got.Denials)
					}
				} else if !slices.ContainsFunc(got.Unobservable, func(u string) bool { return strings.Contains(u, "ld.so") }) {
					t.Errorf("%s: as an ordinary user the report does not say the loader's refusals are unobservable: %q", a.name, got.Unobservable)
				}
			}
		})
	}
}

// loaderDenial reports whether d is the refusal of an executable mapping of evil or evil.so.
func loaderDenial(d report.Denial) bool {
	base := filepath.Base(d.Path)
	return d.Kind == report.KindFile && d.Access == "exec" && (base == "evil" || base == "evil.so")
}
