package policy

import (
	"strings"
	"testing"
)

// TestPending: a critical allowance learn added is written pending, survives a save, a load and
// a merge with a run that saw it again, is left out of what enforce compiles, and is shown as
// pending by Diff; Accept clears it. Network destinations are never marked.
// A write rule that lets a run plant a .pth without naming it (learn rolled the .pth a
// poisoned run wrote into its site-packages) is pending; a work-tree output is not.
func TestPendingStartupHookDirs(t *testing.T) {
	for item, want := range map[string]bool{
		"$HOME/.local/lib/python3.11/site-packages":    true,
		"$HOME/.local/lib/python3.11/site-packages/**": true,
		"$WORKDIR/.venv/lib/python3.11/site-packages":  false, // staged: a .pth there is held
		"/usr/lib/python3/dist-packages":               true,
		"$HOME/.local/lib":                             true,
		"$HOME/.local":                                 true,
		"$HOME/.local/lib/python3.*":                   true,
		"$WORKDIR/out":                                 false,
		"$HOME/.cache/pip":                             false,
		"$HOME/.local/share/app":                       false,
	} {
		if got := pendingKind(&Profile{}, SectionWrite, item); got != want {
			t.Errorf("pendingKind(write %s) = %v, want %v", item, got, want)
		}
	}
}

func TestPending(t *testing.T) {
	old := &Profile{APIVersion: APIVersion, Kind: Kind, Metadata: Metadata{Name: "t", Command: []string{"t"}, Runs: 1},
		Syscalls:   Syscalls{Architectures: []string{"x86_64"}, Allow: []Syscall{{Name: "read"}}},
		Filesystem: Filesystem{Read: []PathRule{{Path: "$WORKDIR"}}, Write: []PathRule{{Path: "$WORKDIR/out"}}}}
	learned := Clone(old)
	learned.Filesystem.Write = append(learned.Filesystem.Write, PathRule{Path: "$WORKDIR/.git/hooks/pre-commit"}, PathRule{Path: "$HOME/.bashrc"})
	learned.Network.Connect = []Endpoint{{Endpoint: "evil.example:443", Proto: "tcp"}}
	merged := Merge(old, learned)
	marked := MarkPending(old, merged)
	if len(marked) != 2 {
		t.Fatalf("marked %v, want the hook and .bashrc", marked)
	}
	b, err := Marshal(merged)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "pending: true") {
		t.Fatalf("pending not written:\n%s", b)
	}
	back, err := Parse("t.yaml", b)
	if err != nil {
		t.Fatal(err)
	}
	if got := Pending(back); len(got) != 2 {
		t.Fatalf("after a load: pending %v", got)
	}
	again := Merge(back, learned) // the next learn saw the same writes: still pending
	if got := Pending(again); len(got) != 2 {
		t.Errorf("a merge accepted pending rules: %v", got)
	}
	eff := WithoutPending(again)
	for _, r := range eff.Filesystem.Write {
		if r.Path != "$WORKDIR/out" {
			t.Errorf("enforce would compile %s", r.Path)
		}
	}
	if len(eff.Network.Connect) != 1 || len(Pending(again)) != 2 {
		t.Errorf("WithoutPending changed its input or dropped the network: %+v", eff.Network)
	}
	for _, c := range Diff(old, again) {
		if c.Section == SectionWrite && c.Widens && !strings.HasPrefix(c.Reason, "PENDING") {
			t.Errorf("diff does not show %s as pending: %s", c.Item, c.Reason)
		}
	}
	if !Accept(again, SectionWrite, "$HOME/.bashrc") || Accept(again, SectionWrite, "$HOME/.bashrc") {
		t.Fatal("Accept: want true once")
	}
	if got := Pending(again); len(got) != 1 || got[0].Item != "$WORKDIR/.git/hooks/pre-commit" {
		t.Errorf("after Accept: pending %v", got)
	}
	found := false
	for _, c := range Diff(back, again) {
		if c.Item == "$HOME/.bashrc" && strings.HasPrefix(c.Reason, "accepted (was pending)") {
			found = true
		}
	}
	if !found {
		t.Errorf("diff does not show the acceptance: %v", Diff(back, again))
	}
}
