package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"

	"github.com/sysprof/sysprof/policy"
)

// Version is the report format version written into every report.
const Version = 1

// Kind is what a denial was about.
type Kind string

// Denial kinds.
const (
	KindSyscall Kind = "syscall"
	KindFile    Kind = "file"
	KindNetwork Kind = "network"
	KindLimit   Kind = "limit" // a resource limit of the run (pids, memory) was reached
)

// Risk is how dangerous it would be to allow a denied operation: policy.Risk, as the policy
// risk functions rate the profile change in Suggest (the rating `sysprof diff` and refine give
// it). JSON carries its name ("high").
type Risk = policy.Risk

// Risk classes.
const (
	RiskLow      = policy.RiskLow
	RiskHigh     = policy.RiskHigh
	RiskCritical = policy.RiskCritical
)

// Layer states.
const (
	LayerApplied      = "applied"
	LayerDegraded     = "degraded"      // the profile asked for it, the host could not, --degrade ran without it
	LayerNotRequested = "not-requested" // the profile does not ask for it
)

// Layer is one sandbox layer and whether it was in force.
type Layer struct {
	Name   string `json:"name"`             // a layer of enforcer's layer table (enforcer.Layers; README.md lists them)
	State  string `json:"state"`            // applied, degraded, not-requested
	Detail string `json:"detail,omitempty"` // why it was degraded, or what form it took
}

// Report is the result of one enforced (or audited) run.
type Report struct {
	Version     int       `json:"version"`
	Command     []string  `json:"command"`
	ProfilePath string    `json:"profile,omitempty"`
	Audit       bool      `json:"audit"` // complain mode: denials were reported but let through
	Started     time.Time `json:"started"`
	Finished    time.Time `json:"finished"`
	ExitCode    int       `json:"exitCode"`
	Layers      []Layer   `json:"layers,omitempty"`
	Denials     []Denial  `json:"denials"`
	// Changes are the run's writes that did not simply apply (issue 22): held, dangerous,
	// in conflict, refused, or applied with set-id bits or capabilities stripped.
	Changes *Changes `json:"changes,omitempty"`
	// Unobservable names kinds of denials this run could not see (for example "file denials as
	// an ordinary user"): an empty Denials list says nothing about them.
	Unobservable []string `json:"unobservable,omitempty"`
	// LostRecords counts refusals the run's observers could not record (the guard's ring buffer
	// was full, or its scratch space busy): they were refused, but an empty Denials list does
	// not mean nothing was. --fail-on-denial fails on them as on a denial.
	LostRecords uint64 `json:"lostRecords,omitempty"`
	// Notes are what the compile step did that a reviewer should know (hardening, widening).
	Notes []string `json:"notes,omitempty"`
	// ChangedBinaries are the profile's binaries whose content is not what learn hashed.
	ChangedBinaries []ChangedBinary `json:"changedBinaries,omitempty"`
	// Hidden are the secrets the command tried to read and was shown empty: information, not
	// denials (the profile hides them; gates and drift pass on them).
	Hidden []HiddenRead `json:"hidden,omitempty"`
	// CredentialUses is every request a brokered credential went out with, in order.
	CredentialUses []CredentialUse `json:"credentialUses,omitempty"`
	// EnvRemoved are the secret-looking variables the command did not get (policy.ScrubEnv):
	// information, not denials. A command that reads them, or its parent's /proc/PID/environ,
	// finds nothing, and no syscall says it looked: this is the record that they were kept.
	EnvRemoved []string `json:"envRemoved,omitempty"`
}

// SetEnvRemoved records the variables removed from the command's environment (sorted names)
// and adds its note.
func (r *Report) SetEnvRemoved(names []string) {
	if len(names) == 0 {
		return
	}
	r.EnvRemoved = names
	r.Notes = append(r.Notes, "environment: "+r.EnvNote())
}

// EnvNote says which variables the command did not get and how to pass one, or "".
func (r *Report) EnvNote() string {
	if len(r.EnvRemoved) == 0 {
		return ""
	}
	return fmt.Sprintf("%d secret-looking variable(s) removed: %s (to pass one: env: {pass: [NAME]})", len(r.EnvRemoved), strings.Join(r.EnvRemoved, ", "))
}

// HiddenRead is a hidden path (a credential store) the command reached for, by one executable.
type HiddenRead struct {
	// What says it for people: "tried to read /home/u/.npmrc: hidden".
	What   string `json:"what"`
	Path   string `json:"path"`
	Access string `json:"access,omitempty"`
	Exe    string `json:"exe"`
	Count  int    `json:"count"`
}

