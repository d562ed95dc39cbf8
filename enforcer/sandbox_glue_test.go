package enforcer

import "testing"

// TestSudoUser: under sudo the command is the invoking user only in a work tree of theirs.
func TestSudoUser(t *testing.T) {
	for _, tc := range []struct {
		uid, gid string
		owner    int
		want     bool
	}{
		{"1000", "1000", 1000, true},
		{"1000", "1000", 0, false},
		{"1000", "1000", -1, false},
		{"", "", 0, false},
		{"x", "1000", 1000, false},
	} {
		u, g := sudoUser(tc.uid, tc.gid, tc.owner)
		if got := u != ""; got != tc.want || (got && (u != tc.uid || g != tc.gid)) {
			t.Errorf("sudoUser(%q, %q, owner %d) = %q %q, want kept %v", tc.uid, tc.gid, tc.owner, u, g, tc.want)
		}
	}
}
