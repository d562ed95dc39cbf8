//go:build 386 || amd64 || arm64

package bpf

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"

	"github.com/cilium/ebpf"
)

// LoadLearnNoLines is LoadLearn without the object's BTF line info (C source lines per
// instruction): parsing it was a third of parsing the object (~1.4 ms of ~4.3, more in a fresh
// process), and only verifier logs use it. The kernel needs none; the function info and CO-RE
// relocations are kept.
func LoadLearnNoLines() (*ebpf.CollectionSpec, error) {
	obj, err := withoutLineInfo(_LearnBytes)
	if err != nil {
		return nil, err
	}
	return ebpf.LoadCollectionSpecFromReader(bytes.NewReader(obj))
}

// withoutLineInfo returns a copy of the BPF ELF object obj whose .BTF.ext header declares an
// empty line info table (its record size, no records), or obj when it has no .BTF.ext.
func withoutLineInfo(obj []byte) ([]byte, error) {
	f, err := elf.NewFile(bytes.NewReader(obj))
	if err != nil {
		return nil, err
	}
	s := f.Section(".BTF.ext")
	if s == nil {
		return obj, nil
	}
	// struct btf_ext_header: u16 magic, u8 version, u8 flags, u32 hdr_len,
	// u32 func_info_off, u32 func_info_len, u32 line_info_off, u32 line_info_len, ...
	const lineInfoLen = 20
	off := s.Offset
	if s.Size < lineInfoLen+4 || off+lineInfoLen+4 > uint64(len(obj)) {
		return nil, errors.New(".BTF.ext is too short")
	}
	le := binary.LittleEndian
	if le.Uint16(obj[off:]) != 0xeb9f || le.Uint32(obj[off+4:]) < lineInfoLen+4 {
		return nil, errors.New(".BTF.ext has an unknown header")
	}
	if le.Uint32(obj[off+lineInfoLen:]) <= 4 {
		return obj, nil // no line info already
	}
	out := bytes.Clone(obj)
	le.PutUint32(out[off+lineInfoLen:], 4)
	return out, nil
}
