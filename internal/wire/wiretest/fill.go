// Package wiretest fills values for wire's round-trip tests (apart, so that no program links
// package testing).
package wiretest

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/wire"
)

// Fill, for tests, sets every field wire sends to a value other than its zero, recursively,
// so that a field the encoding lost (or a kind it cannot carry, a field added later included)
// shows in a round trip. seed makes the values differ.
// A pointer back to a type being filled is left nil.
func Fill(t testing.TB, v reflect.Value, seed *int) {
	fill(t, v, seed, map[reflect.Type]bool{})
}

func fill(t testing.TB, v reflect.Value, seed *int, open map[reflect.Type]bool) {
	*seed++
	n := *seed
	if v.Type() == reflect.TypeFor[netip.AddrPort]() {
		v.Set(reflect.ValueOf(netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(n)}), uint16(n))))
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
			fill(t, s.Index(i), seed, open)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fill(t, v.Index(i), seed, open)
		}
	case reflect.Pointer:
		if open[v.Type().Elem()] {
			return
		}
		open[v.Type().Elem()] = true
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), seed, open)
		v.Set(p)
		open[v.Type().Elem()] = false
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(t, k, seed, open)
			fill(t, e, seed, open)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for _, i := range wire.Fields(v.Type()) {
			fill(t, v.Field(i), seed, open)
		}
	default:
		t.Errorf("a field of kind %s (%s): wire cannot carry it", v.Kind(), v.Type())
	}
}
