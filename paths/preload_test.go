package paths

import (
	"os"
	"path/filepath"
	"testing"
)

// A preload counts as the user's system library only when every entry is one: a file in the
// work tree, $HOME or /tmp (also reached through /usr/lib/.. or a link), a relative path, a
// loader token other than $LIB, or a bare name searched in LD_LIBRARY_PATH is not.
func TestUserPreload(t *testing.T) {
	libc, err := filepath.EvalSymlinks("/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		if os.Getenv("CI") != "" { // CI's machine kind is Debian amd64 (also under qemu-user)
			t.Fatalf("no x86_64 multiarch libc here (CI: a failure, not a skip): %v", err)
		}
		t.Skip("no x86_64 multiarch libc here")
	}
	dir := t.TempDir()
	evil := filepath.Join(dir, "evil.so")
	if err := os.WriteFile(evil, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	toLibc := filepath.Join(dir, "libc-link.so")
	if err := os.Symlink(libc, toLibc); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		env    []string
		system bool
	}{
		{[]string{"LD_PRELOAD=" + libc}, true},
		{[]string{"LD_PRELOAD=/usr/$LIB/libc.so.6"}, true},
		{[]string{"LD_PRELOAD=libc.so.6"}, true},
		{[]string{"LD_PRELOAD=" + libc + ":" + evil}, false},
		{[]string{"LD_PRELOAD=" + libc + " " + evil}, false},
		{[]string{"LD_PRELOAD=" + evil}, false},
		{[]string{"LD_PRELOAD=/usr/lib/../.." + evil}, false},
		{[]string{"LD_PRELOAD=./evil.so"}, false},
		{[]string{"LD_PRELOAD=$ORIGIN/evil.so"}, false},
		{[]string{"LD_PRELOAD=/usr/$PLATFORM/libc.so.6"}, false},
		{[]string{"LD_PRELOAD=libc.so.6", "LD_LIBRARY_PATH=" + dir}, false},
		{[]string{"LD_PRELOAD=/usr/lib/x86_64-linux-gnu/no-such.so"}, false},
		// A link outside to a system library names that library (the loader maps it).
		{[]string{"LD_PRELOAD=" + toLibc}, true},
	} {
		libs, files, system := UserPreload(EnvList(c.env))
		if system != c.system || len(libs) == 0 {
			t.Errorf("%v: system %v (libs %v), want %v", c.env, system, libs, c.system)
		}
		if system && c.env[0] != "LD_PRELOAD=libc.so.6" && (len(files) == 0 || files[0] != libc) {
			t.Errorf("%v: files %v, want %s first", c.env, files, libc)
		}
	}
	if libs, _, system := UserPreload(EnvList(nil)); libs != nil || system {
		t.Errorf("no LD_PRELOAD: %v %v", libs, system)
	}
}
