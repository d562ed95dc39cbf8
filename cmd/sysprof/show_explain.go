package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/sysprof/sysprof/policy"
)

// writeFamilies prints the behaviour-equivalence families (policy.Families) with the syscalls
// each added to this profile, so a reviewer sees why a syscall the tool never made is allowed.
func writeFamilies(w io.Writer, p *policy.Profile) {
	added := map[string][]string{}
	for _, s := range p.Syscalls.Allow {
		if s.Family != "" {
			added[s.Family] = append(added[s.Family], s.Name)
		}
	}
	fmt.Fprintln(w, "\nbehaviour-equivalence families (learn --exact turns them off): seeing one member allows all")
	for _, f := range policy.Families {
		fmt.Fprintf(w, "  %-18s %s\n  %-18s   %s", f.Name, strings.Join(f.Members, " "), "", f.Why)
		if a := added[f.Name]; len(a) > 0 {
			fmt.Fprintf(w, "\n  %-18s   added here: %s", "", strings.Join(a, ", "))
		}
		fmt.Fprintln(w)
	}
	for _, f := range []struct{ name, why string }{
		{"terminal", "ioctl TCGETS/TCSETS*/TIOCGWINSZ (isatty, window size, a terminal's modes), setitimer/getitimer, dup2/dup3 and fsync, in every profile: a tool learned with output to a file or a pipe may run at a terminal"},
		{"arch", "the equivalents on another architecture the profile lists of a syscall that architecture lacks (open -> openat on aarch64)"},
	} {
		fmt.Fprintf(w, "  %-18s %s", f.name, f.why)
		if a := added[f.name]; len(a) > 0 {
			fmt.Fprintf(w, "\n  %-18s   added here: %s", "", strings.Join(a, ", "))
		}
		fmt.Fprintln(w)
	}
}
