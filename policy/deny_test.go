package policy

import (
	"slices"
	"strings"
	"testing"
)

func denyProfile(deny ...string) *Profile {
	return &Profile{
		APIVersion: APIVersion, Kind: Kind,
		Metadata: Metadata{Name: "t", Command: []string{"t"}, Runs: 1},
		Syscalls: Syscalls{
			Architectures: []string{"x86_64"},
			Allow:         []Syscall{{Name: "ioctl"}},
			Args:          []ArgRule{{Syscall: "ioctl", Arg: 1, Mask: "0xffffffff", Deny: deny}},
		},
	}
}

func TestDenyRoundTrip(t *testing.T) {
	p := denyProfile("TIOCSTI", "TIOCLINUX")
	b, err := Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "deny: [TIOCLINUX, TIOCSTI]") {
		t.Fatalf("deny not written sorted:\n%s", b)
	}
	q, err := Parse("t.yaml", b)
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Syscalls.Args[0].Deny; len(got) != 2 {
		t.Fatalf("deny after parse = %v", got)
	}
	if _, err := Parse("t.yaml", []byte(strings.Replace(string(b), "TIOCSTI", "NOT_A_CONST", 1))); err == nil || !strings.Contains(err.Error(), "deny[") {
		t.Fatalf("bad deny value: err = %v, want one naming the deny field", err)
	}
}

func TestDenyDiffAndMerge(t *testing.T) {
	old, wider := denyProfile("TIOCSTI", "TIOCLINUX"), denyProfile("TIOCLINUX")
	changes := Diff(old, wider)
	if !Widens(changes, RiskLow) {
		t.Fatalf("dropping a denied value must widen: %v", changes)
	}
	found := false
	for _, c := range changes {
		if strings.Contains(c.Item, "TIOCSTI") && c.Widens {
			found = true
		}
	}
	if !found {
		t.Errorf("no change names TIOCSTI: %v", changes)
	}
	if Widens(Diff(wider, old), RiskLow) {
		t.Errorf("adding a denied value must only narrow")
	}
	m := Merge(old, wider)
	if got := m.Syscalls.Args[0].Deny; len(got) != 1 || got[0] != "TIOCLINUX" {
		t.Errorf("merge keeps only values both sides deny: got %v", got)
	}
}

func TestCloneCopiesDeny(t *testing.T) {
	p := denyProfile("TIOCSTI")
	q := Clone(p)
	q.Syscalls.Args[0].Deny[0] = "TIOCLINUX"
	if p.Syscalls.Args[0].Deny[0] != "TIOCSTI" {
		t.Fatal("changing the clone's deny list changed the original")
	}
}

func TestSymbolPersonalityAllBits(t *testing.T) {
	// 0xffffffff is what personality(0xffffffff) queries with; naming it must terminate.
	if got := Symbol(KindPersonality, 0xffffffff); got == "" {
		t.Fatal("empty symbol")
	}
	if got := Symbol(KindPersonality, 0xff); !strings.HasPrefix(got, "0x") && got == "" {
		t.Fatalf("Symbol(0xff) = %q", got)
	}
}

func TestDiffReadCoveredByOldWrite(t *testing.T) {
	old, new := denyProfile(), denyProfile()
	old.Filesystem.Write = []PathRule{{Path: "$GOCACHE"}}
	new.Filesystem.Read = []PathRule{{Path: "$GOCACHE"}}
	new.Filesystem.List = []PathRule{{Path: "$GOCACHE/00"}}
	for _, c := range Diff(old, new) {
		if c.Widens {
			t.Errorf("reading or listing what was writable is not a widening: %v", c)
		}
	}
	new.Filesystem.Read = append(new.Filesystem.Read, PathRule{Path: "/etc/hosts"})
	if !Widens(Diff(old, new), RiskLow) {
		t.Error("a read outside the old write rules must still widen")
	}
}

