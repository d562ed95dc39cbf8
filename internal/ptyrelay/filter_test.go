package ptyrelay

import (
	"bytes"
	"testing"
)

func filterAll(p []byte) ([]byte, Dropped) {
	f := NewFilter()
	return f.Flush(f.Filter(nil, p)), f.Dropped()
}

func TestFilter(t *testing.T) {
	for _, c := range []struct {
		name, in, out string
		kind          Kind // dropped once; "" none
	}{
		{"text", "hello, wörld\r\n\ttab", "hello, wörld\r\n\ttab", ""},
		{"sgr", "\x1b[1;31mred\x1b[0m \x1b[38:2:1:2:3mx\x1b[m", "\x1b[1;31mred\x1b[0m \x1b[38:2:1:2:3mx\x1b[m", ""},
		{"cursor", "\x1b[H\x1b[2J\x1b[10;5H\x1b[K\x1b[3A\x1b7\x1b8\x1b[1;24r", "\x1b[H\x1b[2J\x1b[10;5H\x1b[K\x1b[3A\x1b7\x1b8\x1b[1;24r", ""},
		{"alternate screen", "\x1b[?1049h\x1b[?1h\x1b=x\x1b[?1049l\x1b[?1l\x1b>", "\x1b[?1049h\x1b[?1h\x1b=x\x1b[?1049l\x1b[?1l\x1b>", ""},
		{"bracketed paste, cursor", "\x1b[?2004h\x1b[?25l\x1b[?25h\x1b[2 q", "\x1b[?2004h\x1b[?25l\x1b[?25h\x1b[2 q", ""},
		{"charset", "\x1b(0qqq\x1b(B", "\x1b(0qqq\x1b(B", ""},
		{"cursor position query", "\x1b[6n", "\x1b[6n", ""},
		{"clipboard set", "a\x1b]52;c;ZWNobyBoaQ==\x07b", "ab", KindClipboard},
		{"clipboard set ST", "a\x1b]52;c;ZWNobyBoaQ==\x1b\\b", "ab", KindClipboard},
		{"clipboard query", "\x1b]52;c;?\x07", "", KindClipboard},
		{"title", "\x1b]0;owned\x07x", "x", KindTitle},
		{"colour query", "\x1b]11;?\x1b\\", "", KindOSC},
		{"title report", "\x1b[21t", "", KindWindow},
		{"title stack", "\x1b[22;2t\x1b[23;2t", "\x1b[22;2t\x1b[23;2t", ""},
		{"decrqss", "\x1bP$qm\x1b\\x", "x", KindString},
		{"xtgettcap", "\x1bP+q544e\x1b\\", "", KindString},
		{"kitty graphics", "\x1b_Gf=100;AAAA\x1b\\", "", KindString},
		{"iterm file", "\x1b]1337;File=name=eA==:AAAA\x07", "", KindOSC},
		{"link https", "\x1b]8;;https://x.test/\x1b\\l\x1b]8;;\x1b\\", "\x1b]8;;https://x.test/\x1b\\l\x1b]8;;\x1b\\", ""},
		{"link control in params", "\x1b]8;id=a\nb;https://x.test/\x07l", "l", KindLink},
		{"link odd scheme", "\x1b]8;;ssh://x\x07l", "l", KindLink},
		{"enq", "a\x05b", "ab", KindQuery},
		{"decid", "\x1bZ", "", KindQuery},
		{"da3", "\x1b[=c", "", KindQuery},
		{"decrqm", "\x1b[?2004$p", "", KindQuery},
		{"unknown private mode", "\x1b[?1049;42h", "", KindOther},
		{"keyboard lock", "\x1b[2h", "", KindOther},
		{"c1 csi utf-8", "\xc2\x9b6n", "6n", KindC1},
		{"c1 osc raw", "\x9d52;c;x\x07", "52;c;x\x07", KindC1},
		{"nbsp passes", "a\xc2\xa0b", "a\xc2\xa0b", ""},
		{"osc cut by esc", "\x1b]52;c;x\x1b[1m", "\x1b[1m", KindClipboard},
		{"csi cut by can", "\x1b[1\x18m", "\x18m", KindOther},
		{"c0 inside csi", "\x1b[1\r;2H", "\r\x1b[1;2H", ""},
		{"enq inside a sequence", "\x1b\x05[1m", "\x1b[1m", KindQuery},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, d := filterAll([]byte(c.in))
			if string(got) != c.out {
				t.Errorf("Filter(%q) = %q, want %q", c.in, got, c.out)
			}
			want := 0
			if c.kind != "" {
				want = 1
			}
			if d[c.kind] != want || d.Total() != want {
				t.Errorf("Filter(%q) dropped %v, want %q once", c.in, d, c.kind)
			}
			// The same bytes one at a time: a split sequence is judged whole.
			f := NewFilter()
			var split []byte
			for i := range len(c.in) {
				split = f.Filter(split, []byte{c.in[i]})
			}
			split = f.Flush(split)
			if !bytes.Equal(split, got) {
				t.Errorf("split: %q, whole: %q", split, got)
			}
		})
	}
}

func TestDroppedNotes(t *testing.T) {
	d := Dropped{KindClipboard: 2}
	if n := d.Notes(); len(n) != 1 || n[0] != "the command tried to set or read the clipboard (OSC 52): dropped (2)" {
		t.Errorf("notes: %q", n)
	}
}

// FuzzFilter: what passes is passed again unchanged with nothing dropped (only allowed
// sequences come out), splitting the input anywhere changes nothing, and no clipboard or
// string introducer comes out.
func FuzzFilter(f *testing.F) {
	for _, s := range []string{"\x1b]52;c;eA==\x07", "\x1b[1;31mx\x1b[0m", "\x1bP$q\x1b\\", "\xc2\x9b", "\x1b]8;;https://a\x07b\x1b]8;;\x07", "\x1b[?1049h"} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint8) {
		whole, _ := filterAll(in)
		again, d := filterAll(whole)
		if !bytes.Equal(again, whole) || d.Total() != 0 {
			t.Fatalf("not stable: %q -> %q -> %q (%v)", in, whole, again, d)
		}
		fl := NewFilter()
		c := min(int(cut), len(in))
		split := fl.Flush(fl.Filter(fl.Filter(nil, in[:c]), in[c:]))
		if !bytes.Equal(split, whole) {
			t.Fatalf("split at %d: %q, whole %q", c, split, whole)
		}
		for _, bad := range []string{"\x1b]52", "\x1b]0;", "\x1bP", "\x1b_", "\x1b^", "\x1bX", "\xc2\x9b", "\xc2\x9d"} {
			if bytes.Contains(whole, []byte(bad)) {
				t.Fatalf("%q passed in %q", bad, whole)
			}
		}
	})
}

// BenchmarkFilter: coloured compiler-like output (what the relay filters most).
func BenchmarkFilter(b *testing.B) {
	line := []byte("\x1b[1m\x1b[32m   Compiling\x1b[0m serde v1.0.200 (/home/u/.cargo/registry/src/serde-1.0.200) — ünïcode\r\n")
	in := bytes.Repeat(line, 32*1024/len(line))
	f := NewFilter()
	out := make([]byte, 0, len(in))
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		out = f.Filter(out[:0], in)
	}
}
