//go:build ignore

// resynth applies the current synthesis passes (families, architectures) to profiles in place,
// keeping their notes: go run scripts/resynth.go profiles/*.yaml .ci/profiles/*.yaml
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/synth"
)

func main() {
	for _, f := range os.Args[1:] {
		p, err := policy.Load(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		res, err := synth.Resynthesize(p, synth.Options{Architectures: synth.DefaultArchitectures, SysprofVersion: p.Metadata.SysprofVersion, Now: func() (t time.Time) { t, _ = time.Parse(time.RFC3339, p.Metadata.Updated); return }})
		if err != nil {
			fmt.Fprintln(os.Stderr, f, err)
			os.Exit(1)
		}
		if err := policy.Save(f, res.Profile); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