func TestDiffIgnoresTempFilesInAPrivateTmp(t *testing.T) {
	old, new := denyProfile(), denyProfile()
	old.Filesystem.PrivateTmp, new.Filesystem.PrivateTmp = true, true
	old.Filesystem.Write = []PathRule{{Path: "$TMPDIR/cc*.res"}, {Path: "$TMPDIR/cc*.s"}}
	new.Filesystem.Write = []PathRule{{Path: "$TMPDIR/cc*.s"}, {Path: "$TMPDIR/go-build*"}}
	if cs := Diff(old, new); len(cs) != 0 {
		t.Errorf("temp files in a private /tmp on both sides: want no changes, got %v", cs)
	}
	new.Filesystem.PrivateTmp = false
	if !Widens(Diff(old, new), RiskLow) {
		t.Error("turning the private /tmp off must still show")
	}
}

// A private /tmp the profile has no write rule in is not writable under enforce (Landlock has
// no rule for it): the first temp file is a widening, or refine finds nothing to propose and
// every later run is denied again (issue 15).
func TestDiffFirstTempFileInAPrivateTmpWidens(t *testing.T) {
	old, new := denyProfile(), denyProfile()
	old.Filesystem.PrivateTmp, new.Filesystem.PrivateTmp = true, true
	new.Filesystem.Write = append(slices.Clone(old.Filesystem.Write), PathRule{Path: "$TMPDIR/foo.txt"})
	if !Widens(Diff(old, new), RiskLow) {
		t.Errorf("the first write rule in a private /tmp must widen: %v", Diff(old, new))
	}
	if cs := Diff(new, old); len(cs) == 0 {
		t.Error("removing the only write rule in a private /tmp must show as narrowing")
	}
}

// TestDiffDenyListToValues (issue 24 item 8): a profile whose ioctl passed anything but
// terminal injection, against one that passes only the terminal probes (the same tool learned
// where it made no ioctl of its own), narrows: TIOCSTI is still refused, not "no longer denied".
func TestDiffDenyListToValues(t *testing.T) {
	old := denyProfile("TIOCSTI", "TIOCLINUX")
	probes := denyProfile()
	probes.Syscalls.Args[0].Values = []string{"TCGETS", "TIOCGWINSZ"}
	if cs := Diff(old, probes); Widens(cs, RiskLow) {
		t.Errorf("a values list that leaves the denied values out must not widen: %v", cs)
	}
	// The other way the values' own list is what widens: any value but the denied ones.
	if cs := Diff(probes, old); !Widens(cs, RiskLow) {
		t.Errorf("from the probes to anything but injection must widen: %v", cs)
	}
	// A values list that takes a denied value in widens by it.
	inj := denyProfile()
	inj.Syscalls.Args[0].Values = []string{"TCGETS", "TIOCSTI"}
	found := false
	for _, c := range Diff(old, inj) {
		found = found || c.Widens && strings.Contains(c.Item, "TIOCSTI")
	}
	if !found {
		t.Errorf("a values list admitting TIOCSTI must name it: %v", Diff(old, inj))
	}
}

// TestDiffTerminalRequestsToDenyList: a tool that starts making an ioctl request beyond the
// terminal ones widens its rule to every request but injection: a low widening that says
// injection stays denied, not a critical "any value".
func TestDiffTerminalRequestsToDenyList(t *testing.T) {
	probes := denyProfile()
	probes.Syscalls.Args[0].Values = []string{"TCGETS", "TIOCGWINSZ"}
	var got []Change
	for _, c := range Diff(probes, denyProfile("TIOCSTI", "TIOCLINUX")) {
		if c.Widens {
			got = append(got, c)
		}
	}
	if len(got) != 1 || got[0].Risk != RiskLow || !strings.Contains(got[0].Item, "any value but TIOCSTI, TIOCLINUX") {
		t.Errorf("want one low widening to any value but injection, got %+v", got)
	}
	// Without the deny list it is injection: critical.
	if cs := Diff(probes, denyProfile()); !Widens(cs, RiskCritical) {
		t.Errorf("any ioctl request at all must be critical: %+v", cs)
	}
}
