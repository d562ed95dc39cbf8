package hostcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/mountinfo"
	"github.com/sysprof/sysprof/internal/testutil"
)

func TestRender(t *testing.T) {
	cs := []Check{
		{Name: CheckBTF, For: ForLearn, Status: Available, Detail: "/sys/kernel/btf/vmlinux"},
		{Name: CheckTracefs, For: ForLearn, Status: Missing, Reason: "tracefs not mounted", Remedy: "mount tracefs"},
		{Name: CheckLandlock, For: ForEnforce, Status: Available, Detail: "ABI 3", Reason: "no TCP ports", Remedy: "kernel ≥ 6.7"},
		{Name: CheckRingBuf, For: ForLearn, Status: Unknown, Reason: "needs CAP_BPF", Remedy: runAsRoot},
		{Name: CheckFentryLSM, For: ForLearn, Status: Missing, Optional: true, Reason: "EPERM"},
	}
	var buf bytes.Buffer
	if err := Render(&buf, cs); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"check", "for", "status", "detail", "reason / remedy",
		"btf", "/sys/kernel/btf/vmlinux",
		"tracefs", "missing", "tracefs not mounted. Fix: mount tracefs",
		"landlock", "ABI 3", "no TCP ports. Fix: kernel ≥ 6.7",
		"ring buffer", "unknown", "needs CAP_BPF. Fix: run as root to check",
		"fentry/lsm bpf", "missing (optional)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// One line per check plus header and borders: nothing wrapped in this fixture.
	if got, want := strings.Count(out, "\n"), len(cs)+4; got != want {
		t.Errorf("table has %d lines, want %d:\n%s", got, want, out)
	}
}

func TestRenderWrapsLongRemedies(t *testing.T) {
	long := strings.Repeat("word ", 40)
	var buf bytes.Buffer
	if err := Render(&buf, []Check{{Name: "x", For: ForLearn, Status: Missing, Remedy: long}}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "word"); n != 40 {
		t.Errorf("wrapped table shows %d of 40 words:\n%s", n, buf.String())
	}
}

