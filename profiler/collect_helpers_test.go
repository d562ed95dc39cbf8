package profiler

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/sysprof/sysprof/bpf"
)

func le(v any) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, v)
	return b.Bytes()
}

func execRecord(t *testing.T, tgid uint32, key uint64, comps, argv0 string) []byte {
	t.Helper()
	e := bpf.LearnExecEvent{Kind: uint32(bpf.LearnEvKindEV_EXEC), Tgid: tgid, ExeKey: key,
		ExeLen: uint16(len(comps)), Argv0Len: uint16(len(argv0) + 1)}
	return append(append(le(e), comps...), append([]byte(argv0), 0)...)
}
