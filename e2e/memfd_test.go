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

// Issue 23 item 2, the memfd part: with memfd_create learned (a plain memfd use), a memfd
// written with a program or a library can be neither executed (execve of /proc/self/fd/N:
// EACCES) nor mapped executable (dlopen of it: EPERM), and as root the guard reports both: the
// supervisor hands out a file on the init stage's detached noexec tmpfs, not a memfd. A memfd
// asking MFD_EXEC is refused and reported. Plain use (write, read, mmap, reopening
// /proc/self/fd/N) still works, and a memfd executed in the learn run still runs under enforce.
func TestMemfdExecRefusedUnlessLearned(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "gcc", "python3", "setpriv")
	root := t.TempDir()
	b := newBox(t, root, "x", "dev", "work", "")
	lib := `#include <stdio.h>
__attribute__((constructor)) static void c(void) { puts("EVIL RAN"); fflush(stdout); }
`
	prog := `#include <stdio.h>
int main(void) { puts("EVIL RAN"); return 0; }
`
	for name, src := range map[string]string{"lib.c": lib, "prog.c": prog} {
		if err := os.WriteFile(filepath.Join(b.Work, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b.Sh(t, "cd "+b.Work+" && gcc -shared -fPIC -o evil.so lib.c && gcc -o evil prog.c && rm lib.c prog.c")

	py := func(body string) string { return `python3 -c '` + body + `'` }
	plain := py(`import os, mmap; fd = os.memfd_create("x", os.MFD_CLOEXEC); os.write(fd, b"hello"); m = mmap.mmap(fd, 5); print("PLAIN", m[:5].decode(), os.pread(fd, 5, 0).decode(), open("/proc/self/fd/%d" % fd).read())`)
	exe := py(`import os; fd = os.memfd_create("x"); os.write(fd, open("./evil", "rb").read()); os.execv("/proc/self/fd/%d" % fd, ["evil"])`)
	askExec := py(`import os; os.memfd_create("x", 0x10); print("EVIL RAN")`)

	// The learn run uses a memfd without exec, loads a library and execs a program, by path and
	// by fd (fexecve: execveat learned), so that the attempts below differ from it only in
	// running a memfd.
	profile := filepath.Join(root, "profile.yaml")
	learn := plain + ` && ` + py(`import ctypes; ctypes.CDLL("libm.so.6"); open("./evil", "rb").read(); open("./evil.so", "rb").read()`) + ` && ` + py(`import os; os.execv("/usr/bin/true", ["true"])`) + ` && ` + py(`import os; os.execve(os.open("/usr/bin/true", os.O_RDONLY), ["true"], {})`)
	if r := b.Sysprof(t, "learn", "-p", profile, "--", "sh", "-c", learn); r.Code != 0 || !strings.Contains(r.Stdout, "PLAIN hello hello hello") {
		t.Fatalf("learn: %s", r)
	}
	if data, err := os.ReadFile(profile); err != nil || !strings.Contains(string(data), "memfd_create") {
		t.Fatalf("the learn run did not learn memfd_create (%v):\n%s", err, data)
	}
	// A learn run that executes a memfd: enforce lets that run.
	execProfile := filepath.Join(root, "memfd-exec.yaml")
	testutil.MustCode(t, "learn the memfd exec", b.Sysprof(t, "learn", "-p", execProfile, "--", "sh", "-c", exe), 0)
	if data, err := os.ReadFile(execProfile); err != nil || !strings.Contains(string(data), "syscall: memfd_create") {
		t.Fatalf("the learn run that executed a memfd has no memfd_create rule (%v):\n%s", err, data)
	} else if strings.Contains(string(data), "{path: /,") {
		t.Fatalf("the memfd that ran became an exec rule or a binary on /:\n%s", data)
	}

	// A learn run that maps a memfd executable (dlopen of it) learns the rule too.
	dl := py(`import os, ctypes; fd = os.memfd_create("x"); os.write(fd, open("./evil.so", "rb").read()); ctypes.CDLL("/proc/self/fd/%d" % fd)`)
	dlProfile := filepath.Join(root, "memfd-dlopen.yaml")
	testutil.MustCode(t, "learn the memfd dlopen", b.Sysprof(t, "learn", "-p", dlProfile, "--", "sh", "-c", dl), 0)
	if data, err := os.ReadFile(dlProfile); err != nil || !strings.Contains(string(data), "syscall: memfd_create") {
		t.Errorf("the learn run that mapped a memfd executable has no memfd_create rule (%v):\n%s", err, data)
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
			run := func(prof, rep, script string) testutil.Result {
				argv := append(slicesClone(as.wrap), testutil.SysprofBin, "enforce", "-p", prof, "--report", rep, "--", "sh", "-c", script)
				return runPerturbed(t, b, perturbation{name: as.name, stdout: "pipe", stdin: "null"}, argv)
			}
			if r := run(profile, filepath.Join(root, as.name+"-plain.json"), plain); r.Code != 0 || !strings.Contains(r.Stdout, "PLAIN hello hello hello") {
				t.Errorf("plain memfd use fails: exit %d, stdout %q\n%s", r.Code, r.Stdout, r.Stderr)
			}
			if r := run(execProfile, filepath.Join(root, as.name+"-learned.json"), exe); r.Code != 0 || !strings.Contains(r.Stdout, "EVIL RAN") {
				t.Errorf("a learned memfd exec does not run: exit %d, stdout %q\n%s", r.Code, r.Stdout, r.Stderr)
			}
			for _, a := range []struct{ name, script, want string }{
				{"exec", exe, "Permission denied"},
				{"dlopen", dl, "failed to map segment"},
				// A loader of its own: the memfd's fd mapped executable, no path involved.
				{"mmap-exec", py(`import os, mmap; fd = os.memfd_create("x"); os.write(fd, bytes(4096)); mmap.mmap(fd, 4096, prot=mmap.PROT_READ | mmap.PROT_EXEC); print("EVIL RAN")`), "Operation not permitted"},
				{"ask-MFD_EXEC", askExec, "Operation not permitted"},
				// fexecve: execveat(fd, "", AT_EMPTY_PATH), no path at all.
				{"execveat", py(`import os; fd = os.memfd_create("x"); os.write(fd, open("./evil", "rb").read()); os.execve(fd, ["evil"], {})`), "Permission denied"},
				// Mapped readable, then made executable.
				{"mprotect", py(`import os, mmap, ctypes; fd = os.memfd_create("x"); os.write(fd, bytes(4096)); m = mmap.mmap(fd, 4096); a = ctypes.addressof(ctypes.c_char.from_buffer(m)); libc = ctypes.CDLL(None, use_errno=True); r = libc.mprotect(ctypes.c_void_p(a), 4096, mmap.PROT_READ | mmap.PROT_EXEC); print("EVIL RAN" if r == 0 else "mprotect: " + os.strerror(ctypes.get_errno())); exit(r != 0)`), "mprotect: "},
			} {
				rep := filepath.Join(root, as.name+"-"+a.name+".json")
				r := run(profile, rep, a.script)
				if strings.Contains(r.Stdout, "EVIL RAN") || r.Code == 0 {
					t.Errorf("%s: the memfd's code ran: exit %d, stdout %q\n%s", a.name, r.Code, r.Stdout, r.Stderr)
				}
				if !strings.Contains(r.Stderr+r.Stdout, a.want) {
					t.Errorf("%s: stderr does not say %q:\n%s", a.name, a.want, r.Stderr)
				}
				got := testutil.ReadReport(t, rep)
				switch {
				case a.name == "mprotect":
					// Refused by the seccomp argument rule (no PROT_EXEC learned), in both modes.
					if !slices.ContainsFunc(got.Denials, func(d report.Denial) bool { return d.Syscall == "mprotect" && !d.Allowed }) {
						t.Errorf("%s: the report has no mprotect denial: %+v", a.name, got.Denials)
					}
				case a.name == "ask-MFD_EXEC":
					if !slices.ContainsFunc(got.Denials, func(d report.Denial) bool { return d.Syscall == "memfd_create" && !d.Allowed }) {
						t.Errorf("%s: the report has no memfd_create denial: %+v", a.name, got.Denials)
					}
				case as.name == "root":
					if !slices.ContainsFunc(got.Denials, func(d report.Denial) bool {
						// execve names the fd; a mapping the memfd (/memfd:NAME, as learn does).
						return d.Access == "exec" && (strings.HasPrefix(d.Path, "/proc/self/fd/") || strings.HasPrefix(d.Path, "/memfd:x")) &&
							strings.Contains(d.Suggest, "memfd_create")
					}) {
						t.Errorf("%s: the report has no exec denial of the memfd: %+v", a.name, got.Denials)
					}
				default:
					if !slices.ContainsFunc(got.Unobservable, func(u string) bool { return strings.Contains(u, "memfd") }) {
						t.Errorf("%s: as an ordinary user the report does not say a memfd's refused exec is unobservable: %q", a.name, got.Unobservable)
					}
				}
			}
		})
	}
}
