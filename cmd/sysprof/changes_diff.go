package main

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/sysprof/sysprof/policy"
)

// unifiedDiff returns the unified diff (3 lines of context) of old and new text, "" when they
// are equal. Lines are compared whole (Myers' O(ND) algorithm); a diff needing more than
// maxEdits edits is summarized instead of computed.
func unifiedDiff(oldName, newName string, old, new []string) string {
	ops, ok := myers(old, new, maxEdits)
	return renderUnified(oldName, newName, old, new, ops, ok)
}

// maxEdits caps the edit script a diff computes.
const maxEdits = 20000

// renderUnified prints edit script ops (ok false: none, too many changes) as a unified diff.
func renderUnified(oldName, newName string, old, new []string, ops []editOp, ok bool) string {
	if !ok {
		return fmt.Sprintf("--- %s\n+++ %s\n(too many changes to show: %d lines -> %d lines)\n", oldName, newName, len(old), len(new))
	}
	if !slices.ContainsFunc(ops, func(o editOp) bool { return o.kind != ' ' }) {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s\n+++ %s\n", oldName, newName)
	const ctx = 3
	for i := 0; i < len(ops); {
		// Find the next change, then the hunk around it.
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i == len(ops) {
			break
		}
		start := max(i-ctx, 0)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			// A run of context: the hunk ends if it is longer than 2*ctx (or reaches the end).
			j := end
			for j < len(ops) && ops[j].kind == ' ' {
				j++
			}
			if j == len(ops) || j-end > 2*ctx {
				end = min(end+ctx, len(ops))
				break
			}
			end = j
		}
		oldStart, newStart := ops[start].a+1, ops[start].b+1
		oldN, newN := 0, 0
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				oldN++
			}
			if o.kind != '-' {
				newN++
			}
		}
		if oldN == 0 {
			oldStart--
		}
		if newN == 0 {
			newStart--
		}
		fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", oldStart, oldN, newStart, newN)
		for _, o := range ops[start:end] {
			line := o.line
			b.WriteByte(o.kind)
			b.WriteString(line)
			b.WriteByte('\n')
		}
		i = end
	}
	return b.String()
}

// editOp is one line of an edit script: ' ' kept, '-' deleted from old, '+' added from new;
// a and b are the line's (or the position's) index in old and new.
type editOp struct {
	kind byte
	a, b int
	line string
}

// myers computes a shortest edit script from a to b; ok is false past maxD edits.
func myers(a, b []string, maxD int) ([]editOp, bool) {
	n, m := len(a), len(b)
	// Common prefix and suffix cost nothing and keep the search small.
	pre := 0
	for pre < n && pre < m && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < n-pre && suf < m-pre && a[n-1-suf] == b[m-1-suf] {
		suf++
	}
	A, B := a[pre:n-suf], b[pre:m-suf]
	N, M := len(A), len(B)
	max := N + M
	if max > maxD {
		max = maxD
	}
	off := max + 1
	v := make([]int, 2*max+3)
	var trace [][]int
	found := N == 0 && M == 0
	for d := 0; d <= max && !found; d++ {
		trace = append(trace, slices.Clone(v))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || k != d && v[off+k-1] < v[off+k+1] {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < N && y < M && A[x] == B[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= N && y >= M {
				found = true
				break
			}
		}
	}
	if !found {
		return nil, false
	}
	// Walk the trace back from (N, M).
	var rev []editOp
	x, y := N, M
	for d := len(trace) - 1; d >= 0 && (x > 0 || y > 0); d-- {
		vd := trace[d]
		k := x - y
		var prevK int
		if k == -d || k != d && vd[off+k-1] < vd[off+k+1] {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := vd[off+prevK]
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x--
			y--
			rev = append(rev, editOp{' ', pre + x, pre + y, A[x]})
		}
		if d > 0 {
			if x == prevX {
				y--
				rev = append(rev, editOp{'+', pre + x, pre + y, B[y]})
			} else {
				x--
				rev = append(rev, editOp{'-', pre + x, pre + y, A[x]})
			}
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, editOp{' ', pre + x, pre + y, A[x]})
	}
	ops := make([]editOp, 0, pre+len(rev)+suf)
	for i := range pre {
		ops = append(ops, editOp{' ', i, i, a[i]})
	}
	for i := len(rev) - 1; i >= 0; i-- {
		ops = append(ops, rev[i])
	}
	for i := range suf {
		ops = append(ops, editOp{' ', n - suf + i, m - suf + i, a[n-suf+i]})
	}
	return ops, true
}

// splitLines splits text into lines without their newlines.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	s = strings.TrimSuffix(s, "\n")
	return strings.Split(s, "\n")
}

