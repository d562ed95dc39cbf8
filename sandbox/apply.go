package sandbox

import (
	"fmt"
	"path/filepath"
	"runtime"
)

// Result says what Apply did beyond the plan's letter: what it skipped and what it could not
// enforce. The enforcer reports it (the init stage can JSON-encode it to its parent).
type Result struct {
	LandlockABI int `json:"landlock_abi,omitempty"`
	// LandlockHandledFS is the set of filesystem rights the ruleset handled, e.g.
	// "{execute,write_file,...}".
	LandlockHandledFS string `json:"landlock_handled_fs,omitempty"`
	// Dropped lists Landlock features the kernel could not enforce (only non-empty when the
	// plan allowed degrading).
	Dropped []string `json:"dropped,omitempty"`
	// Implied lists rules Apply added that the plan implies, each with its reason, e.g.
	// "exec /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2: ELF interpreter of /usr/bin/git".
	Implied []string  `json:"implied,omitempty"`
	Skipped []Skipped `json:"skipped,omitempty"`
}

// Skipped is a path of the plan that a layer did not apply, and why (usually: does not exist).
type Skipped struct {
	Layer  string `json:"layer"`
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

func (r *Result) skip(layer, path, reason string) {
	r.Skipped = append(r.Skipped, Skipped{Layer: layer, Path: path, Reason: reason})
}

// Apply applies the plan to the calling process: mounts, network, Landlock, capabilities, rlimits, in
// that order (see the package doc for why). It runs inside the init stage, which must already be
// in the namespaces from CloneFlags. It returns a *LayerError naming the first layer that could
// not be applied; the caller must then refuse to run the tool. After Apply the calling goroutine
// stays locked to its OS thread: exec the tool from the same goroutine.
func (p *Plan) Apply() error {
	_, err := p.ApplyResult()
	return err
}

// ApplyResult is Apply that also returns what was skipped or degraded (non-nil even on error).
func (p *Plan) ApplyResult() (*Result, error) {
	// Landlock, no_new_privs, securebits and capabilities are per thread: keep this goroutine on
	// this thread for good, so that the exec that follows starts from the restricted thread.
	runtime.LockOSThread()
	res := &Result{}
	if err := p.Validate(); err != nil {
		return res, err
	}
	for _, s := range steps {
		if err := s.apply(p, res); err != nil {
			return res, &LayerError{Layer: s.layer, Err: err}
		}
	}
	return res, nil
}

func maskedPaths(m []Masked) []string {
	out := make([]string, len(m))
	for i, x := range m {
		out[i] = x.Path
	}
	return out
}

// Validate checks that every path of the plan is absolute; the error is a *LayerError naming the
// layer of the first offending field. It touches nothing.
func (p *Plan) Validate() error {
	check := func(layer, field string, paths []string) error {
		for _, s := range paths {
			if !filepath.IsAbs(s) {
				return &LayerError{Layer: layer, Err: fmt.Errorf("%s path %q is not absolute", field, s)}
			}
		}
		return nil
	}
	for _, c := range []struct {
		layer, field string
		paths        []string
	}{
		{LayerMounts, "writable", p.Writable},
		{LayerMounts, "hidden", p.Hidden},
		{LayerMounts, "masked", maskedPaths(p.Masked)},
	} {
		if err := check(c.layer, c.field, c.paths); err != nil {
			return err
		}
	}
	if l := p.Landlock; l != nil {
		for _, c := range []struct {
			field string
			paths []string
		}{{"read", l.Read}, {"write", l.Write}, {"exec", l.Exec}, {"device", l.Devices}, {"hidden", l.Hidden}} {
			if err := check(LayerLandlock, c.field, c.paths); err != nil {
				return err
			}
		}
	}
	return nil
}
