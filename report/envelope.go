package report

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sysprof/sysprof/policy"
)

// Schema names the run-report format in every envelope; EnvelopeVersion is its version. A
// reader refuses a newer version (ErrFutureVersion) and ignores fields it does not know.
const (
	Schema          = "sysprof.run-report"
	EnvelopeVersion = 1
)

// Envelope kinds: what produced the run report.
const (
	RunEnforce = "enforce" // sysprof enforce: Report holds the denials (and held changes)
	RunAudit   = "audit"   // sysprof enforce --audit: Report holds what would have been denied
	RunDrift   = "drift"   // sysprof drift: Drift holds the changes against the committed profile
	RunHeld    = "held"    // a held changeset applied or dropped later (sysprof changes): Report holds it
)

// Envelope is one run report as it lasts in a reports directory: who ran what, where, under
// which profile, and the run's result. The JSON field names are the interface between sysprof
// and whatever collects reports (CI artifacts, a fleet's bucket, `sysprof audit`): fields are
// added, never renamed or given another meaning without a new EnvelopeVersion.
//
//	{
//	  "schema": "sysprof.run-report",   // always this string
//	  "version": 1,                      // EnvelopeVersion
//	  "kind": "enforce",                 // enforce, audit, drift, held
//	  "host": "ci-runner-7",             // os.Hostname of the machine that ran it
//	  "project": "webapp",               // the directory of sysprof.yaml (or the work directory)
//	  "step": "lint",                    // the sysprof.yaml step; empty for a plain command
//	  "role": "lint",                    // the step's role (sysprof.yaml role:), when set
//	  "command": ["npx", "markdownlint", "."],
//	  "profile": ".sysprof/lint.yaml",
//	  "profileSha256": "…",              // sha256 of the profile file as enforced/compared
//	  "profileHosts": ["registry.example.com:443"], // the profile's named network endpoints
//	  "sysprofVersion": "0.1.0",
//	  "time": "2026-12-03T09:00:00Z",    // when the run ended (UTC)
//	  "report": { … },                   // Report (enforce, audit, held)
//	  "drift": [ … ]                     // []policy.Change (drift)
//	}
type Envelope struct {
	Schema         string          `json:"schema"`
	Version        int             `json:"version"`
	Kind           string          `json:"kind"`
	Host           string          `json:"host"`
	Project        string          `json:"project,omitempty"`
	Step           string          `json:"step,omitempty"`
	Role           string          `json:"role,omitempty"`
	Command        []string        `json:"command,omitempty"`
	Profile        string          `json:"profile,omitempty"`
	ProfileSHA256  string          `json:"profileSha256,omitempty"`
	ProfileHosts   []string        `json:"profileHosts,omitempty"`
	SysprofVersion string          `json:"sysprofVersion"`
	Time           time.Time       `json:"time"`
	Report         *Report         `json:"report,omitempty"`
	Drift          []policy.Change `json:"drift,omitempty"`
}

// ErrFutureVersion is what ParseEnvelope returns for a report of a newer format.
var ErrFutureVersion = errors.New("newer format than this sysprof reads")

// NewEnvelope returns an envelope of kind for this host, stamped now.
func NewEnvelope(kind, sysprofVersion string) *Envelope {
	host, _ := os.Hostname()
	return &Envelope{Schema: Schema, Version: EnvelopeVersion, Kind: kind, Host: host,
		SysprofVersion: sysprofVersion, Time: time.Now().UTC()}
}

// HashProfile sets ProfileSHA256 to the sha256 of the profile file at path, and Profile to path.
func (e *Envelope) HashProfile(path string) error {
	e.Profile = path
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("hash profile: %w", err)
	}
	sum := sha256.Sum256(b)
	e.ProfileSHA256 = hex.EncodeToString(sum[:])
	return nil
}

// ProfileNamedHosts lists the named (not raw address, not unix) endpoints of a profile's
// network section, for ProfileHosts: what a reader needs to tell a registry mirror of a known
// host from a new destination.
func ProfileNamedHosts(p *policy.Profile) []string {
	var out []string
	for _, e := range append(append([]policy.Endpoint(nil), p.Network.Connect...), p.Network.Send...) {
		a, err := policy.ParseEndpoint(e.Endpoint)
		if err != nil || a.Host == "" || a.IsUnix() {
			continue
		}
		out = append(out, e.Endpoint)
	}
	return out
}

