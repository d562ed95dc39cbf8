package main

import (
	"context"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/enforcer"
)

// TestDegradeFlag: a bare --degrade lets any layer degrade; --degrade=LAYER,... only those; a
// name that is no degradable layer (seccomp never degrades) is a usage error.
func TestDegradeFlag(t *testing.T) {
	parse := func(args ...string) (enforcer.Degrade, error) {
		var got enforcer.Degrade
		err := execSeam(t, newEnforceCmd(streams{}, func(_ context.Context, o *enforceOptions) error {
			got = o.Degrade
			return nil
		}), append(append([]string{"enforce", "-p", "p.yaml"}, args...), "--", "true")...)
		return got, err
	}
	for _, tc := range []struct {
		args []string
		want string
		err  string
	}{
		{nil, "", ""},
		{[]string{"--degrade"}, "all", ""},
		{[]string{"--degrade=userns"}, "userns", ""},
		{[]string{"--degrade=userns,landlock"}, "userns,landlock", ""},
		{[]string{"--degrade=seccomp"}, "", `no layer "seccomp"`},
		{[]string{"--degrade", "userns"}, "", "--degrade=userns"}, // else userns would be the command
	} {
		got, err := parse(tc.args...)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: %v, %v: want error %q", tc.args, got, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(got, ",") != tc.want {
			t.Errorf("%v: %v, %v: want %q", tc.args, got, err, tc.want)
		}
	}
}