func TestRenderError(t *testing.T) {
	if err := Render(failWriter{}, []Check{{Name: "x"}}); err == nil {
		t.Error("Render to a failing writer returned nil")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestLearnPossible(t *testing.T) {
	ok := func(name, for_ string) Check { return Check{Name: name, For: for_, Status: Available} }
	with := func(c Check, s Status) Check { c.Status = s; return c }
	opt := func(c Check) Check { c.Optional = true; return c }
	base := []Check{ok("priv", ForLearn), ok("cg", ForBoth), ok("ll", ForEnforce)}
	for _, tc := range []struct {
		name string
		cs   []Check
		want bool
	}{
		{"all available", base, true},
		{"none", nil, false},
		{"only enforce checks", []Check{ok("ll", ForEnforce)}, false},
		{"learn missing", append(clone(base), with(ok("btf", ForLearn), Missing)), false},
		{"learn unknown", append(clone(base), with(ok("btf", ForLearn), Unknown)), false},
		{"both missing", append(clone(base), with(ok("sock", ForBoth), Missing)), false},
		{"enforce missing", append(clone(base), with(ok("userns", ForEnforce), Missing)), true},
		{"optional learn missing", append(clone(base), opt(with(ok("fentry", ForLearn), Missing))), true},
		{"optional learn unknown", append(clone(base), opt(with(ok("fentry", ForLearn), Unknown))), true},
		{"zero-value status", append(clone(base), Check{Name: "z", For: ForLearn}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LearnPossible(tc.cs); got != tc.want {
				t.Errorf("LearnPossible = %v, want %v", got, tc.want)
			}
			if err := LearnErr(tc.cs); (err == nil) != tc.want && len(tc.cs) > 0 {
				t.Errorf("LearnErr = %v, LearnPossible %v", err, tc.want)
			}
		})
	}
}

func clone(cs []Check) []Check { return append([]Check(nil), cs...) }

func TestCheckErr(t *testing.T) {
	if err := (Check{Name: "a", Status: Available}).Err(); err != nil {
		t.Errorf("available: %v", err)
	}
	err := Check{Name: CheckLandlock, Status: Missing, Reason: "ENOSYS", Remedy: "new kernel"}.Err()
	if !errors.Is(err, ErrNotSupported) {
		t.Errorf("%v does not match ErrNotSupported", err)
	}
	var ue *UnsupportedError
	if !errors.As(err, &ue) || ue.Feature != CheckLandlock || ue.Remedy != "new kernel" {
		t.Errorf("errors.As: %#v", ue)
	}
	if want := "landlock: not supported: ENOSYS (new kernel)"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
	err = Check{Name: "x", Status: Unknown, Reason: "needs root"}.Err()
	if !strings.Contains(err.Error(), "could not tell") {
		t.Errorf("unknown check error %q does not say it could not tell", err)
	}
}

func TestStatusText(t *testing.T) {
	for _, s := range []Status{Available, Missing, Unknown} {
		b, err := json.Marshal(Check{Status: s})
		if err != nil {
			t.Fatal(err)
		}
		var c Check
		if err := json.Unmarshal(b, &c); err != nil || c.Status != s {
			t.Errorf("round trip of %v: %s -> %v, %v", s, b, c.Status, err)
		}
	}
	if Status(0) != Unknown {
		t.Error("the zero Status must be Unknown")
	}
}

const mountinfoHybrid = `22 28 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
25 22 0:23 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
26 25 0:24 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
27 25 0:25 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:11 - cgroup cgroup rw,xattr,name=systemd
31 22 0:12 / /sys/kernel/debug rw,nosuid,nodev,noexec,relatime shared:14 - debugfs debugfs rw
40 28 0:40 / /mnt/with\040space rw,relatime shared:20 - tmpfs my\040src rw
`

func TestParseMountinfo(t *testing.T) {
	ms, err := mountinfo.Parse(strings.NewReader(mountinfoHybrid))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 6 {
		t.Fatalf("got %d entries, want 6", len(ms))
	}
	if got := ms[5]; got.MountPoint != "/mnt/with space" || got.Source != "my src" || got.FSType != "tmpfs" {
		t.Errorf("escaped entry: %+v", got)
	}
	if p, err := cgroup2From(ms); err != nil || p != "/sys/fs/cgroup/unified" {
		t.Errorf("cgroup2From = %q, %v", p, err)
	}
	// Only debugfs: tracing under it, if it is really tracing.
	p, err := tracefsFrom(ms, func(p string) bool { return p == "/sys/kernel/debug/tracing" })
	if err != nil || p != "/sys/kernel/debug/tracing" {
		t.Errorf("tracefsFrom(debugfs) = %q, %v", p, err)
	}
	_, err = tracefsFrom(ms, func(string) bool { return false })
	if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "mount -t tracefs") {
		t.Errorf("tracefsFrom(nothing) = %v, want an UnsupportedError with the mount remedy", err)
	}
	withTracefs := append(ms, mountinfo.Entry{Root: "/", MountPoint: "/sys/kernel/tracing", FSType: "tracefs"})
	if p, err := tracefsFrom(withTracefs, func(string) bool { return true }); err != nil || p != "/sys/kernel/tracing" {
		t.Errorf("tracefsFrom(tracefs) = %q, %v", p, err)
	}

	unified, err := mountinfo.Parse(strings.NewReader(
		"30 24 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := cgroup2From(unified); err != nil || p != "/sys/fs/cgroup" {
		t.Errorf("unified: cgroup2From = %q, %v", p, err)
	}
	if _, err := cgroup2From(ms[:1]); !errors.Is(err, ErrNotSupported) {
		t.Errorf("no cgroup2: %v, want ErrNotSupported", err)
	}
	if _, err := mountinfo.Parse(strings.NewReader("garbage line\n")); err == nil {
		t.Error("malformed mountinfo parsed without error")
	}
}

func TestLandlockLostFeatures(t *testing.T) {
	// The table the landlock check explains a low ABI with: TCP ports need 4, scoping 6.
	need := map[string]int{"TCP": 4, "scoping": 6}
	for what, abi := range need {
		found := false
		for _, f := range landlockFeatures {
			if strings.Contains(f.adds, what) {
				found = true
				if f.abi != abi {
					t.Errorf("%s listed under ABI %d, want %d", what, f.abi, abi)
				}
			}
		}
		if !found {
			t.Errorf("no Landlock feature mentions %s", what)
		}
	}
}

// TestRunOnThisHost: on the project's machines (root, kernel 6.18) everything sysprof needs is
// there. fentry/LSM are expected to be missing and are not checked.
func TestRunOnThisHost(t *testing.T) {
	testutil.RequireRoot(t)
	cs := Run()
	for _, name := range []string{
		CheckPrivLearn, CheckPrivEnforce, CheckBTF, CheckTracefs, CheckTracepoints, CheckCgroup2,
		CheckRingBuf, CheckCgroupSockAddr, CheckLandlock, CheckSeccompNotif, CheckUserns,
		CheckNetns, CheckMountns, CheckPidfdGetfd, CheckIdmapRoot,
	} {
		c, ok := Find(cs, name)
		if !ok {
			t.Errorf("Run has no %q check", name)
			continue
		}
		if c.Status != Available {
			t.Errorf("%s: %v: %s (%s)", name, c.Status, c.Reason, c.Remedy)
		}
	}
	if !LearnPossible(cs) {
		t.Errorf("LearnPossible = false: %v", LearnErr(cs))
	}
	if c, _ := Find(cs, CheckLandlock); !strings.HasPrefix(c.Detail, "ABI ") {
		t.Errorf("landlock detail %q does not show the ABI", c.Detail)
	}
	abi, err := LandlockABI()
	if err != nil || abi < 1 {
		t.Errorf("LandlockABI = %d, %v", abi, err)
	}

	// Cached, and a copy.
	cs[0].Status = Missing
	if again := Run(); again[0].Status != Available {
		t.Error("Run returned the cache itself: a caller's change leaked into it")
	}

	// No side effects: no probe cgroup left behind.
	mnt, err := Cgroup2Mount()
	if err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(mnt, "sysprof-doctor-*"))
	if len(left) > 0 {
		t.Errorf("probe cgroups left behind: %v", left)
	}
}

func TestCgroup2Mount(t *testing.T) {
	p, err := Cgroup2Mount()
	testutil.RequireNoErr(t, "cgroup2 mount", err)
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		t.Errorf("%s has fs magic %#x, want CGROUP2_SUPER_MAGIC", p, st.Type)
	}
}

