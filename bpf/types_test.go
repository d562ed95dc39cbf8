package bpf

import (
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// TestSharedStructSizes checks that the Go structs bpf2go generated have the size of the C
// structs in the committed object: user space decodes the variable-length tail of an event at
// sizeof(header), exactly where learn.c writes it.
func TestSharedStructSizes(t *testing.T) {
	spec, err := LoadLearn()
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{
		"exec_event": LearnExecEvent{},
		"fork_event": LearnForkEvent{},
		"exit_event": LearnExitEvent{},
		"file_event": LearnFileEvent{},
		"unix_event": LearnUnixEvent{},
		"net_event":  LearnNetEvent{},
		"dns_event":  LearnDnsEvent{},
		"sc_key":     LearnScKey{},
		"arg_key":    LearnArgKey{},
		"task_info":  LearnTaskInfo{},
		"stash":      LearnStash{},
		"cpu_cache":  LearnCpuCache{},
		"run_state":  LearnRunState{},
	} {
		var s *btf.Struct
		if err := spec.Types.TypeByName(name, &s); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := binary.Size(v); got != int(s.Size) {
			t.Errorf("%s: Go binary.Size %d, C sizeof %d", name, got, s.Size)
		}
		if got := reflectSize(v); got != int(s.Size) {
			t.Errorf("%s: Go unsafe.Sizeof %d, C sizeof %d", name, got, s.Size)
		}
	}
}

func reflectSize(v any) int {
	return int(reflect.TypeOf(v).Size())
}
