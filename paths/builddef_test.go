package paths

import "testing"

func TestBuildDefinition(t *testing.T) {
	for p, want := range map[string]string{
		"$WORKDIR/Makefile":                    "Makefile",
		"$WORKDIR/package.json":                "package.json",
		"$WORKDIR/vitest.config.ts":            "vitest.config.*",
		"$WORKDIR/rules.mk":                    "*.mk",
		"$WORKDIR/src/Makefile":                "", // top level only: a vendored tree's are its own
		"$WORKDIR/README.md":                   "",
		"$HOME/Makefile":                       "",
		"$WORKDIR/node_modules/x/package.json": "",
	} {
		if got := BuildDefinition(p); got != want {
			t.Errorf("BuildDefinition(%q) = %q, want %q", p, got, want)
		}
	}
}