const helperEnv = "SYSPROF_HOSTCHECK_HELPER"

// TestMain makes the test binary TestRunAsNobody's helper when it runs it as an ordinary user:
// it prints Run() as JSON and exits.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		if err := json.NewEncoder(os.Stdout).Encode(Run()); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestRunAsNobody: probes that need root answer Unknown ("could not tell"), not Missing, for an
// ordinary user, and learning is reported impossible.
func TestRunAsNobody(t *testing.T) {
	testutil.RequireRoot(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "hostcheck-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "hostcheck.test")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Dir = dir
	cmd.Env = []string{helperEnv + "=1", "PATH=" + os.Getenv("PATH")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper as nobody: %v\n%s\n%s", err, out, stderr.String())
	}
	line, _, _ := bytes.Cut(out, []byte("\n"))
	var cs []Check
	if err := json.Unmarshal(line, &cs); err != nil {
		t.Fatalf("decode helper output: %v\n%s", err, out)
	}
	want := map[string]Status{
		CheckPrivLearn:      Missing,
		CheckTracepoints:    Unknown,
		CheckCgroup2:        Unknown,
		CheckRingBuf:        Unknown,
		CheckCgroupSockAddr: Unknown,
		CheckFentryLSM:      Unknown,
		CheckBTF:            Available,
		CheckLandlock:       Available,
		CheckSeccompNotif:   Available,
	}
	for name, st := range want {
		c, ok := Find(cs, name)
		if !ok {
			t.Errorf("no %q check", name)
			continue
		}
		if c.Status != st {
			t.Errorf("as nobody, %s = %v (%s), want %v", name, c.Status, c.Reason, st)
		}
		if c.Status != Available && (c.Reason == "" || c.Remedy == "") {
			t.Errorf("as nobody, %s is %v without reason and remedy: %+v", name, c.Status, c)
		}
	}
	if LearnPossible(cs) {
		t.Error("LearnPossible as nobody = true")
	}
}
