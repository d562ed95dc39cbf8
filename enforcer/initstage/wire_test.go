package initstage

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sysprof/sysprof/internal/wire"
	"github.com/sysprof/sysprof/internal/wire/wiretest"
	"github.com/sysprof/sysprof/sandbox"
)

// Every field of every message comes back as sent (wire.Fill fills every field: one added to
// Config, sandbox.Plan or Status later too), and every cut of one fails.
func TestProtocolRoundTripsEveryField(t *testing.T) {
	seed := 0
	for _, v := range []any{&Config{}, &Status{}, &Switch{}} {
		in := reflect.New(reflect.TypeOf(v).Elem())
		wiretest.Fill(t, in.Elem(), &seed)
		b, err := wire.Marshal(in.Interface())
		if err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		out := reflect.New(in.Type().Elem())
		if err := wire.Unmarshal(b, out.Interface()); err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		if d := cmp.Diff(in.Interface(), out.Interface(), cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); d != "" {
			t.Errorf("%T after the round trip (-sent +received):\n%s", v, d)
		}
		// Every cut of the message fails, never panics or decodes.
		for i := range len(b) {
			if err := wire.Unmarshal(b[:i], reflect.New(in.Type().Elem()).Interface()); err == nil {
				t.Errorf("%T cut to %d of %d bytes decoded", v, i, len(b))
				break
			}
		}
	}
	// Not sent: a Landlock's MemfdTmpfs is the stage's own fd.
	b, err := wire.Marshal(&sandbox.Landlock{MemfdTmpfs: 9})
	if err != nil {
		t.Fatal(err)
	}
	var ll sandbox.Landlock
	if err := wire.Unmarshal(b, &ll); err != nil || ll.MemfdTmpfs != 0 {
		t.Errorf("MemfdTmpfs sent: %d, %v", ll.MemfdTmpfs, err)
	}
}

func BenchmarkConfigWire(b *testing.B) {
	seed := 0
	var cfg Config
	wiretest.Fill(b, reflect.ValueOf(&cfg).Elem(), &seed)
	for b.Loop() {
		m, _ := wire.Marshal(&cfg)
		var out Config
		_ = wire.Unmarshal(m, &out)
	}
}
