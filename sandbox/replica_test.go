package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/mountinfo"
	"github.com/sysprof/sysprof/internal/testutil"
)

// replicaReport is what the "replica" role (a stage in a root-idmap user namespace that entered
// the replica) saw.
type replicaReport struct {
	Err       string
	UIDMap    string // its /proc/self/uid_map
	RootOwner string // "uid:gid" of / as it sees it
	Private   string // the first line of a root-owned 0600 file in a 0700 directory, or the error
	RootIdmap bool   // / is an idmapped mount in its mount table
	Mounts    int    // lines of its mountinfo
}

// TestReplica: a stage whose uid 0 is RootUID on the host enters the host's mounts as an
// idmapped replica: root's files are its own (a 0600 file in a 0700 directory reads, / is owned
// by 0), what it creates is owned by 0 on disk, its uid is RootUID on the host, and a mount it
// makes on a clone of a shared host mount does not propagate back to the host. With more mounts
// than one SCM_RIGHTS message carries, all of them arrive.
func TestReplica(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	testutil.WriteFile(t, filepath.Join(dir, "private"), "root only\n", 0o600)
	// A shared host mount: its clone must not carry mounts back to the host.
	shared := filepath.Join(dir, "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", shared, "tmpfs", 0, "mode=0755,size=64k"); err != nil {
		testutil.RequireNoErr(t, "mount a tmpfs", err)
	}
	t.Cleanup(func() { unix.Unmount(shared, unix.MNT_DETACH) })
	if err := unix.Mount("", shared, "", unix.MS_SHARED, ""); err != nil {
		t.Fatal(err)
	}

	// More mounts than one message carries (maxRightsPerMessage).
	many := filepath.Join(dir, "many")
	for i := range maxRightsPerMessage + 20 {
		m := filepath.Join(many, strconv.Itoa(i))
		if err := os.MkdirAll(m, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount(m, m, "", unix.MS_BIND, ""); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Unmount(m, unix.MNT_DETACH) })
	}
	before, err := mountinfo.Read()
	if err != nil {
		t.Fatal(err)
	}

	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	child := os.NewFile(uintptr(pair[1]), "replica")
	defer unix.Close(pair[0])
	id := ChooseIdentity(0, 0, 0, "", "", false, nil, Tree{})
	cmd := exec.Command("/proc/self/exe")
	cmd.Dir = "/"
	cmd.Env = append(withoutRole(os.Environ()), envRole+"=replica", envSpec+"="+dir)
	cmd.ExtraFiles = []*os.File{child}
	cmd.SysProcAttr = (&Plan{}).NamespaceAttr(id)
	cmd.SysProcAttr.Cloneflags &^= syscall.CLONE_NEWPID
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child.Close()
	ns, err := unix.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := PrepareReplica(ns, nil)
	unix.Close(ns)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("PrepareReplica: %v", err)
	}
	if err := r.Send(pair[0]); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("replica stage: %v\n%s", err, out.String())
	}
	var rep replicaReport
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatalf("replica stage said %q: %v", out.String(), err)
	}
	if rep.Err != "" {
		t.Fatalf("replica stage: %s", rep.Err)
	}
	if want := fmt.Sprintf("0 %d 1", RootUID); rep.UIDMap != want {
		t.Errorf("uid_map %q, want %q: uid 0 inside must be RootUID outside", rep.UIDMap, want)
	}
	if rep.RootOwner != "0:0" || rep.Private != "root only" || !rep.RootIdmap {
		t.Errorf("inside: / owned by %s, private file %q, / idmapped %v: want root's files its own", rep.RootOwner, rep.Private, rep.RootIdmap)
	}
	if rep.Mounts < maxRightsPerMessage+20 || rep.Mounts > len(before)+2 {
		t.Errorf("the stage sees %d mounts; the host had %d, %d of them bind mounts for the test", rep.Mounts, len(before), maxRightsPerMessage+20)
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(dir, "made"), &st); err != nil || st.Uid != 0 || st.Gid != 0 {
		t.Errorf("the file it made: %v owner %d:%d, want owned by 0 on disk", err, st.Uid, st.Gid)
	}
	ms, err := mountinfo.Read()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if strings.HasPrefix(m.MountPoint, shared+"/") {
			t.Errorf("a mount the stage made in its replica reached the host: %s (%s)", m.MountPoint, m.FSType)
		}
	}
}

// replicaMain is the "replica" role: receive the replica on fd 3, enter it, look around, mount
// a tmpfs on the shared mount's clone, and print a replicaReport.
func replicaMain() {
	dir := os.Getenv(envSpec)
	var rep replicaReport
	defer func() {
		json.NewEncoder(os.Stdout).Encode(rep)
		os.Exit(0)
	}()
	r, err := ReceiveReplica(3)
	if err == nil {
		err = r.Enter()
	}
	if err != nil {
		rep.Err = err.Error()
		return
	}
	if b, err := os.ReadFile("/proc/self/uid_map"); err == nil {
		rep.UIDMap = strings.Join(strings.Fields(string(b)), " ")
	}
	var st unix.Stat_t
	if err := unix.Stat("/", &st); err == nil {
		rep.RootOwner = fmt.Sprintf("%d:%d", st.Uid, st.Gid)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "private")); err != nil {
		rep.Private = err.Error()
	} else {
		rep.Private = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if f := strings.Fields(l); len(f) > 5 && f[4] == "/" && strings.Contains(f[5], "idmapped") {
				rep.RootIdmap = true
			}
			rep.Mounts++
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "made"), nil, 0o644); err != nil {
		rep.Err = "create a file: " + err.Error()
		return
	}
	sub := filepath.Join(dir, "shared", "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		rep.Err = "mkdir on the shared mount: " + err.Error()
		return
	}
	if err := unix.Mount("tmpfs", sub, "tmpfs", 0, "size=64k"); err != nil {
		rep.Err = "mount on the shared mount's clone: " + err.Error()
	}
}

// TestReachesMount: a mount is carried when a path of the plan is at or below it, or it lies
// on the way to one; a sibling tree is not.
func TestReachesMount(t *testing.T) {
	reach := []string{"/home/u/src/proj", "/usr", "/etc/resolv.conf"}
	for _, tc := range []struct {
		mount string
		want  bool
	}{
		{"/home", true},                  // on the way
		{"/home/u/src/proj/build", true}, // below a path
		{"/usr/local", true},             // below a path
		{"/etc/resolv.conf", true},       // the path itself
		{"/var/lib/docker/overlay2/x", false},
		{"/home/u/other", false},
		{"/usrx", false},
	} {
		if got := reaches(tc.mount, reach); got != tc.want {
			t.Errorf("reaches(%s) = %v, want %v", tc.mount, got, tc.want)
		}
	}
	p := &Plan{Writable: []string{"/w"}, PrivateTmp: true, Staged: []Stage{{Path: "/s", Upper: "/tmp/u", Work: "/tmp/w"}},
		Landlock: &Landlock{Read: []string{"/r"}, Exec: []string{"/x"}}}
	got := strings.Join(p.Reach(), " ")
	for _, want := range []string{"/w", "/s", "/tmp/u", "/r", "/x"} {
		if !strings.Contains(" "+got+" ", " "+want+" ") {
			t.Errorf("Reach() = %s: lacks %s", got, want)
		}
	}
	if strings.Contains(" "+got+" ", " /tmp ") {
		t.Errorf("Reach() = %s: the private tmp covers the host's /tmp, it needs no mount of it", got)
	}
}
