package export

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
)

// Env gives the values of the variables profile paths start with ($WORKDIR, $HOME, $TMPDIR,
// $CARGO_HOME, ...) on the host an export is for. Keys are written without the dollar sign.
type Env map[string]string

// Options tune one export.
type Options struct {
	// Env expands profile paths for this host (bwrap, systemd). A hidden path whose variable
	// is missing is an error: an export never silently fails to hide something. The CLI can
	// fill it from enforcer.HostEnv(workdir).Vars, the values the enforcer itself uses.
	Env Env
	// Name names the result: metadata.name of an spo resource (sanitized to a DNS-1123 label)
	// and the unit in the systemd header. Empty means the profile's metadata.name.
	Name string
	// Arch is the architecture (a go-seccomp-bpf name) the seccomp formats compile for when the
	// profile lists no native one, and the one the "bpf" format compiles for. Empty means this
	// machine's.
	Arch string
	// SeccompFDPath is the file holding the output of the "bpf" format. When set, the bwrap
	// command line loads it with `--seccomp 3 3<FILE`; when empty it has no seccomp filter
	// and says so in a note.
	SeccompFDPath string
}

// Formats lists the formats Write understands, in a stable order.
func Formats() []string { return []string{"oci", "bpf", "bwrap", "systemd", "spo"} }

// result is what a format renderer produces: the bytes, and what it could not express.
type result struct {
	out   []byte
	notes []string
}

type renderer func(p *policy.Profile, opts Options) (result, error)

func rendererFor(format string) (renderer, error) {
	switch format {
	case "oci":
		return renderOCI, nil
	case "bpf":
		return renderBPF, nil
	case "bwrap":
		return renderBwrap, nil
	case "systemd":
		return renderSystemd, nil
	case "spo":
		return renderSPO, nil
	}
	return nil, fmt.Errorf("unknown export format %q (want one of %s)", format, strings.Join(Formats(), ", "))
}

// Write converts p to format and writes it to w. The same profile and options always give the
// same bytes. Write does not change p. What the format cannot express is not written to w
// (except as comments where the format has them): ask Notes and show it to the user.
func Write(w io.Writer, p *policy.Profile, format string, opts Options) error {
	r, err := render(p, format, opts)
	if err != nil {
		return err
	}
	_, err = w.Write(r.out)
	return err
}

// Notes says, one line each, what of p the format cannot express or expresses only
// approximately (a widening, a different errno, a path skipped on this host). The CLI prints
// them on stderr. The notes are the same ones Write embeds as comments.
func Notes(p *policy.Profile, format string, opts Options) ([]string, error) {
	r, err := render(p, format, opts)
	if err != nil {
		return nil, err
	}
	return r.notes, nil
}

func render(p *policy.Profile, format string, opts Options) (result, error) {
	if p == nil {
		return result{}, fmt.Errorf("export %s: no profile", format)
	}
	f, err := rendererFor(format)
	if err != nil {
		return result{}, err
	}
	r, err := f(p, opts)
	if err != nil {
		return result{}, fmt.Errorf("export %s: %w", format, err)
	}
	if p.Metadata.Incomplete {
		n := "the profile is marked incomplete (it may miss behaviour the command needs)"
		if len(p.Metadata.IncompleteReasons) > 0 {
			n += ": " + strings.Join(p.Metadata.IncompleteReasons, "; ")
		}
		r.notes = append([]string{n}, r.notes...)
	}
	return r, nil
}

func profileName(p *policy.Profile, opts Options) string {
	if opts.Name != "" {
		return opts.Name
	}
	if p.Metadata.Name != "" {
		return p.Metadata.Name
	}
	return "sysprof"
}

// Expand turns a profile path into this host's (paths.Expand): it fails when its variable is
// missing here.
func (e Env) Expand(path string) (string, error) {
	out, err := paths.Expand(path, e)
	if err != nil {
		return "", fmt.Errorf("%w (give its value in the export environment)", err)
	}
	return out, nil
}

// globLimit is how many directory entries one glob may look at.
const globLimit = 20000

// hostPath is one profile path resolved on this host.
type hostPath struct {
	rule string // as written in the profile
	path string // expanded, absolute
}

// expandPaths expands rules for this host. Globs are matched against the host now (sorted
// matches); a rule that cannot be expanded or matches nothing is skipped with a note, except
// when strict is set (hidden paths): then a missing variable is an error, because skipping it
// would show what the profile hides.
func expandPaths(rules []policy.PathRule, env Env, what string, strict bool, exists func(string) bool) ([]hostPath, []string, error) {
	var out []hostPath
	var notes, absent []string
	for _, r := range rules {
		p, err := env.Expand(r.Path)
		if err != nil {
			if strict {
				return nil, nil, fmt.Errorf("%s %w", what, err)
			}
			notes = append(notes, fmt.Sprintf("%s %s skipped: %v", what, r.Path, err))
			continue
		}
		if paths.HasGlob(p) {
			matches, cut := paths.Glob(p, globLimit, paths.Lister{})
			if cut {
				notes = append(notes, fmt.Sprintf("%s %s: looked at the first %d directory entries only; matches further down are left out", what, r.Path, globLimit))
			}
			if len(matches) == 0 {
				notes = append(notes, fmt.Sprintf("%s %s: the glob matches nothing on this host now; paths created later are not covered", what, r.Path))
				continue
			}
			notes = append(notes, fmt.Sprintf("%s %s: the glob is expanded to the %d path(s) present now; paths created later are not covered", what, r.Path, len(matches)))
			for _, m := range matches {
				out = append(out, hostPath{rule: r.Path, path: m})
			}
			continue
		}
		if exists != nil && !exists(p) {
			absent = append(absent, r.Path)
			continue
		}
		out = append(out, hostPath{rule: r.Path, path: p})
	}
	if len(absent) > 0 {
		notes = append(notes, fmt.Sprintf("%s paths absent on this host, left out: %s", what, strings.Join(absent, " ")))
	}
	slices.SortFunc(out, func(a, b hostPath) int { return strings.Compare(a.path, b.path) })
	out = slices.CompactFunc(out, func(a, b hostPath) bool { return a.path == b.path })
	return out, notes, nil
}

// commentLines renders notes as comment lines with the given prefix.
func commentLines(buf *bytes.Buffer, prefix string, notes []string) {
	for _, n := range notes {
		fmt.Fprintf(buf, "%s note: %s\n", prefix, n)
	}
}
