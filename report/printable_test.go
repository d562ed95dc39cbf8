package report

import (
	"strings"
	"testing"
	"time"
)

func TestPrintable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/home/u/src/main.go", "/home/u/src/main.go"},
		{`a\b*c`, `a\b*c`},
		{"héllo wörld", "héllo wörld"},
		{"\x1b[2K\x1b[1Asysprof: 0 operation(s) denied\x1b[8m", `\x1b[2K\x1b[1Asysprof: 0 operation(s) denied\x1b[8m`},
		{"a\rb\nc\td\x7f", `a\rb\nc\td\x7f`},
		{"c1\u0085\u009b", `c1\u0085\u009b`},
		{"x\u202eexe.txt", `x\u202eexe.txt`},
		{"\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u200e\u200f\u061c", `\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u200e\u200f\u061c`},
		{"zw\u200bj\ufeff\u2028\u2029", `zw\u200bj\ufeff\u2028\u2029`},
		{"bad\xff\xc3", `bad\xff\xc3`},
	} {
		if got := Printable(tc.in); got != tc.want {
			t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Nothing Printable returns holds a character it escapes.
	for r := rune(0); r < 0x30000; r++ {
		if got := Printable(string(r)); strings.ContainsFunc(got, mustEscape) {
			t.Fatalf("Printable(%U) = %q keeps a control or format character", r, got)
		}
	}
}

// forged is a file name that, printed raw, erases the line above and claims a clean run.
const forged = "\x1b[2K\x1b[1Asysprof: 0 operation(s) denied\x1b[8m"

func TestWriteTableEscapesNames(t *testing.T) {
	r := New([]string{"tool\x1b[8m"}, "p.yaml", false)
	r.Add(Denial{Kind: KindFile, What: "/w/.git/hooks/" + forged + " write", Path: "/w/.git/hooks/" + forged,
		Exe: "/w/\u202etxt.exe", Parents: []string{"/bin/sh\r"}, Suggest: "filesystem.write: + $WORKDIR/.git/hooks/" + forged,
		First: time.Unix(1, 0), Risk: RiskCritical})
	r.SetLayer(Layer{Name: "landlock", State: LayerDegraded, Detail: "no \x1b[31m"})
	r.Unobservable = []string{"x\u2066"}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.ContainsFunc(strings.ReplaceAll(out, "\n", ""), mustEscape) {
		t.Errorf("the denial table holds raw control or bidi characters:\n%q", out)
	}
	for _, want := range []string{`\x1b[2K\x1b[1Asysprof: 0 operation(s) denied\x1b[8m`, `\u202etxt.exe`, `/bin/sh\r`, `no \x1b[31m`, `x\u2066`} {
		if !strings.Contains(out, want) {
			t.Errorf("the denial table lacks %s:\n%s", want, out)
		}
	}
}
