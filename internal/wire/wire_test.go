package wire_test

import (
	"bufio"
	"bytes"
	"io"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sysprof/sysprof/internal/wire"
	"github.com/sysprof/sysprof/internal/wire/wiretest"
)

type msg struct {
	A    bool
	B    int8
	C    []string
	D    *msg
	E    map[string][]int
	F    netip.AddrPort
	G    []byte
	H    [2]uint16
	I    float64
	Skip int `json:"-"`
	priv int
}

func TestRoundTripAndCuts(t *testing.T) {
	seed := 0
	var in msg
	wiretest.Fill(t, reflect.ValueOf(&in).Elem(), &seed)
	in.Skip, in.priv = 0, 0
	b, err := wire.Marshal(&in)
	if err != nil {
		t.Fatal(err)
	}
	var out msg
	if err := wire.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(in, out, cmp.AllowUnexported(msg{}), cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); d != "" {
		t.Errorf("after the round trip (-sent +received):\n%s", d)
	}
	for i := range len(b) {
		if err := wire.Unmarshal(b[:i], &msg{}); err == nil {
			t.Errorf("cut to %d of %d bytes decoded", i, len(b))
		}
	}
	b, _ = wire.Marshal(&msg{Skip: 3, priv: 4})
	if err := wire.Unmarshal(b, &out); err != nil || out.Skip != 0 || out.priv != 0 {
		t.Errorf("a json:\"-\" or unexported field was sent: %+v, %v", out, err)
	}
}

func TestWireFramesAndBadInput(t *testing.T) {
	var buf bytes.Buffer
	var none *msg
	if err := wire.WriteFrame(&buf, &none); err != nil {
		t.Fatal(err)
	}
	if err := wire.WriteFrame(&buf, &msg{A: true, B: 7, C: []string{"a\nb"}}); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(&buf)
	sw := &msg{A: true}
	if err := wire.ReadFrame(r, &sw); err != nil || sw != nil {
		t.Errorf("nil pointer: %v, %v", sw, err)
	}
	var st msg
	if err := wire.ReadFrame(r, &st); err != nil || !st.A || st.B != 7 || st.C[0] != "a\nb" {
		t.Errorf("status %+v, %v", st, err)
	}
	if err := wire.ReadFrame(r, &st); err != io.EOF {
		t.Errorf("after the last frame: %v, want EOF", err)
	}
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"a length beyond the message", []byte{0x7f, 'a'}},
		{"a slice longer than the message", []byte{0x7f}},
		{"a bool of 2", []byte{2}},
		{"a map key twice", []byte{0, 0, 0, 0, 3, 1, 'k', 0, 1, 'k', 0}},
		{"a pointer mark of 2", []byte{0, 0, 0, 2}},
		{"bytes after the message", append(must(wire.Marshal(&msg{C: []string{"x"}})), 0)},
	} {
		var c msg
		if err := wire.Unmarshal(tc.b, &c); err == nil {
			t.Errorf("%s: decoded %+v", tc.name, c)
		}
	}
	// A recursive type nests as deep as the data says: bounded, not the stack's limit.
	deep := bytes.Repeat([]byte{0, 0, 0, 1}, 1000)
	if err := wire.Unmarshal(deep, &msg{}); err == nil || !strings.Contains(err.Error(), "deeper") {
		t.Errorf("1000 nested values: %v", err)
	}
	// A frame that says it is huge is refused before anything is allocated for it.
	if err := wire.ReadFrame(bufio.NewReader(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff})), &st); err == nil {
		t.Error("a 4 GiB frame was read")
	}
	if _, err := wire.Marshal(&struct{ C chan int }{}); err == nil {
		t.Error("a channel encoded: the decoder has no such kind")
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
