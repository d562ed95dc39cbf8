package sandbox

import (
	"slices"
	"testing"
)

// A read-only path below another gets no mount of its own (the clone carries it), unless a
// writable mount lies between them: a work tree in /tmp bound read-only into the private tmp,
// its .git bound writable, .git/config covered read-only again.
func TestReadOnlyMountsKeepCoversBelowAWritableMount(t *testing.T) {
	ro := []string{"/tmp/w/.git/config", "/tmp/w", "/tmp/w/.git/hooks", "/tmp/w/src/x", "/home/u/.config/git"}
	got := ReadOnlyMounts(ro, []string{"/tmp/w/.git", "/home/u/.config"})
	want := []string{"/home/u/.config/git", "/tmp/w", "/tmp/w/.git/config", "/tmp/w/.git/hooks"}
	if !slices.Equal(got, want) {
		t.Errorf("ReadOnlyMounts = %v, want %v (src/x rides with /tmp/w; the covers below the writable .git stay)", got, want)
	}
	if got := ReadOnlyMounts(ro, nil); !slices.Equal(got, []string{"/home/u/.config/git", "/tmp/w"}) {
		t.Errorf("without writable mounts: %v", got)
	}
}
