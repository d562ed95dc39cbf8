package enforcer

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/report"
)

func TestSuggest(t *testing.T) {
	p := testProfile()
	p.Syscalls.Architectures = []string{"x86_64"}
	c, err := Compile(p, Env{Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	a := func(xs ...uint64) (r [6]uint64) { copy(r[:], xs); return }
	for _, tc := range []struct {
		abi, name string
		arch, nr  uint32
		args      [6]uint64
		want      string
	}{
		{"x86_64", "ptrace", x86, nr64("ptrace"), a(), "syscalls.allow: + ptrace"},
		{"i386", "getpid", i386, nr32("getpid"), a(), "syscalls.architectures: + i386"},
		{"x32", "getpid", x86, nrx32("getpid"), a(), "syscalls.architectures: + x32"},
		{"x86_64", "socket", x86, nr64("socket"), a(unix.AF_NETLINK, unix.SOCK_DGRAM), "syscalls.args: socket arg 0: + AF_NETLINK"},
		{"x86_64", "socket", x86, nr64("socket"), a(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC), "syscalls.args: socket arg 1: + SOCK_RAW"},
		{"x86_64", "clone", x86, nr64("clone"), a(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | 17), "syscalls.args: clone arg 0: + CLONE_NEWNS|CLONE_NEWUSER"},
	} {
		_, got := c.suggest(tc.abi, tc.name, tc.arch, tc.nr, tc.args)
		if got != tc.want {
			t.Errorf("%s %s%v: suggest %q, want %q", tc.abi, tc.name, tc.args[:3], got, tc.want)
		}
	}
}

func TestSupervisorAggregatesAndBounds(t *testing.T) {
	s := &supervisor{}
	for i := range maxDistinct + 10 {
		d := report.Denial{Kind: report.KindSyscall, Syscall: "ioctl", What: "ioctl(0x" + strconv.Itoa(i) + ")", Exe: "/x", Suggest: "syscalls.args: ioctl arg 1: + " + strconv.Itoa(i), Count: 1}
		s.record(d)
		s.record(d)
	}
	// Past the bound, a call of a kind not listed yet is still listed (a ptrace after a flood of
	// ioctls), up to twice the bound in all.
	s.record(report.Denial{Kind: report.KindSyscall, Syscall: "ptrace", What: "ptrace(PTRACE_ATTACH, pid 1)", Exe: "/x", Count: 1})
	got, dropped := s.take()
	if len(got) != maxDistinct+1 || dropped != 20 {
		t.Fatalf("kept %d dropped %d, want %d and 20", len(got), dropped, maxDistinct+1)
	}
	if got[0].Count != 2 {
		t.Errorf("count %d, want 2 (same call twice)", got[0].Count)
	}
	if got[maxDistinct].Syscall != "ptrace" {
		t.Errorf("the ptrace after the flood is not listed: %+v", got[maxDistinct])
	}
	for i := range 2*maxDistinct + 10 {
		s.record(report.Denial{Kind: report.KindSyscall, Syscall: "ptrace", Exe: "/x" + strconv.Itoa(i), Count: 1})
	}
	if got, dropped := s.take(); len(got) != 2*maxDistinct || dropped != 10 {
		t.Fatalf("new kinds without end: kept %d dropped %d, want %d and 10", len(got), dropped, 2*maxDistinct)
	}
}

func TestSupervisorAggregatesPerSuggestion(t *testing.T) {
	s := &supervisor{}
	for _, path := range []string{"a", "b", "c"} {
		s.record(report.Denial{Kind: report.KindSyscall, Syscall: "utimensat", What: "utimensat(\"" + path + "\")", Exe: "/usr/bin/git", Suggest: "syscalls.allow: + utimensat", Count: 1})
	}
	got, _ := s.take()
	if len(got) != 1 || got[0].Count != 3 || got[0].What != `utimensat("a")` {
		t.Errorf("got %+v, want one entry, count 3, the first call as example", got)
	}
}

// A refused call naming a protected path is an entry of its own (the record names each hook
// or workflow written), while other paths stay one entry per suggestion.
func TestSupervisorNamesProtectedPaths(t *testing.T) {
	s := &supervisor{compiled: &Compiled{vars: map[string]string{"WORKDIR": "/w", "HOME": "/h"}}}
	for _, path := range []string{"/w/a", "/w/.github", "/h/.config/autostart", "/w/b", "/w/.github"} {
		s.record(report.Denial{Kind: report.KindSyscall, Syscall: "mkdir", What: "mkdir(\"" + path + "\")", Exe: "/usr/bin/python3", Suggest: "syscalls.allow: + mkdir", Count: 1})
	}
	got, _ := s.take()
	var whats []string
	for _, d := range got {
		whats = append(whats, fmt.Sprintf("%s %d", d.What, d.Count))
	}
	if want := []string{`mkdir("/w/a") 2`, `mkdir("/w/.github") 2`, `mkdir("/h/.config/autostart") 1`}; !slices.Equal(whats, want) {
		t.Errorf("got %q, want %q", whats, want)
	}
}

// The supervisor walks a caller's parents only for a denial it will list: a repeat (or one past
// the bound) is only counted, so known says so before the walk.
func TestSupervisorKnownOnlyForRepeats(t *testing.T) {
	s := &supervisor{}
	d := report.Denial{Kind: report.KindSyscall, Syscall: "ptrace", Exe: "/usr/bin/x", Suggest: "syscalls.allow: + ptrace", Count: 1}
	if s.known(d) {
		t.Fatal("a first denial is known")
	}
	s.record(d)
	if !s.known(d) {
		t.Error("a repeat is not known")
	}
	other := d
	other.Exe = "/usr/bin/y"
	if s.known(other) {
		t.Error("another executable's denial is known")
	}
	for i := range maxDistinct {
		other.Exe = "/z" + strconv.Itoa(i)
		s.record(other)
	}
	other.Exe, other.Suggest = "/z0", "syscalls.args: ioctl arg 1: + 0x1"
	if !s.known(other) {
		t.Error("a denial past the bound of a kind listed already (only counted) is not known")
	}
	other.Exe = "/past-the-bound"
	if s.known(other) {
		t.Error("a denial past the bound of a kind not listed yet is only counted")
	}
}

// TestDescribePrlimit: a refused prlimit64 says whose limit, which, and whether it was set.
func TestDescribePrlimit(t *testing.T) {
	for _, tc := range []struct {
		args [6]uint64
		want string
	}{
		{[6]uint64{1, unix.RLIMIT_NOFILE, 0x1000, 0}, "prlimit64(pid 1, RLIMIT_NOFILE, set)"},
		{[6]uint64{4242, unix.RLIMIT_NPROC, 0, 0x1000}, "prlimit64(pid 4242, RLIMIT_NPROC, read)"},
		{[6]uint64{7, 99, 0, 0x1000}, "prlimit64(pid 7, resource 99, read)"},
	} {
		if got := describeCall(0, "prlimit64", tc.args); got != tc.want {
			t.Errorf("describeCall(%v) = %q, want %q", tc.args, got, tc.want)
		}
	}
}
