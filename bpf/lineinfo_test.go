//go:build 386 || amd64 || arm64

package bpf

import (
	"testing"

	"github.com/cilium/ebpf/btf"
)

// The object without line info has the same programs, instruction for instruction, the same
// relocations, and no source lines.
func TestLoadLearnNoLines(t *testing.T) {
	full, err := LoadLearn()
	if err != nil {
		t.Fatal(err)
	}
	bare, err := LoadLearnNoLines()
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Programs) != len(bare.Programs) {
		t.Fatalf("%d programs, want %d", len(bare.Programs), len(full.Programs))
	}
	lines := 0
	for name, fp := range full.Programs {
		bp := bare.Programs[name]
		if bp == nil || len(bp.Instructions) != len(fp.Instructions) {
			t.Fatalf("program %s differs", name)
		}
		for i := range fp.Instructions {
			fi, bi := fp.Instructions[i], bp.Instructions[i]
			fr, br := btf.CORERelocationMetadata(&fi), btf.CORERelocationMetadata(&bi)
			if fi.OpCode != bi.OpCode || fi.Constant != bi.Constant || fi.Offset != bi.Offset ||
				fi.Reference() != bi.Reference() || (fr == nil) != (br == nil) || fr != nil && fr.String() != br.String() {
				t.Fatalf("%s instruction %d: %v, want %v", name, i, bi, fi)
			}
			if fi.Source() != nil {
				lines++
			}
			if bi.Source() != nil {
				t.Fatalf("%s instruction %d still has a source line", name, i)
			}
		}
	}
	if lines == 0 {
		t.Errorf("the full object has no line info: nothing was tested")
	}
}

// go test -bench ParseLearn ./bpf: the object's parse, per learn run (the programs' load is on
// top of it).
func BenchmarkParseLearn(b *testing.B) {
	b.Run("full", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := LoadLearn(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("no-lines", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := LoadLearnNoLines(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
