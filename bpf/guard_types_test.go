package bpf

import (
	"encoding/binary"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// TestGuardStructSizes checks that the Go structs bpf2go generated for guard.c have the size
// of the C structs: user space decodes an event's tail at sizeof(struct guard_event).
func TestGuardStructSizes(t *testing.T) {
	spec, err := LoadGuard()
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{
		"guard_event": GuardGuardEvent{},
		"hidden_path": GuardHiddenPath{},
		"run_cfg":     GuardRunCfg{},
	} {
		var s *btf.Struct
		if err := spec.Types.TypeByName(name, &s); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := binary.Size(v); got != int(s.Size) {
			t.Errorf("%s: Go binary.Size %d, C sizeof %d", name, got, s.Size)
		}
	}
}
