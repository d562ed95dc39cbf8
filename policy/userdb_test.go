package policy

import (
	"slices"
	"testing"
)

// TestCloseUserDatabase: glibc's nscd probe (socket AF_UNIX SOCK_STREAM, connect) is added to a
// profile that lacks it with only the probe's socket arguments, and a values rule the profile
// has is widened to hold them; a flags rule decides by bits and is left alone.
func TestCloseUserDatabase(t *testing.T) {
	none := func(string) bool { return false }
	add, rules := CloseUserDatabase(nil, none)
	if !slices.Equal(add, []string{"socket", "connect"}) {
		t.Errorf("added %v, want socket and connect", add)
	}
	if len(rules) != 3 || rules[0].Values[0] != "AF_UNIX" || rules[1].Values[0] != "SOCK_STREAM" || rules[2].Values[0] != "0" {
		t.Errorf("a socket newly allowed takes only the probe's values, got %+v", rules)
	}
	inet := []ArgRule{{Syscall: "socket", Arg: 0, Name: "domain", Values: []string{"AF_INET"}},
		{Syscall: "socket", Arg: 1, Name: "type", Flags: []string{"SOCK_CLOEXEC"}}}
	has := func(n string) bool { return n == "socket" || n == "connect" }
	add, rules = CloseUserDatabase(inet, has)
	if len(add) != 0 {
		t.Errorf("added %v to a profile that has both", add)
	}
	if !slices.Equal(rules[0].Values, []string{"AF_INET", "AF_UNIX"}) {
		t.Errorf("domain values %v, want AF_INET and AF_UNIX", rules[0].Values)
	}
	if len(rules[1].Values) != 0 || len(rules) != 2 {
		t.Errorf("a flags rule changed or rules added: %+v", rules)
	}
	if len(inet[0].Values) != 1 {
		t.Errorf("the caller's rules were modified: %+v", inet)
	}
}
