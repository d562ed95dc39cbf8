package project

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/sysprof/sysprof/policy"
)

const (
	// File is the name sysprof looks for from the current directory up to the repository root.
	File = "sysprof.yaml"
	// Version is the format version this sysprof reads and writes.
	Version = 1
	// DefaultProfileDir is profileDir when neither the file, a flag nor the environment sets
	// it (relative to the file's directory when there is a file).
	DefaultProfileDir = ".sysprof"
	// FromConfigNote marks the allowances the file adds to a learned profile.
	FromConfigNote = "from " + File
)

// Project is a validated sysprof.yaml. Every path in it is absolute, except ProfileDir and the
// default step profiles under it when Options.ProfileDir was relative.
type Project struct {
	Path       string // the file
	Dir        string // its directory: relative paths in the file are relative to it
	Version    int
	ProfileDir string // Options.ProfileDir, else the file's profileDir, else DefaultProfileDir
	// FailOnDenial (failOnDenial) makes `enforce --step/--all` fail a step whose command
	// succeeded with denials, as --fail-on-denial does.
	FailOnDenial bool
	// ReportsDir (reports) is where every enforce (audit-mode too) and drift run leaves one
	// run report (report.Envelope); empty: nowhere. Absolute.
	ReportsDir string
	Steps      []Step
}

// Roles a step can have (role:): what kind of tool it runs, which is what `sysprof audit`
// judges an escape against. Without role: the audit guesses it from the step's name and
// binaries.
var Roles = []string{"format", "lint", "build", "test", "install", "language-server", "vcs", "other"}

// Step is one gate: a command run in its work directory under its own profile.
type Step struct {
	Name    string
	Command []string
	// Role is role: of the step (one of Roles), or empty.
	Role    string
	Profile string // profile file
	Workdir string // where the command runs ($WORKDIR)
	// Writable are extra paths the command may write, in profile form ($WORKDIR/out, $HOME/x,
	// /abs), added to the learned profile.
	Writable []string
	// Hosts are extra network endpoints (host:port, tcp) the command may connect to.
	Hosts []string
	// Env is KEY=VALUE added to sysprof's environment for the command.
	Env []string
}

// Error is one problem in the file: file, line (1-based) and field (steps[1].hosts[0]).
type Error = policy.LoadError

// Options are what the caller decided outside the file.
type Options struct {
	// ProfileDir, when set, is the profile directory a flag or the environment chose: it wins
	// over the file's profileDir and is used as given (a relative one stays relative to the
	// current directory).
	ProfileDir string
}

// Load reads and validates the file at path (absolute; see Parse).
func Load(path string, o Options) (*Project, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(path, data, o)
}

// Select returns the steps named (in the order given) or, with all, every step in file order.
func (p *Project) Select(names []string, all bool) ([]Step, error) {
	if all {
		if len(p.Steps) == 0 {
			return nil, fmt.Errorf("%s has no steps", p.Path)
		}
		return slices.Clone(p.Steps), nil
	}
	var out []Step
	for _, n := range names {
		i := slices.IndexFunc(p.Steps, func(s Step) bool { return s.Name == n })
		if i < 0 {
			var known []string
			for _, s := range p.Steps {
				known = append(known, s.Name)
			}
			return nil, fmt.Errorf("%s has no step %q (steps: %s)", p.Path, n, strings.Join(known, ", "))
		}
		out = append(out, p.Steps[i])
	}
	return out, nil
}

// Environ is sysprof's environment with the step's variables added (later entries win).
func (s Step) Environ() []string {
	return append(os.Environ(), s.Env...)
}

// CheckWorkdir fails before anything runs when the step's directory is missing.
func (s Step) CheckWorkdir() error {
	fi, err := os.Stat(s.Workdir)
	if err != nil {
		return fmt.Errorf("step %s: workdir: %w", s.Name, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("step %s: workdir %s is not a directory", s.Name, s.Workdir)
	}
	return nil
}

// AddAllowances adds the step's extra writable paths and hosts to a learned profile, each
// marked as coming from sysprof.yaml, so that enforcement allows them even when the learn run
// did not use them (a write rule grants reading too). p is modified and normalized.
func (s Step) AddAllowances(p *policy.Profile) {
	for _, w := range s.Writable {
		if !slices.ContainsFunc(p.Filesystem.Write, func(r policy.PathRule) bool { return r.Path == w }) {
			p.Filesystem.Write = append(p.Filesystem.Write, policy.PathRule{Path: w, Note: FromConfigNote})
		}
	}
	for _, h := range s.Hosts {
		if !slices.ContainsFunc(p.Network.Connect, func(e policy.Endpoint) bool { return e.Endpoint == h && e.Proto == "tcp" }) {
			// Endpoints have no note; By says where the allowance comes from.
			p.Network.Connect = append(p.Network.Connect, policy.Endpoint{Endpoint: h, Proto: "tcp", Provenance: policy.Provenance{By: FromConfigNote}})
		}
	}
	policy.Normalize(p)
}
