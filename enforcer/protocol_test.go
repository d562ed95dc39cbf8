package enforcer

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/bpf"

	"github.com/sysprof/sysprof/policy"
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
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out initConfig
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]bpf.RawInstruction(in.Filter), []bpf.RawInstruction(out.Filter)); d != "" {
		t.Errorf("filter after the round trip (-sent +received):\n%s", d)
	}
	var bad initConfig
	if err := json.Unmarshal([]byte(`{"filter":"AAAA"}`), &bad); err == nil {
		t.Errorf("a filter of 3 bytes decoded without error: %v", bad.Filter)
	}
}

// warmJSON encodes zero values of the run's JSON types at every enforce's start: it must
// neither panic nor fail on them.
func TestWarmJSONEncodesZeroValues(t *testing.T) {
	for _, v := range []any{&policy.Profile{}, &initConfig{}, &report.Envelope{Report: &report.Report{}}} {
		if _, err := json.Marshal(v); err != nil {
			t.Errorf("%T: %v", v, err)
		}
	}
	warmJSON()
}
