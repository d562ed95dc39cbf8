package synth

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/sysprof/sysprof/paths"
)

// maxNameLen caps profile names (they become file names: .sysprof/<name>.yaml).
const maxNameLen = 64

// Name derives a profile name from a command: the base name of argv0 and up to two
// subcommand-like arguments before the first flag, lower case, with anything but letters,
// digits, `.` and `_` turned into `-`, capped at 64 characters. Paths and assignments are
// skipped: `cargo build --release` → cargo-build, `go build -o hello .` → go-build,
// `go test ./...` → go-test, `/usr/bin/npm run build` → npm-run-build; an interpreter's
// module is a subcommand: `python3 -m pytest -q` → python3-pytest. An empty result is
// "profile".
func Name(cmd []string) string {
	if len(cmd) == 0 {
		return "profile"
	}
	parts := []string{}
	if p := sanitizeName(path.Base(cmd[0])); p != "" {
		parts = append(parts, p)
	}
	module := moduleFlag(path.Base(cmd[0]))
	for i := 1; i < len(cmd); i++ {
		a := cmd[i]
		if len(parts) == 3 {
			break
		}
		if module != "" && a == module && i+1 < len(cmd) {
			// python3 -m pytest and python3 -m mypy are two tools, not one python3.
			i++
			a = cmd[i]
		} else if strings.HasPrefix(a, "-") {
			break // subcommands come before flags; what follows a flag may be its value
		}
		if strings.ContainsAny(a, "/=") {
			continue
		}
		if p := sanitizeName(a); p != "" {
			parts = append(parts, p)
		}
	}
	name := strings.Join(parts, "-")
	if len(name) > maxNameLen {
		name = strings.TrimRight(name[:maxNameLen], "-.")
	}
	if name == "" {
		return "profile"
	}
	return name
}

// moduleFlag is the flag with which an interpreter runs a named tool (python3 -m pytest), or "".
func moduleFlag(argv0 string) string {
	if strings.HasPrefix(argv0, "python") || strings.HasPrefix(argv0, "pypy") {
		return "-m"
	}
	return ""
}

func sanitizeName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := b.String()
	for strings.Contains(out, "--") {
		out = strings.ReplaceAll(out, "--", "-")
	}
	return strings.Trim(out, "-.")
}

// passMetadata fills metadata and the binaries with their hashes.
func (s *state) passMetadata() []string {
	now := s.opts.Now().UTC().Format(time.RFC3339)
	if s.trace == nil {
		s.meta.Updated = now
		if s.opts.SysprofVersion != "" {
			s.meta.SysprofVersion = s.opts.SysprofVersion
		}
		return nil
	}
	t := s.trace
	s.meta.Name = Name(t.Command)
	s.meta.Command = s.command
	s.meta.SysprofVersion = s.opts.SysprofVersion
	s.meta.Kernel = t.Host.Kernel
	if t.Host.Arch != "" {
		s.meta.LearnedOn = []string{t.Host.Arch}
	}
	s.meta.Created, s.meta.Updated = now, now
	s.meta.Runs = 1
	s.meta.Exact = s.opts.Exact
	s.meta.Incomplete = t.Incomplete || t.Loss.Any()
	s.meta.IncompleteReasons = slices.Clone(t.Reasons)
	if t.Loss.Any() {
		r := fmt.Sprintf("lost kernel events: %d ring buffer drops, %d map-full", t.Loss.RingbufDrops, t.Loss.MapFull)
		if !slices.Contains(s.meta.IncompleteReasons, r) {
			s.meta.IncompleteReasons = append(s.meta.IncompleteReasons, r)
		}
	}
	built := 0
	for _, p := range s.procs {
		if memfdExe(p.exe) {
			continue
		}
		sha := p.sha
		if s.builtByRun(p.exe) {
			// The tool built it (a test binary, a build script): its hash changes with every
			// source edit and work directory, so pinning it would make drift cry wolf.
			sha = ""
			built++
		}
		k := [2]string{p.exe, sha}
		s.binaries[k] = earliest(s.binaries[k], s.provOf(p.parent))
		// Its twins (passExec) are the same binary: listed like the exec rules, never pinned.
		for _, t := range paths.ExecTwins(p.exe) {
			k := [2]string{t, ""}
			s.binaries[k] = earliest(s.binaries[k], s.provOf(p.parent))
		}
		// Its companions (passExec), unless the run ran them: listed, not pinned (synthesis
		// reads nothing on the host).
		for _, c := range paths.Companions(p.exe) {
			if !slices.ContainsFunc(s.procs, func(q procObs) bool { return q.exe == c }) {
				k := [2]string{c, ""}
				s.binaries[k] = earliest(s.binaries[k], s.provOf(p.exe))
			}
		}
	}
	msgs := []string{fmt.Sprintf("name %s, %s with their sha256", s.meta.Name, plural(len(s.binaries), "binary"))}
	if built > 0 {
		msgs = append(msgs, fmt.Sprintf("no sha256 pinned for %s the run built itself (in $TMPDIR or a writable directory)", plural(built, "binary")))
	}
	if s.meta.Incomplete {
		reasons := strings.Join(s.meta.IncompleteReasons, "; ")
		if reasons == "" {
			reasons = "the trace says so"
		}
		msgs = append(msgs, "INCOMPLETE: "+reasons)
	}
	return msgs
}

// builtByRun reports executables the run wrote: under $TMPDIR or a write rule, or with a
// per-run name. A checked-in
// script of the work tree keeps its hash: a change to it is worth a drift report.
func (s *state) builtByRun(exe string) bool {
	// A glob is a name made per run (go run's $GOCACHE/*/*-d/NAME): no one content to pin.
	if strings.HasPrefix(exe, "$TMPDIR/") || paths.HasGlob(exe) {
		return true
	}
	for w := range s.write.byPath() {
		if paths.Covers(w, exe) {
			return true
		}
	}
	return false
}
