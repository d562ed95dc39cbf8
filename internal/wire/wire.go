// Package wire is a compact binary encoding of plain Go values for messages between two
// copies of one sysprof build (the init stage's protocol, the profile cache keyed by the
// binary): both sides walk the same types field by field in declaration order, so no names,
// tags or per-type encoders are needed (encoding/json's reflection costs ~1 ms of CPU a run).
// A value of a kind this does not know fails the encode. Fields tagged `json:"-"` and
// unexported fields are not sent. Nothing here trusts its input: lengths are bounded by the
// bytes left, a cut or trailing byte is an error.
//
// Encoding: bool one byte; signed integers zigzag varints, unsigned ones varints; floats their
// IEEE bits; strings and []byte a length and the bytes; slices and maps 0 for nil, else
// 1+length and the elements (a map's keys and values in turn); pointers 0 for nil, else 1 and
// the element; structs their fields; a type with MarshalBinary/UnmarshalBinary its binary form.
package wire

import (
	"bufio"
	"encoding"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sync"
)

var (
	binMarshaler   = reflect.TypeFor[encoding.BinaryMarshaler]()
	binUnmarshaler = reflect.TypeFor[encoding.BinaryUnmarshaler]()
	wireTypes      sync.Map // reflect.Type -> *wireType
)

// wireType is what the encoding needs to know of a type, found once per type.
type wireType struct {
	binary bool  // sent in its MarshalBinary form
	fields []int // a struct's fields that are sent
}

// Marshal encodes *v (v a pointer, as Unmarshal's).
func Marshal(v any) ([]byte, error) {
	return marshalAppend(nil, v)
}

func marshalAppend(b []byte, v any) ([]byte, error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil, errors.New("BUG: marshal of a non-pointer")
	}
	return appendValue(b, rv.Elem())
}

// Unmarshal decodes b, all of it, into v (a pointer).
func Unmarshal(b []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return errors.New("BUG: unmarshal into a non-pointer")
	}
	d := decoder{b: b}
	d.value(rv.Elem())
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("%d bytes after the message", len(d.b))
	}
	return d.err
}

// WriteFrame writes v as one frame: its length (4 bytes, little endian) and its encoding.
func WriteFrame(w io.Writer, v any) error {
	b, err := marshalAppend(make([]byte, 4, 256), v)
	if err != nil {
		return err
	}
	if len(b)-4 > math.MaxUint32 {
		return errors.New("message too large")
	}
	binary.LittleEndian.PutUint32(b, uint32(len(b)-4))
	_, err = w.Write(b)
	return err
}

// ReadFrame reads one frame written by WriteFrame into v; io.EOF when none began.
func ReadFrame(r *bufio.Reader, v any) error {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("a cut frame: %w", err)
		}
		return err
	}
	size := binary.LittleEndian.Uint32(n[:])
	if size > 64<<20 {
		return fmt.Errorf("a frame of %d bytes", size)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return fmt.Errorf("a cut frame: %w", err)
	}
	return Unmarshal(b, v)
}

// Fields are the indexes of struct type t's fields that are sent.
func Fields(t reflect.Type) []int { return typeOf(t).fields }

func typeOf(t reflect.Type) *wireType {
	if w, ok := wireTypes.Load(t); ok {
		return w.(*wireType)
	}
	w := &wireType{binary: t.Implements(binMarshaler) && reflect.PointerTo(t).Implements(binUnmarshaler)}
	if t.Kind() == reflect.Struct {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			w.fields = append(w.fields, i)
		}
	}
	wireTypes.Store(t, w)
	return w
}

