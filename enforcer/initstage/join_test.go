package initstage

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// A join the kernel refuses is an error (the stage then fails the run rather than run the
// command outside its limits), and every file is closed either way.
func TestJoinCgroupsFailsClosed(t *testing.T) {
	if err := joinCgroups([]string{ArgNetNS}, -1); err != nil {
		t.Errorf("no %s: %v, want nothing to join", ArgJoin, err)
	}
	f, err := os.Open(os.DevNull) // read-only: the write fails
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := joinCgroups([]string{ArgJoin + "1"}, fd); err == nil {
		t.Error("a refused join returned no error")
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
		t.Error("the join's file was left open (it would reach the command)")
	}
	if err := joinCgroups([]string{ArgJoin + "x"}, -1); err == nil {
		t.Error("a bad count returned no error")
	}
}
