package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// newerRelease is the Debian release the portability test enforces in: a newer glibc (2.41),
// gcc 14 with cc1 under /usr/libexec, python 3.13. The chroot is built once with debootstrap
// from the mirror apt uses and kept in newerRootCache.
const newerRelease = "trixie"

// newerRootCache keeps the chroot between runs (~45 s and ~530 MB to build).
var newerRootCache = "/var/cache/sysprof-test/" + newerRelease

// newerRoot returns a Debian trixie userland with gcc, make and python3, building it when absent.
func newerRoot(t *testing.T) string {
	t.Helper()
	if st, err := os.Stat(filepath.Join(newerRootCache, "usr/bin/gcc")); err == nil && !st.IsDir() {
		return newerRootCache
	}
	deb, err := exec.LookPath("debootstrap")
	testutil.RequireNoErr(t, "debootstrap (apt-get install debootstrap)", err)
	mirror := aptMirror(t)
	tmp := newerRootCache + ".tmp"
	os.RemoveAll(tmp)
	if err := os.MkdirAll(filepath.Dir(tmp), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(deb, "--variant=minbase", "--include=gcc,libc6-dev,make,python3", newerRelease, tmp, mirror).CombinedOutput()
	if err != nil {
		t.Fatalf("debootstrap %s: %v\n%s", newerRelease, err, lastLines(string(out), 20))
	}
	if err := os.Rename(tmp, newerRootCache); err != nil {
		t.Fatal(err)
	}
	return newerRootCache
}

// aptMirror is the Debian mirror this machine's apt uses (deb822 sources or sources.list).
func aptMirror(t *testing.T) string {
	t.Helper()
	for _, f := range []string{"/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"} {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		defer fh.Close()
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			switch {
			case len(fields) >= 2 && fields[0] == "URIs:":
				return fields[1]
			case len(fields) >= 3 && fields[0] == "deb" && !strings.HasPrefix(fields[1], "["):
				return fields[1]
			}
		}
	}
	t.Fatal("no Debian mirror in /etc/apt: cannot build the newer-release chroot")
	return ""
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

// TestNewerDistro (issue 15 item 8, issue 24 item 10): gcc -c, make and python3 -c learned
// here (Debian 12: glibc 2.36, gcc 12, python 3.11) as a user would, without a flag (portable
// is the default), then enforced inside a Debian trixie chroot (glibc 2.41, gcc 14 with cc1 in
// /usr/libexec, python 3.13) with zero denials and the same output. The control: the same
// profiles learned with --exact are denied there.
func TestNewerDistro(t *testing.T) {
	testutil.RequireRoot(t)
	for _, tool := range []string{"gcc", "make", "python3", "unshare", "pivot_root"} {
		testutil.RequireTools(t, hostPath, tool)
	}
	root := newerRoot(t)
	pivotBin, err := exec.LookPath("pivot_root")
	if err != nil {
		t.Fatal(err)
	}

	// The work tree, HOME and profiles live at the same absolute path here and in the chroot.
	rel, err := os.MkdirTemp(filepath.Join(root, "tmp"), "sysprof-distro-")
	if err != nil {
		t.Fatal(err)
	}
	base := strings.TrimPrefix(rel, root)
	t.Cleanup(func() { os.RemoveAll(rel) })
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	for _, d := range []string{"work", "home", "tmp", "profiles"} {
		for _, r := range []string{base, rel} {
			if err := os.MkdirAll(filepath.Join(r, d), 0o777); err != nil {
				t.Fatal(err)
			}
		}
	}
	src := "#include <stdio.h>\nint main(void) { printf(\"hello\\n\"); return 0; }\n"
	mk := "hello: hello.o\n\tgcc -o hello hello.o\nhello.o: hello.c\n\tgcc -O2 -c -o hello.o hello.c\n"
	for _, r := range []string{base, rel} {
		testutil.WriteFile(t, filepath.Join(r, "work", "hello.c"), src, 0o644)
		testutil.WriteFile(t, filepath.Join(r, "work", "Makefile"), mk, 0o644)
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + filepath.Join(base, "home"), "TMPDIR=" + filepath.Join(base, "tmp"), "LANG=C", "LC_ALL=C"}
	// The static binary, inside the chroot: in this test's own directory, since the cached
	// root is shared by every test run on the host (another run's binary at one fixed path was
	// replaced under it: "text file busy").
	b, err := os.ReadFile(testutil.SysprofBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rel, "sysprof"), b, 0o755); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name  string
		argv  []string
		clean string
		want  string // in stdout, or a file the command makes
	}{
		{"gcc-c", []string{"gcc", "-O2", "-c", "-o", "hello.o", "hello.c"}, "hello.o", "file:hello.o"},
		{"make", []string{"make"}, "hello hello.o", "file:hello"},
		{"python3-c", []string{"python3", "-c", "import json, os; print(json.dumps(sorted(os.listdir('.'))))"}, "", "hello.c"},
	}
	work := filepath.Join(base, "work")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, portable := range []bool{true, false} {
				profile := filepath.Join(base, "profiles", fmt.Sprintf("%s-%v.yaml", c.name, portable))
				args := []string{"learn", "-p", profile}
				if !portable {
					args = append(args, "--exact")
				}
				clean(t, work, c.clean)
				r := testutil.Run(t, work, env, append(append([]string{testutil.SysprofBin}, args...), append([]string{"--"}, c.argv...)...)...)
				testutil.MustCode(t, "learn here", r, 0)
				// The chroot sees the profile at the same path.
				testutil.CopyTree(t, filepath.Dir(profile), filepath.Join(rel, "profiles"))

				clean(t, filepath.Join(rel, "work"), c.clean)
				rep := filepath.Join(base, "profiles", fmt.Sprintf("%s-%v.report.json", c.name, portable))
				// pivot_root, not chroot: a process in a chroot may not make a user namespace
				// (EPERM), and enforce makes one also as root.
				script := fmt.Sprintf(`set -e
root=%q
mount --bind "$root" "$root"
for d in proc dev sys; do mount --rbind /$d "$root/$d"; mount --make-rslave "$root/$d"; done
mkdir -p "$root/.oldroot"
cd "$root"
%s . .oldroot
exec /bin/sh -c 'umount -l /.oldroot && cd "$0" && p=$1 r=$2 && shift 2 && exec %s/sysprof enforce -p "$p" --report "$r" -- "$@"' %q %q %q %s`,
					root, pivotBin, base, work, profile, rep, shellQuote(c.argv))
				r = testutil.Run(t, "/", env, "/usr/bin/unshare", "-m", "--propagation", "private", "sh", "-c", script)
				hostRep := filepath.Join(root, rep)
				if !portable {
					// The control: version-pinned paths and glibc 2.41's syscalls are refused.
					if r.Code == 0 && len(testutil.ReadReport(t, hostRep).Denials) == 0 {
						t.Errorf("control: the profile learned with --exact ran in %s with no denial", newerRelease)
					}
					continue
				}
				testutil.MustCode(t, "enforce in "+newerRelease, r, 0)
				testutil.RequireNoDenials(t, "enforce in "+newerRelease, hostRep, r)
				if f, ok := strings.CutPrefix(c.want, "file:"); ok {
					if _, err := os.Stat(filepath.Join(rel, "work", f)); err != nil {
						t.Errorf("enforce in %s did not make %s: %v", newerRelease, f, err)
					}
				} else if !strings.Contains(r.Stdout, c.want) {
					t.Errorf("enforce in %s: output lacks %q:\n%s", newerRelease, c.want, r)
				}
			}
		})
	}
}

func clean(t *testing.T, dir, names string) {
	for _, n := range strings.Fields(names) {
		os.Remove(filepath.Join(dir, n))
	}
}

func shellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