func appendValue(b []byte, v reflect.Value) ([]byte, error) {
	t := v.Type()
	w := typeOf(t)
	if w.binary {
		m, err := v.Interface().(encoding.BinaryMarshaler).MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t, err)
		}
		b = binary.AppendUvarint(b, uint64(len(m)))
		return append(b, m...), nil
	}
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			return append(b, 1), nil
		}
		return append(b, 0), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return binary.AppendVarint(b, v.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return binary.AppendUvarint(b, v.Uint()), nil
	case reflect.Float32, reflect.Float64:
		return binary.AppendUvarint(b, math.Float64bits(v.Float())), nil
	case reflect.String:
		b = binary.AppendUvarint(b, uint64(v.Len()))
		return append(b, v.String()...), nil
	case reflect.Slice:
		if v.IsNil() {
			return append(b, 0), nil
		}
		b = binary.AppendUvarint(b, uint64(v.Len())+1)
		if t.Elem().Kind() == reflect.Uint8 {
			return append(b, v.Bytes()...), nil
		}
		var err error
		for i := range v.Len() {
			if b, err = appendValue(b, v.Index(i)); err != nil {
				return nil, err
			}
		}
		return b, nil
	case reflect.Array:
		var err error
		for i := range v.Len() {
			if b, err = appendValue(b, v.Index(i)); err != nil {
				return nil, err
			}
		}
		return b, nil
	case reflect.Map:
		if v.IsNil() {
			return append(b, 0), nil
		}
		b = binary.AppendUvarint(b, uint64(v.Len())+1)
		var err error
		for it := v.MapRange(); it.Next(); {
			if b, err = appendValue(b, it.Key()); err != nil {
				return nil, err
			}
			if b, err = appendValue(b, it.Value()); err != nil {
				return nil, err
			}
		}
		return b, nil
	case reflect.Pointer:
		if v.IsNil() {
			return append(b, 0), nil
		}
		return appendValue(append(b, 1), v.Elem())
	case reflect.Struct:
		var err error
		for _, i := range w.fields {
			if b, err = appendValue(b, v.Field(i)); err != nil {
				return nil, fmt.Errorf("%s.%s: %w", t, t.Field(i).Name, err)
			}
		}
		return b, nil
	}
	return nil, fmt.Errorf("BUG: the init stage's protocol wire: cannot carry a %s", t)
}

type decoder struct {
	b     []byte
	err   error
	depth int // values open (a recursive type's depth is the data's: bounded)
}

// maxDepth bounds how deeply values nest in a message.
const maxDepth = 100

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
	d.b = nil
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("a cut or bad number")
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("a cut or bad number")
		return 0
	}
	d.b = d.b[n:]
	return x
}

// bytes takes n bytes (never more than the message holds).
func (d *decoder) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("a length of %d with %d bytes left", n, len(d.b))
		return nil
	}
	out := d.b[:n:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) value(v reflect.Value) {
	if d.err != nil {
		return
	}
	if d.depth++; d.depth > maxDepth {
		d.fail("values nested deeper than %d", maxDepth)
		return
	}
	d.valueIn(v)
	d.depth--
}

func (d *decoder) valueIn(v reflect.Value) {
	t := v.Type()
	w := typeOf(t)
	if w.binary {
		m := d.bytes(d.uvarint())
		if d.err == nil {
			if err := v.Addr().Interface().(encoding.BinaryUnmarshaler).UnmarshalBinary(m); err != nil {
				d.fail("%s: %v", t, err)
			}
		}
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		switch x := d.bytes(1); {
		case d.err != nil:
		case x[0] > 1:
			d.fail("a bool of %d", x[0])
		default:
			v.SetBool(x[0] == 1)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x := d.varint()
		if v.OverflowInt(x) {
			d.fail("%d overflows %s", x, t)
			return
		}
		v.SetInt(x)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		x := d.uvarint()
		if v.OverflowUint(x) {
			d.fail("%d overflows %s", x, t)
			return
		}
		v.SetUint(x)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(math.Float64frombits(d.uvarint()))
	case reflect.String:
		v.SetString(string(d.bytes(d.uvarint())))
	case reflect.Slice:
		n := d.uvarint()
		if n == 0 || d.err != nil {
			v.SetZero()
			return
		}
		n--
		if t.Elem().Kind() == reflect.Uint8 {
			v.SetBytes(append([]byte{}, d.bytes(n)...))
			return
		}
		if n > uint64(len(d.b)) { // every element takes a byte at least
			d.fail("%d elements with %d bytes left", n, len(d.b))
			return
		}
		s := reflect.MakeSlice(t, int(n), int(n))
		for i := range int(n) {
			d.value(s.Index(i))
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			d.value(v.Index(i))
		}
	case reflect.Map:
		n := d.uvarint()
		if n == 0 || d.err != nil {
			v.SetZero()
			return
		}
		n--
		if n > uint64(len(d.b))/2 { // a key and a value take a byte each at least
			d.fail("%d map entries with %d bytes left", n, len(d.b))
			return
		}
		m := reflect.MakeMapWithSize(t, int(n))
		for range n {
			k, e := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
			d.value(k)
			d.value(e)
			if d.err != nil {
				return
			}
			if m.MapIndex(k).IsValid() {
				d.fail("a map key twice: %v", k)
				return
			}
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Pointer:
		switch x := d.bytes(1); {
		case d.err != nil:
		case x[0] == 0:
			v.SetZero()
		case x[0] == 1:
			p := reflect.New(t.Elem())
			d.value(p.Elem())
			v.Set(p)
		default:
			d.fail("a pointer's mark of %d", x[0])
		}
	case reflect.Struct:
		for _, i := range w.fields {
			d.value(v.Field(i))
		}
	default:
		d.fail("BUG: the init stage's protocol wire: cannot carry a %s", t)
	}
}
