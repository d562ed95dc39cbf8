package paths

import "testing"

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		p, root string
		want    bool
	}{
		{"/a", "/a", true},
		{"/a/b", "/a", true},
		{"/a/b/c", "/a", true},
		{"/ab", "/a", false}, // a component boundary, not a string prefix
		{"/a", "/a/b", false},
		{"/", "/a", false},
		{"/anything", "/", true},
		{"/", "/", true},
		{"$HOME/.ssh/id", "$HOME/.ssh", true},
		{"$HOME/.sshx", "$HOME/.ssh", false},
		{"/a", "", false}, // the empty root holds nothing
		{"", "", false},
	} {
		if got := Within(tc.p, tc.root); got != tc.want {
			t.Errorf("Within(%q, %q) = %v, want %v", tc.p, tc.root, got, tc.want)
		}
	}
	for _, tc := range []struct {
		p     string
		roots []string
		want  bool
	}{
		{"/x/y", []string{"/a", "/x"}, true},
		{"/x", []string{"/a", "/x"}, true},
		{"/xy", []string{"/a", "/x"}, false},
		{"/a", nil, false},
		{"/a", []string{""}, false},
		{"/", []string{"/"}, true},
		{"/a", []string{"/"}, false}, // / only covers itself here
	} {
		if got := CoveredBy(tc.p, tc.roots); got != tc.want {
			t.Errorf("CoveredBy(%q, %q) = %v, want %v", tc.p, tc.roots, got, tc.want)
		}
	}
}
