package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// diffProfile is a small profile whose ioctl requests and syscalls vary by test.
func diffProfile(syscalls, requests string) string {
	return `apiVersion: sysprof.dev/v1
kind: Profile
metadata:
  name: tool
  command: [tool]
  runs: 1
  incomplete: false
syscalls:
  architectures: [x86_64]
  allow:
` + syscalls + `  args:
    - syscall: ioctl
      arg: 1
      name: request
      values: [` + requests + `]
filesystem:
  read:
    - {path: $WORKDIR, seen: 1}
`
}

// TestDiffComparesAsEnforced (issue 24): `sysprof diff OLD NEW` compares as drift does, with
// OLD as enforce compiles it. A profile learned before the terminal list or a family grew
// (its ioctl requests TCGETS and TIOCGWINSZ, sendto alone) against a newer learn of the same
// behaviour (every terminal request, the send family) is no widening; a request beyond the
// terminal's (TIOCSTI) or a syscall of no family of OLD still is.
func TestDiffComparesAsEnforced(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const base = "    - {name: ioctl, seen: 1}\n    - {name: read, seen: 1}\n"
	old := write("old.yaml", diffProfile(base+"    - {name: sendto, seen: 1}\n", "TCGETS, TIOCGWINSZ"))
	const allTerminal = "TCGETS, TCSETS, TCSETSF, TCSETSW, TIOCGWINSZ, TIOCGPTN, FIONBIO, FIOCLEX, FIONCLEX"
	for _, c := range []struct {
		name, new string
		widens    bool
	}{
		{"newer-learn", diffProfile(base+"    - {name: sendmmsg, family: send, seen: 1}\n    - {name: sendmsg, family: send, seen: 1}\n    - {name: sendto, seen: 1}\n", allTerminal), false},
		{"terminal-injection", diffProfile(base+"    - {name: sendto, seen: 1}\n", allTerminal+", TIOCSTI"), true},
		{"new-syscall", diffProfile(base+"    - {name: ptrace, seen: 1}\n    - {name: sendto, seen: 1}\n", "TCGETS, TIOCGWINSZ"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			o := &diffOptions{streams: streams{Out: &out, Err: &out}, Old: old, New: write(c.name+".yaml", c.new), Format: "table", FailOn: "low"}
			err := runDiff(context.Background(), o)
			if got := err != nil; got != c.widens {
				t.Errorf("diff widens: %v (err %v), want %v:\n%s", got, err, c.widens, out.String())
			}
			if !c.widens && strings.Contains(out.String(), "widening") && !strings.Contains(out.String(), "nothing widens") {
				t.Errorf("diff reports a widening:\n%s", out.String())
			}
		})
	}
}
