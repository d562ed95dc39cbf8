package bpf

import (
	"encoding/binary"
	"testing"
	"unsafe"

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
	switch v := v.(type) {
	case LearnExecEvent:
		return int(unsafe.Sizeof(v))
	case LearnForkEvent:
		return int(unsafe.Sizeof(v))
	case LearnExitEvent:
		return int(unsafe.Sizeof(v))
	case LearnFileEvent:
		return int(unsafe.Sizeof(v))
	case LearnUnixEvent:
		return int(unsafe.Sizeof(v))
	case LearnNetEvent:
		return int(unsafe.Sizeof(v))
	case LearnDnsEvent:
		return int(unsafe.Sizeof(v))
	case LearnScKey:
		return int(unsafe.Sizeof(v))
	case LearnArgKey:
		return int(unsafe.Sizeof(v))
	case LearnTaskInfo:
		return int(unsafe.Sizeof(v))
	case LearnStash:
		return int(unsafe.Sizeof(v))
	}
	return -1
}
