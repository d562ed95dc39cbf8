package synth

import (
	"testing"

	"github.com/sysprof/sysprof/trace"
)

// A learn run without a controlling terminal sees /dev/tty fail with ENXIO; the profile must
// still let the tool open it where a terminal exists, or enforcement reports a false denial.
func TestFailedTTYOpenIsAllowed(t *testing.T) {
	tr := &trace.Trace{
		Version:   trace.Version,
		Command:   []string{"make"},
		Context:   map[string]string{"WORKDIR": "/w", "HOME": "/home/a", "TMPDIR": "/tmp"},
		Host:      trace.Host{Kernel: "6.18", Arch: trace.ArchX86_64},
		Processes: []trace.Process{{ID: 1, PID: 10, Exe: "/usr/bin/bash"}},
		Files: []trace.FileAccess{
			{Exe: "/usr/bin/bash", Path: "/dev/tty", Access: trace.AccessWrite, OK: false, Errno: 6, Count: 1},
			{Exe: "/usr/bin/bash", Path: "/etc/missing.conf", Access: trace.AccessRead, OK: false, Errno: 2, Count: 1},
		},
	}
	res, err := Synthesize(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := map[string]string{"WORKDIR": "/w", "HOME": "/home/b", "TMPDIR": "/tmp"}
	if !Allows(res.Profile, ctx, Access{Kind: trace.AccessWrite, Path: "/dev/tty"}) {
		t.Errorf("/dev/tty write not allowed: %+v", res.Profile.Filesystem)
	}
	if Allows(res.Profile, ctx, Access{Kind: trace.AccessRead, Path: "/etc/missing.conf"}) {
		t.Errorf("a failed probe of an ordinary file must not become a rule")
	}
}

func TestSecretTouchesAreReported(t *testing.T) {
	tr := &trace.Trace{
		Version:   trace.Version,
		Command:   []string{"make"},
		Context:   map[string]string{"WORKDIR": "/w", "HOME": "/home/a", "TMPDIR": "/tmp"},
		Host:      trace.Host{Kernel: "6.18", Arch: trace.ArchX86_64},
		Processes: []trace.Process{{ID: 1, PID: 10, Exe: "/usr/bin/make"}},
		Files: []trace.FileAccess{
			{Exe: "/usr/bin/make", Path: "/home/a/.ssh/id_test", Access: trace.AccessRead, OK: true, Count: 1},
		},
	}
	res, err := Synthesize(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.SecretTouches) != 1 || res.SecretTouches[0].Path != "$HOME/.ssh/id_test" || res.SecretTouches[0].Store != "$HOME/.ssh" {
		t.Fatalf("SecretTouches = %+v, want the read of $HOME/.ssh/id_test", res.SecretTouches)
	}
}
