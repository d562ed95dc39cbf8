// Package profiles carries the shipped, hand-reviewed profiles (profiles/*.yaml) inside the
// sysprof binary, so that `sysprof learn --from-profile go-build` works wherever the binary
// is installed. profiles/README.md says what each one allows and why; profiles/learn.sh
// relearns them from their fixtures before a review.
package profiles

import (
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/sysprof/sysprof/policy"
)

//go:embed *.yaml
var files embed.FS

// Names lists the shipped profiles, sorted (go-build, npm-test, …).
func Names() []string {
	entries, _ := fs.ReadDir(files, ".")
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok && !e.IsDir() {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// Bytes returns the YAML of the shipped profile name.
func Bytes(name string) ([]byte, error) {
	if name == "" || strings.ContainsAny(name, "/\\") || strings.HasPrefix(name, ".") {
		return nil, fmt.Errorf("no shipped profile %q (shipped: %s)", name, strings.Join(Names(), ", "))
	}
	b, err := files.ReadFile(name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("no shipped profile %q (shipped: %s)", name, strings.Join(Names(), ", "))
	}
	return b, nil
}

// Load parses the shipped profile name; each call returns a fresh copy.
func Load(name string) (*policy.Profile, error) {
	b, err := Bytes(name)
	if err != nil {
		return nil, err
	}
	p, err := policy.Parse("profiles/"+name+".yaml", b)
	if err != nil {
		return nil, fmt.Errorf("shipped profile %s: %w", name, err)
	}
	return p, nil
}