// AddHidden records a hidden read, merged with one of the same path, access and executable.
func (r *Report) AddHidden(h HiddenRead) {
	if h.Count == 0 {
		h.Count = 1
	}
	if h.What == "" {
		verb := h.Access
		if verb == "" {
			verb = "read"
		}
		h.What = fmt.Sprintf("tried to %s %s: hidden", verb, h.Path)
	}
	for i := range r.Hidden {
		if e := &r.Hidden[i]; e.Path == h.Path && e.Access == h.Access && e.Exe == h.Exe {
			e.Count += h.Count
			return
		}
	}
	r.Hidden = append(r.Hidden, h)
	slices.SortFunc(r.Hidden, func(a, b HiddenRead) int {
		return strings.Compare(a.Path+"\x00"+a.Exe+"\x00"+a.Access, b.Path+"\x00"+b.Exe+"\x00"+b.Access)
	})
}

// ChangedBinary is a binary whose sha256 differs from the one its profile recorded.
type ChangedBinary struct {
	Path    string `json:"path"`    // as the profile names it
	File    string `json:"file"`    // the file hashed (symlinks followed)
	Learned string `json:"learned"` // sha256 in the profile
	Now     string `json:"now"`     // sha256 of the file now
}

// Denial is one kind of refused operation by one executable, aggregated over the run.
type Denial struct {
	Kind Kind `json:"kind"`
	// What was refused: "ptrace(PTRACE_ATTACH)", "/home/u/.ssh/id_ed25519 read", "10.0.0.1:443 tcp".
	What string `json:"what"`
	// Structured forms of What, for refine. Only the fields of the denial's kind are set.
	Syscall  string `json:"syscall,omitempty"`
	Arch     string `json:"arch,omitempty"`
	Path     string `json:"path,omitempty"`
	Access   string `json:"access,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
	Proto    string `json:"proto,omitempty"`
	Host     string `json:"host,omitempty"`

	Exe     string    `json:"exe"`
	Parents []string  `json:"parents,omitempty"` // executables from the parent up to the sandbox root
	Count   int       `json:"count"`
	First   time.Time `json:"first"`
	// Suggest is the one-line profile change that would allow it, e.g. "syscalls.allow: + ptrace".
	Suggest string `json:"suggest"`
	// Change is that change as data (what refine applies), when the denial's source gives it;
	// Suggest is its printed form. Reports written before it existed have Suggest only: read
	// a denial's change with Suggested.
	Change *policy.Grant `json:"change,omitempty"`
	Risk   Risk          `json:"risk"`
	// Allowed is true when the operation went through anyway (audit mode).
	Allowed bool `json:"allowed,omitempty"`
}

// Suggested returns the profile change that would allow the denial: Change, or for a denial
// without one (an older report, a source that writes text only) the change read back from
// Suggest, also from an alternative in parentheses ("network.connect: + ENDPOINT proto: mptcp
// (or syscalls.args: socket arg 2: + IPPROTO_MPTCP)"). ok is false when neither says one.
func (d *Denial) Suggested() (g policy.Grant, ok bool) {
	if d.Change != nil {
		return *d.Change, true
	}
	if g, err := policy.ParseGrant(d.Suggest); err == nil {
		return g, true
	}
	if _, alt, found := strings.Cut(d.Suggest, " (or "); found {
		if g, err := policy.ParseGrant(strings.TrimSuffix(alt, ")")); err == nil {
			return g, true
		}
	}
	return policy.Grant{}, false
}

// key identifies the denials that are aggregated into one entry.
func (d *Denial) key() string {
	return string(d.Kind) + "\x00" + d.What + "\x00" + d.Exe + "\x00" + d.Suggest
}

// New returns an empty report for a command.
func New(command []string, profilePath string, audit bool) *Report {
	return &Report{Version: Version, Command: slices.Clone(command), ProfilePath: profilePath, Audit: audit, Denials: []Denial{}}
}

// Add records a denial, merging it into an existing entry with the same kind, what, executable
// and suggestion (counts add up, the earliest First wins).
func (r *Report) Add(d Denial) {
	if d.Count == 0 {
		d.Count = 1
	}
	k := d.key()
	for i := range r.Denials {
		e := &r.Denials[i]
		if e.key() != k {
			continue
		}
		e.Count += d.Count
		if !d.First.IsZero() && (e.First.IsZero() || d.First.Before(e.First)) {
			e.First = d.First
		}
		if len(e.Parents) == 0 {
			e.Parents = d.Parents
		}
		return
	}
	r.Denials = append(r.Denials, d)
}

// SetLayer records the state of a layer, replacing an earlier entry of the same name.
func (r *Report) SetLayer(l Layer) {
	for i := range r.Layers {
		if r.Layers[i].Name == l.Name {
			r.Layers[i] = l
			return
		}
	}
	r.Layers = append(r.Layers, l)
}

// Degraded returns the layers that the profile asked for but that were not in force.
func (r *Report) Degraded() []Layer {
	var out []Layer
	for _, l := range r.Layers {
		if l.State == LayerDegraded {
			out = append(out, l)
		}
	}
	return out
}

// Sort puts denials in their stable order: kind, what, executable.
func (r *Report) Sort() {
	slices.SortFunc(r.Denials, func(a, b Denial) int {
		if c := strings.Compare(string(a.Kind), string(b.Kind)); c != 0 {
			return c
		}
		if c := strings.Compare(a.What, b.What); c != 0 {
			return c
		}
		if c := strings.Compare(a.Exe, b.Exe); c != 0 {
			return c
		}
		return strings.Compare(a.Suggest, b.Suggest)
	})
}

// WriteJSON writes the report as indented JSON with denials in their stable order.
func (r *Report) WriteJSON(w io.Writer) error {
	r.Sort()
	if r.Denials == nil {
		r.Denials = []Denial{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Save writes the report to path atomically (a temporary file in the same directory, renamed).
func (r *Report) Save(path string) error {
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("save report: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("save report: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("save report: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("save report: %w", err)
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return fmt.Errorf("save report: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("save report: %w", err)
	}
	return nil
}

// Load reads a report written by Save or WriteJSON.
func Load(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load report: %w", err)
	}
	return Parse(b)
}

// Parse decodes a report. Unknown fields are ignored so that newer reports still load; a newer
// major version is refused.
func Parse(b []byte) (*Report, error) {
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("parse report: %w", err)
	}
	if r.Version > Version {
		return nil, fmt.Errorf("parse report: version %d is newer than this sysprof understands (%d): upgrade sysprof", r.Version, Version)
	}
	if r.Denials == nil {
		r.Denials = []Denial{}
	}
	r.Sort()
	return &r, nil
}

// WriteTable prints the denials as a table (names escaped: Printable; fitted to the terminal's
// width: Width, Fit), followed by one line per degraded layer. It prints
// nothing at all when there were no denials and no degraded layers.
func (r *Report) WriteTable(w io.Writer) error {
	r.Sort()
	degraded := r.Degraded()
	if len(r.Denials) == 0 && len(degraded) == 0 {
		r.writeHidden(w)
		r.writeEnv(w)
		r.writeLost(w)
		return nil
	}
	if len(r.Denials) > 0 {
		verb := "denied"
		if r.Audit {
			verb = "would be denied (audit: allowed)"
		}
		fmt.Fprintf(w, "sysprof: %d operation(s) %s:\n", r.total(), verb)
		t := tablewriter.NewTable(w, tablewriter.WithRenderer(renderer.NewBlueprint()))
		header := []string{"Kind", "What", "Executable", "Parents", "Count", "Risk", "To allow"}
		t.Header(header)
		var rows [][]string
		for _, d := range r.Denials {
			rows = append(rows, []string{string(d.Kind), Printable(d.What), Printable(d.Exe), Printable(strings.Join(d.Parents, " < ")), strconv.Itoa(d.Count), d.Risk.String(), Printable(d.Suggest)})
		}
		for _, row := range Fit(Width(w), header, rows) {
			if err := t.Append(row); err != nil {
				return fmt.Errorf("table: %w", err)
			}
		}
		if err := t.Render(); err != nil {
			return fmt.Errorf("table: %w", err)
		}
	}
	for _, l := range degraded {
		fmt.Fprintf(w, "sysprof: layer %s was NOT applied (degraded): %s\n", l.Name, Printable(l.Detail))
	}
	r.writeHidden(w)
	r.writeEnv(w)
	if len(r.Denials) > 0 && len(r.Unobservable) > 0 {
		fmt.Fprintf(w, "sysprof: not observable in this run: %s\n", Printable(strings.Join(r.Unobservable, "; ")))
	}
	r.writeLost(w)
	return nil
}

// writeLost prints, last, how many refusals were not recorded: the table above is incomplete.
func (r *Report) writeLost(w io.Writer) {
	if r.LostRecords > 0 {
		fmt.Fprintf(w, "sysprof: WARNING: %d record(s) lost: that many refusals were not recorded (the guard's ring buffer was full); the list above is incomplete\n", r.LostRecords)
	}
}

// writeHidden prints one line per hidden read: information, not a denial.
func (r *Report) writeHidden(w io.Writer) {
	for _, h := range r.Hidden {
		fmt.Fprintf(w, "sysprof: hidden (not a denial): %s %s; the profile keeps the secret hidden (learn --allow-secret to give it)\n",
			printable(h.Exe), printable(h.What))
	}
}

// writeEnv prints the variables the command did not get: information, not a denial.
func (r *Report) writeEnv(w io.Writer) {
	if n := r.EnvNote(); n != "" {
		fmt.Fprintf(w, "sysprof: environment (not a denial): %s\n", printable(n))
	}
}

// printable quotes s when it holds anything a terminal would not show as it is (control and
// bidi characters): names in a report are the command's, and hostile.
func printable(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) || r == utf8.RuneError }) >= 0 {
		return strconv.QuoteToGraphic(s)
	}
	return s
}

func (r *Report) total() int {
	n := 0
	for _, d := range r.Denials {
		n += d.Count
	}
	return n
}
