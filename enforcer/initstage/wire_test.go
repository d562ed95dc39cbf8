package initstage

import (
	"bufio"
	"bytes"
	"io"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sysprof/sysprof/sandbox"
)

// fill sets every field the protocol sends to a value other than its zero, recursively, so
// that a field the encoding lost (or a kind it cannot carry, a field added later included)
// shows in the round trip.
func fill(t *testing.T, v reflect.Value, seed *int) {
	*seed++
	n := *seed
	if v.Type() == reflect.TypeFor[netip.AddrPort]() {
		v.Set(reflect.ValueOf(netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(n)}), uint16(n))))
		return
	}
	if v.Type() == reflect.TypeFor[SockFilter]() {
		v.Set(reflect.ValueOf(SockFilter{{Op: uint16(n), Jt: 1, Jf: 2, K: 0xc000003e}, {Op: 6, K: uint32(n)}}))
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(-n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(uint64(n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(n) + 0.5)
	case reflect.String:
		v.SetString(strings.Repeat("x", n%5+1) + "\n\x00é")
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(t, s.Index(i), seed)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fill(t, v.Index(i), seed)
		}
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), seed)
		v.Set(p)
	case reflect.Struct:
		for _, i := range typeOf(v.Type()).fields {
			fill(t, v.Field(i), seed)
		}
	default:
		t.Errorf("a field of kind %s (%s): the protocol cannot carry it", v.Kind(), v.Type())
	}
}

// Every field of every message comes back as sent: a field added to Config, sandbox.Plan or
// Status later is filled here too.
func TestWireRoundTripsEveryField(t *testing.T) {
	seed := 0
	for _, v := range []any{&Config{}, &Status{}, &Switch{}} {
		in := reflect.New(reflect.TypeOf(v).Elem())
		fill(t, in.Elem(), &seed)
		b, err := Marshal(in.Interface())
		if err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		out := reflect.New(in.Type().Elem())
		if err := Unmarshal(b, out.Interface()); err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		if d := cmp.Diff(in.Interface(), out.Interface(), cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); d != "" {
			t.Errorf("%T after the round trip (-sent +received):\n%s", v, d)
		}
		// Every cut of the message fails, never panics or decodes.
		for i := range len(b) {
			if err := Unmarshal(b[:i], reflect.New(in.Type().Elem()).Interface()); err == nil {
				t.Errorf("%T cut to %d of %d bytes decoded", v, i, len(b))
				break
			}
		}
	}
	// Not sent: a Landlock's MemfdTmpfs is the stage's own fd.
	b, err := Marshal(&sandbox.Landlock{MemfdTmpfs: 9})
	if err != nil {
		t.Fatal(err)
	}
	var ll sandbox.Landlock
	if err := Unmarshal(b, &ll); err != nil || ll.MemfdTmpfs != 0 {
		t.Errorf("MemfdTmpfs sent: %d, %v", ll.MemfdTmpfs, err)
	}
}

func TestWireFramesAndBadInput(t *testing.T) {
	var buf bytes.Buffer
	var none *Switch
	if err := WriteFrame(&buf, &none); err != nil {
		t.Fatal(err)
	}
	if err := WriteFrame(&buf, &Status{Ready: true, Listener: 7, Notes: []string{"a\nb"}}); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(&buf)
	sw := &Switch{Ambient: []uintptr{1}}
	if err := ReadFrame(r, &sw); err != nil || sw != nil {
		t.Errorf("nil Switch: %v, %v", sw, err)
	}
	var st Status
	if err := ReadFrame(r, &st); err != nil || !st.Ready || st.Listener != 7 || st.Notes[0] != "a\nb" {
		t.Errorf("status %+v, %v", st, err)
	}
	if err := ReadFrame(r, &st); err != io.EOF {
		t.Errorf("after the last frame: %v, want EOF", err)
	}
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"a length beyond the message", []byte{0x7f, 'a'}},
		{"a slice longer than the message", []byte{0x7f}},
		{"a bool of 2", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 2}},
		{"bytes after the message", append(must(Marshal(&Config{Argv: []string{"x"}})), 0)},
	} {
		var c Config
		if err := Unmarshal(tc.b, &c); err == nil {
			t.Errorf("%s: decoded %+v", tc.name, c)
		}
	}
	// A frame that says it is huge is refused before anything is allocated for it.
	if err := ReadFrame(bufio.NewReader(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff})), &st); err == nil {
		t.Error("a 4 GiB frame was read")
	}
	if _, err := Marshal(&struct{ M map[string]int }{}); err == nil {
		t.Error("a map encoded: the decoder has no such kind")
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func BenchmarkWireConfig(b *testing.B) {
	seed := 0
	var cfg Config
	fill(&testing.T{}, reflect.ValueOf(&cfg).Elem(), &seed)
	for b.Loop() {
		m, _ := Marshal(&cfg)
		var out Config
		_ = Unmarshal(m, &out)
	}
}
