package stdiofds

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// A program linked with the entry knows which of fds 0-2 its caller closed, though Go's runtime
// put /dev/null on them before main (issue 24: a command under enforce with stdout closed got
// /dev/null and its print succeeded); linked without it, it knows none.
func TestEntryNotesClosedFDs(t *testing.T) {
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		// CI builds amd64 and arm64 only: an architecture it gains must get an entry, not a skip.
		if os.Getenv("CI") == "true" {
			t.Fatalf("no entry for %s/%s (CI=true: a failure, not a skip): add entry_%s.s", runtime.GOOS, runtime.GOARCH, runtime.GOARCH)
		}
		t.Skip("the entry is linux/amd64 and linux/arm64's")
	}
	dir := t.TempDir()
	build := func(name string, ldflags string) string {
		bin := filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-ldflags", ldflags, "-o", bin, "./testdata/closed")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", name, err, out)
		}
		return bin
	}
	with := build("with", "-E github.com/sysprof/sysprof/internal/stdiofds.Entry")
	without := build("without", "")
	for _, c := range []struct {
		bin, redirect, want string
	}{
		{with, "", "[]"},
		{with, ">&-", "[1]"},
		{with, "<&- 2>&-", "[0 2]"},
		{with, "<&- >&- 2>&-", "[0 1 2]"},
		{without, "<&- >&- 2>&-", "[]"},
	} {
		out := filepath.Join(dir, "out")
		sh := exec.Command("sh", "-c", `exec "$0" "$1" `+c.redirect, c.bin, out)
		sh.Stdin, sh.Stdout, sh.Stderr = nil, nil, nil
		if b, err := sh.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", filepath.Base(c.bin), c.redirect, err, b)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("%s %s: closed at start %s, want %s", filepath.Base(c.bin), c.redirect, got, c.want)
		}
	}
}
