package paths

import "strings"

// buildDefinitions are the work tree's top-level files whose content is commands the next
// build, test or install runs on the host: an edit to one is an ordinary change (configure
// writes a Makefile, npm install rewrites package.json) but never a "safe" one to apply
// unreviewed. Patterns are matched by MatchComponent against the file's name.
var buildDefinitions = []string{
	"Makefile", "makefile", "GNUmakefile", "*.mk",
	"package.json",
	"setup.py", "setup.cfg", "pyproject.toml", "conftest.py", "noxfile.py", "tox.ini",
	"Cargo.toml", "build.rs",
	"CMakeLists.txt", "meson.build", "justfile", "Justfile", "Taskfile.yml",
	"vitest.config.*", "vite.config.*", "jest.config.*",
}

// BuildDefinition returns the build-definition pattern portable path p ($WORKDIR/NAME, a
// top-level file of the work tree) names, or "".
func BuildDefinition(p string) string {
	name, ok := strings.CutPrefix(p, "$WORKDIR/")
	if !ok || strings.Contains(name, "/") {
		return ""
	}
	for _, b := range buildDefinitions {
		if MatchComponent(b, name) {
			return b
		}
	}
	return ""
}
