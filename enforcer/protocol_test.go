package enforcer

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/bpf"

	"github.com/sysprof/sysprof/internal/wire"
	"github.com/sysprof/sysprof/report"
)

// The init config carries the seccomp program as packed sock_filter bytes; every field of every
// instruction must come back.
func TestInitConfigFilterRoundTrip(t *testing.T) {
	in := initConfig{Argv: []string{"true"}, Filter: sockFilter{
		{Op: 0x20, Jt: 0, Jf: 0, K: 4},
		{Op: 0x15, Jt: 1, Jf: 2, K: 0xc000003e},
		{Op: 0x06, Jt: 255, Jf: 7, K: 0x7fff0000},
	}}
	b, err := wire.Marshal(&in)
	if err != nil {
		t.Fatal(err)
	}
	var out initConfig
	if err := wire.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]bpf.RawInstruction(in.Filter), []bpf.RawInstruction(out.Filter)); d != "" {
		t.Errorf("filter after the round trip (-sent +received):\n%s", d)
	}
	// Argv ["true"], Dir "", then the filter: 3 bytes, not a whole instruction.
	bad := []byte{2, 4, 't', 'r', 'u', 'e', 0, 3, 1, 2, 3}
	var cut initConfig
	if err := wire.Unmarshal(bad, &cut); err == nil || !strings.Contains(err.Error(), "not whole instructions") {
		t.Errorf("a filter of 3 bytes decoded: %v, %v", cut.Filter, err)
	}
}

// warmJSON encodes zero values of the run's JSON types at every enforce's start: it must
// neither panic nor fail on them.
func TestWarmJSONEncodesZeroValues(t *testing.T) {
	for _, v := range []any{&report.Envelope{Report: &report.Report{}}} {
		if _, err := json.Marshal(v); err != nil {
			t.Errorf("%T: %v", v, err)
		}
	}
	warmJSON()
}
