package feature_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sysprof/sysprof/internal/feature"
	"github.com/sysprof/sysprof/internal/hostcheck"
	"github.com/sysprof/sysprof/sandbox"
)

// A missing feature found by one package is a missing feature to every other: the enforcer
// and the tests ask errors.Is with whichever package's sentinel they import.
func TestOneSentinel(t *testing.T) {
	errs := map[string]error{
		"sandbox.UnsupportedError":   &sandbox.UnsupportedError{Feature: "landlock", Reason: "off"},
		"sandbox.DegradedError":      &sandbox.DegradedError{ABI: 3, Dropped: []string{"tcp"}},
		"hostcheck.UnsupportedError": &hostcheck.UnsupportedError{Feature: "bpf", Reason: "off"},
		"wrapped":                    fmt.Errorf("probe: %w", &hostcheck.UnsupportedError{Feature: "bpf"}),
	}
	for name, err := range errs {
		for sname, sentinel := range map[string]error{"feature": feature.ErrNotSupported, "sandbox": sandbox.ErrNotSupported, "hostcheck": hostcheck.ErrNotSupported} {
			if !errors.Is(err, sentinel) {
				t.Errorf("%s does not match %s.ErrNotSupported", name, sname)
			}
		}
	}
}
