package synth

import (
	"testing"

	"github.com/sysprof/sysprof/trace"
)

// A thread a runtime starts around an epoll instance may exit with the process before it waits
// (rustup's tokio thread reached epoll_wait in some runs only): creating the instance allows the
// waits, or enforcement reports a false denial.
func TestEpollCreateAllowsTheWaits(t *testing.T) {
	exe := "/home/a/.cargo/bin/rustup"
	tr := &trace.Trace{
		Version:   trace.Version,
		Command:   []string{"cargo", "build"},
		Context:   map[string]string{"WORKDIR": "/w", "HOME": "/home/a", "TMPDIR": "/tmp"},
		Host:      trace.Host{Kernel: "6.18", Arch: trace.ArchX86_64},
		Processes: []trace.Process{{ID: 1, PID: 10, Exe: exe}},
		Syscalls:  []trace.SyscallCount{{Exe: exe, Arch: trace.ArchX86_64, Name: "epoll_create1", Nr: 291, Count: 1}},
	}
	res, err := Synthesize(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{}
	for _, sc := range res.Profile.Syscalls.Allow {
		allowed[sc.Name] = true
	}
	for _, want := range []string{"epoll_create1", "epoll_wait", "epoll_pwait", "epoll_pwait2"} {
		if !allowed[want] {
			t.Errorf("%s not allowed after epoll_create1: %v", want, allowed)
		}
	}
}