// WriteJSON writes the envelope as indented JSON (the report's denials in their stable order).
func (e *Envelope) WriteJSON(w io.Writer) error {
	if e.Report != nil {
		e.Report.Sort()
		if e.Report.Denials == nil {
			e.Report.Denials = []Denial{}
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(e)
}

// FileName is a name for the envelope in a reports directory that sorts by time and does not
// collide between hosts, steps or concurrent runs: 20261203T090000Z-host-enforce-lint-1a2b3c4d.json.
func (e *Envelope) FileName() string {
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	parts := []string{e.Time.UTC().Format("20060102T150405Z"), safeName(e.Host), e.Kind}
	if e.Step != "" {
		parts = append(parts, safeName(e.Step))
	}
	return strings.Join(append(parts, hex.EncodeToString(rnd[:])), "-") + ".json"
}

// safeName keeps a host or step name to letters, digits, '.', '_' (anything else becomes '_').
func safeName(s string) string {
	if s == "" {
		return "unknown"
	}
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// SaveIn writes the envelope into directory dir (made if missing) under FileName, atomically:
// a reader of the directory (a sync to a bucket, `sysprof audit`) never sees half a report.
// It returns the file written.
func (e *Envelope) SaveIn(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("reports directory: %w", err)
	}
	var buf bytes.Buffer
	if err := e.WriteJSON(&buf); err != nil {
		return "", fmt.Errorf("encode run report: %w", err)
	}
	path := filepath.Join(dir, e.FileName())
	if err := writeAtomic(path, buf.Bytes()); err != nil {
		return "", fmt.Errorf("save run report: %w", err)
	}
	return path, nil
}

// writeAtomic writes b to path through a temporary file in the same directory, synced and
// renamed.
func writeAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ParseEnvelope decodes a run report. A plain Report (what `enforce --report FILE` writes) is
// accepted too, as an envelope of kind enforce or audit without host or time (the report's
// Finished time stands in). A report of a newer format wraps ErrFutureVersion; anything else
// that does not decode (truncated, not JSON, not a report) is an error naming what is wrong.
func ParseEnvelope(b []byte) (*Envelope, error) {
	// One decoding pass for what is almost always a current run report; the probe below
	// only runs when that fails or finds no envelope (an audit reads thousands).
	var e Envelope
	if err := json.Unmarshal(b, &e); err == nil && e.Schema == Schema && e.Version <= EnvelopeVersion {
		return e.check()
	}
	var probe struct {
		Schema  *string          `json:"schema"`
		Version int              `json:"version"`
		Denials *json.RawMessage `json:"denials"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("not a run report: %w", err)
	}
	if probe.Schema == nil {
		if probe.Denials == nil {
			return nil, errors.New("not a run report: neither \"schema\" nor \"denials\"")
		}
		if probe.Version > Version {
			return nil, fmt.Errorf("report version %d: %w (%d): upgrade sysprof", probe.Version, ErrFutureVersion, Version)
		}
		r, err := Parse(b)
		if err != nil {
			return nil, err
		}
		kind := RunEnforce
		if r.Audit {
			kind = RunAudit
		}
		return &Envelope{Schema: Schema, Version: EnvelopeVersion, Kind: kind, Command: r.Command,
			Profile: r.ProfilePath, Time: r.Finished, Report: r}, nil
	}
	if *probe.Schema != Schema {
		return nil, fmt.Errorf("not a run report: schema %q, want %q", *probe.Schema, Schema)
	}
	if probe.Version > EnvelopeVersion {
		return nil, fmt.Errorf("run report version %d: %w (%d): upgrade sysprof", probe.Version, ErrFutureVersion, EnvelopeVersion)
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("run report: %w", err)
	}
	return e.check()
}

// check validates a decoded envelope.
func (e *Envelope) check() (*Envelope, error) {
	if e.Report != nil {
		if e.Report.Version > Version {
			return nil, fmt.Errorf("inner report version %d: %w (%d): upgrade sysprof", e.Report.Version, ErrFutureVersion, Version)
		}
		if e.Report.Denials == nil {
			e.Report.Denials = []Denial{}
		}
	}
	switch e.Kind {
	case RunEnforce, RunAudit, RunDrift, RunHeld:
	default:
		return nil, fmt.Errorf("run report: unknown kind %q (want %s, %s, %s or %s)", e.Kind, RunEnforce, RunAudit, RunDrift, RunHeld)
	}
	return e, nil
}