// highlight is one dangerous pattern found in added content.
type highlight struct {
	Line int    `json:"line"` // 1-based line of the new file; 0 for the file as a whole
	What string `json:"what"`
	Text string `json:"text,omitempty"`
}

var patterns = sync.OnceValue(func() map[string]*regexp.Regexp {
	return map[string]*regexp.Regexp{
		"pipe":       regexp.MustCompile(`\b(curl|wget|fetch)\b[^|;&\n]*\|\s*(sudo\s+)?(ba|z|da|k)?sh\b|\b(curl|wget)\b[^|;&\n]*\|\s*(sudo\s+)?(python[0-9.]*|perl|ruby|node)\b`),
		"url":        regexp.MustCompile(`\b(?:https?|ftp|wss?)://[^\s"'<>()\[\]{}]+`),
		"npmInstall": regexp.MustCompile(`"(pre|post)?install"\s*:`),
		"privateKey": regexp.MustCompile(`-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY-----`),
		"assign":     regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_.-]*)["']?\s*[:=]\s*["']?([^\s"',;]{8,})`),
		"word":       regexp.MustCompile(`[A-Za-z0-9_\-]{20,}`),
	}
})

// installScripts are files whose mere appearance runs code at the next install or build.
var installScripts = map[string]string{
	"setup.py": "a new setup.py: runs on pip install",
	"build.rs": "a new build.rs: runs on every cargo build",
}

// highlights finds the dangerous patterns in the added lines of a file named path: a download
// piped to a shell, a new install script, a URL to a host the profile does not name, a
// secret-looking string. added maps the new file's line numbers (1-based) to their text; isNew
// says the file did not exist on the host.
func highlights(path string, isNew bool, added map[int]string, hosts []string) []highlight {
	var out []highlight
	base := path[strings.LastIndexByte(path, '/')+1:]
	if why, ok := installScripts[base]; ok && isNew {
		out = append(out, highlight{What: why})
	}
	p := patterns()
	lines := make([]int, 0, len(added))
	for n := range added {
		lines = append(lines, n)
	}
	slices.Sort(lines)
	for _, n := range lines {
		l := added[n]
		if p["pipe"].MatchString(l) {
			out = append(out, highlight{n, "a download piped to an interpreter", l})
		}
		if base == "package.json" && p["npmInstall"].MatchString(l) {
			out = append(out, highlight{n, "an npm install script (runs on npm install)", l})
		}
		for _, u := range p["url"].FindAllString(l, -1) {
			if h := urlHost(u); h != "" && !hostNamed(h, hosts) {
				out = append(out, highlight{n, "a URL to " + h + ", a host the profile does not name", l})
			}
		}
		if why := secretIn(l); why != "" {
			out = append(out, highlight{n, "a secret-looking string (" + why + ")", l})
		}
	}
	return out
}

func urlHost(u string) string {
	pu, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return strings.ToLower(pu.Hostname())
}

// hostNamed reports whether the profile's network rules name host h (exactly, or by a
// *.domain pattern).
func hostNamed(h string, hosts []string) bool {
	for _, x := range hosts {
		if x == h || strings.HasPrefix(x, "*.") && strings.HasSuffix(h, x[1:]) {
			return true
		}
	}
	return false
}

// secretIn says why line l holds a secret-looking string, by policy's one classification of
// secrets (policy.SecretEnv: names, token prefixes, URL passwords), or "".
func secretIn(l string) string {
	p := patterns()
	if p["privateKey"].MatchString(l) {
		return "a private key"
	}
	for _, m := range p["assign"].FindAllStringSubmatch(l, -1) {
		name := strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(m[1]))
		// A secret name counts only with a key-like value (token_count: 12 is not one).
		if why := policy.SecretEnv(name, m[2]); why != "" && (policy.SecretValue(m[2]) || policy.SecretEnv("VALUE", m[2]) != "") {
			return m[1] + ": " + why
		}
	}
	for _, w := range p["word"].FindAllString(l, -1) {
		if why := policy.SecretEnv("VALUE", w); why != "" {
			return why
		}
	}
	for _, u := range p["url"].FindAllString(l, -1) {
		if why := policy.SecretEnv("URL", u); why != "" {
			return why
		}
	}
	return ""
}

// profileHosts are the host names of a profile's connect and send rules.
func profileHosts(p *policy.Profile) []string {
	var out []string
	if p == nil {
		return nil
	}
	for _, e := range append(slices.Clone(p.Network.Connect), p.Network.Send...) {
		h := e.Endpoint
		if i := strings.LastIndexByte(h, ':'); i > 0 {
			h = h[:i]
		}
		out = append(out, strings.ToLower(strings.Trim(h, "[]")))
	}
	return out
}
