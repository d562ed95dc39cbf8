package profiler

import (
	"errors"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/sysprof/sysprof/internal/testutil"
)

// clearMap empties a hash map in one walk, batches of 4,096 and a last partial one included.
func TestClearMapEmptiesInOneWalk(t *testing.T) {
	testutil.RequireRoot(t)
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, n := range []uint32{0, 1, 4096, 10_001} {
		for k := range n {
			if err := m.Put(k, uint64(k)); err != nil {
				t.Fatal(err)
			}
		}
		if err := clearMap[uint32, uint64](m); err != nil {
			t.Fatalf("%d entries: %v", n, err)
		}
		var k uint32
		if err := m.NextKey(nil, &k); !errors.Is(err, ebpf.ErrKeyNotExist) {
			t.Errorf("%d entries: key %d left (%v)", n, k, err)
		}
	}
}
