package refine

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/seccomp"
)

// Choice is a reviewer's answer to one proposal. The zero value is KeepDenied: a proposal
// nobody answered changes nothing.
type Choice int

const (
	KeepDenied Choice = iota // change nothing: the operation stays denied
	AllowExact               // allow exactly what was denied (Proposal.Exact)
	AllowDir                 // allow the directory the denied path is in (Proposal.Dir)
	Hide                     // hide the path (Proposal.Hide): absent inside the sandbox
)

var choiceNames = [...]string{"keep", "allow", "allow-dir", "hide"}

func (c Choice) String() string {
	if c < 0 || int(c) >= len(choiceNames) {
		return fmt.Sprintf("Choice(%d)", int(c))
	}
	return choiceNames[c]
}

// Key is the letter that picks the choice at a prompt: a, d, k or h.
func (c Choice) Key() byte {
	switch c {
	case AllowExact:
		return 'a'
	case AllowDir:
		return 'd'
	case Hide:
		return 'h'
	}
	return 'k'
}

// Label is the choice as a prompt shows it, its key in brackets: "[a]llow exactly".
func (c Choice) Label() string {
	switch c {
	case AllowExact:
		return "[a]llow exactly"
	case AllowDir:
		return "allow [d]irectory"
	case Hide:
		return "[h]ide"
	}
	return "[k]eep denied"
}

// Patch is one line added to a profile: the smallest change for a denial, or one of its
// alternatives. It is the change a denial carries (policy.Grant, report.Denial.Change) with
// the executable that asked, and prints itself the way a denial's Suggest does
// ("syscalls.allow: + ptrace").
type Patch struct {
	policy.Grant
	// By is the executable that asked, recorded as provenance.
	By string
	// Binary is the binaries: entry an exec change adds (the executable as learn records it:
	// its resolved path and sha256), so that the next drift or enforce --verify-binaries
	// knows it; nil when the profile lists it already or it cannot be read here.
	Binary *policy.Binary
}

func (p Patch) String() string {
	s := p.Grant.String()
	if p.Binary != nil && p.Section != "" {
		s += fmt.Sprintf(", %s: + %s", policy.SectionBinaries, p.Binary.Path)
	}
	return s
}

// key identifies the change a patch makes, for folding denials that need the same one.
func (p Patch) key() string {
	return p.Section + "\x00" + p.Syscall + "\x00" + strconv.Itoa(p.Arg) + "\x00" + p.Item + "\x00" + p.Proto
}

// Proposal is one distinct change that one or more denials need, rated like `sysprof diff`.
type Proposal struct {
	Kind report.Kind
	// Denial is the first denial that needs this change, with Count the total of every denial
	// folded in.
	Denial report.Denial
	// Denials are all the denials folded into this proposal, in report order.
	Denials []report.Denial
	// Exes are the executables that asked (portable), sorted.
	Exes []string
	// Exact is the smallest change: what AllowExact applies.
	Exact Patch
	// Dir allows the directory the path is in (AllowDir); nil when not offered.
	Dir *Patch
	// Hide hides the path, or the whole credential store it is in (Hide); nil when not offered.
	Hide *Patch
	// Changes are what accepting Exact changes, risk-classed by policy.Diff (widening only).
	Changes []policy.Change
	// DirChanges are what accepting Dir changes.
	DirChanges []policy.Change
	// Risk is the worst risk in Changes (critical whenever a credential store is touched);
	// Reason says why.
	Risk   policy.Risk
	Reason string
	// DirRisk is the worst risk in DirChanges.
	DirRisk policy.Risk
	// Summary says in words what accepting Exact allows: "allow /usr/bin/curl to run".
	Summary string
	// Choices are the answers that apply, in prompt order; Default is the one a reviewer gets
	// by pressing enter (KeepDenied for credential stores and what cannot be allowed).
	Choices []Choice
	Default Choice
	// Credential is the credential store the denied path is in, or "".
	Credential string
	// Review says why accepting Exact needs a person: a write to a protected path (or a
	// directory holding one), a new executable, a new network destination. Such a proposal is
	// accepted only by an interactive yes or by naming its item (AcceptNamed); its default
	// answer is KeepDenied. "" for the rest.
	Review string
}

// AcceptNamed reports whether name picks this proposal for a non-interactive accept: its
// exact item (a path, an endpoint, a syscall name), its patch as printed, or on a merged-/usr
// host the path's alias the report named (/bin/ls for /usr/bin/ls: the same file there).
func (p *Proposal) AcceptNamed(name string) bool {
	return p.Exact.Section != "" && (name == p.Exact.Item || name == p.Exact.String() || usrForm(name) == p.Exact.Item)
}

// review says why x needs a person to accept it, or "".
func review(x Patch) string {
	switch x.Section {
	case policy.SectionWrite:
		if q := policy.ProtectedPath(x.Item); q != "" {
			return "writes protected path " + q
		}
		if qs := paths.ProtectedBeneath(x.Item); len(qs) > 0 {
			return "writes a directory holding protected paths (" + strings.Join(qs, ", ") + ")"
		}
	case policy.SectionExec:
		return "new executable"
	case policy.SectionConnect, policy.SectionSend:
		return "new network destination"
	case policy.SectionResolve:
		return "new name for the DNS stub" // a refused lookup may be an exfiltration attempt
	}
	return ""
}

// Patch returns the change choice applies, or nil for KeepDenied and for choices that do not
// apply to this proposal.
func (p *Proposal) Patch(c Choice) *Patch {
	if !slices.Contains(p.Choices, c) {
		return nil
	}
	switch c {
	case AllowExact:
		x := p.Exact
		return &x
	case AllowDir:
		return p.Dir
	case Hide:
		return p.Hide
	}
	return nil
}

// Decision is a reviewer's answer to one proposal.
type Decision struct {
	Proposal Proposal
	Choice   Choice
}

// Note is what a refined path rule says about itself.
const Note = "refined from report"

// Propose returns one proposal per distinct change the denials of r need, worst risk first
// (critical first), then by section in file order and item. Denials needing the same change
// are folded into one proposal; a denial p already allows proposes nothing. A denial refine
// cannot turn into a valid profile line (an unknown syscall number, a relative path, an
// endpoint without a port, an unknown kind) still gets a proposal, whose only choice is
// KeepDenied and whose Summary says why, so that every denial is shown. env holds the
// variable values (without `$`) of the host that ran the command, as enforcer.HostEnv gives
// them, to make paths portable. Neither p nor r is modified. The error is for a nil input.
func Propose(p *policy.Profile, r *report.Report, env map[string]string) ([]Proposal, error) {
	if p == nil {
		return nil, fmt.Errorf("refine: no profile")
	}
	if r == nil {
		return nil, fmt.Errorf("refine: no report")
	}
	base := clone(policy.WithoutPending(p)) // a pending rule allows nothing yet
	policy.Normalize(base)
	var out []*Proposal
	index := map[string]*Proposal{}
	for _, d := range reviewable(r) {
		pr := propose(base, d, env)
		k := pr.Exact.key()
		if pr.Exact.Section == "" {
			k = "unhandled\x00" + string(d.Kind) + "\x00" + d.What
		}
		if e := index[k]; e != nil {
			e.Denials = append(e.Denials, d)
			e.Denial.Count += max(d.Count, 1)
			if !slices.Contains(e.Exes, pr.Exes[0]) {
				e.Exes = append(e.Exes, pr.Exes[0])
				slices.Sort(e.Exes)
			}
			continue
		}
		index[k] = pr
		out = append(out, pr)
	}
	var props []Proposal
	for _, pr := range out {
		if pr.Exact.Section != "" && len(pr.Changes) == 0 {
			continue // the profile already allows it
		}
		props = append(props, *pr)
	}
	slices.SortStableFunc(props, func(a, b Proposal) int {
		return cmp.Or(
			cmp.Compare(b.Risk, a.Risk),
			cmp.Compare(sectionIndex(a.Exact.Section), sectionIndex(b.Exact.Section)),
			strings.Compare(a.Exact.Syscall, b.Exact.Syscall),
			strings.Compare(a.Exact.Item, b.Exact.Item),
			strings.Compare(a.Exact.Proto, b.Exact.Proto),
		)
	})
	return props, nil
}

// reviewable is what refine proposes changes for: the report's denials, and each change the
// run's changeset held for review that a write rule would make learned (refine accepts it like
// any denial; a change no rule may allow, and a learned one held only by the apply mode, is not
// one).
func reviewable(r *report.Report) []report.Denial {
	if r.Changes == nil {
		return r.Denials
	}
	out := slices.Clone(r.Denials)
	for _, h := range r.Changes.Held {
		if h.Class == "learned" {
			continue
		}
		if d, ok := h.Denial(r.Finished); ok {
			out = append(out, d)
		}
	}
	return out
}

func sectionIndex(s string) int {
	if i := slices.Index(policy.Sections, s); i >= 0 {
		return i
	}
	return len(policy.Sections)
}

// propose makes the proposal for one denial against the normalized base profile.
func propose(base *policy.Profile, d report.Denial, env map[string]string) *Proposal {
	exe := d.Exe
	if path.IsAbs(exe) {
		exe = Portable(exe, env)
	}
	pr := &Proposal{Kind: d.Kind, Denial: d, Denials: []report.Denial{d}, Exes: []string{exe}}
	pr.Denial.Count = max(d.Count, 1)
	by := exe
	if !path.IsAbs(by) && !strings.HasPrefix(by, "$") {
		by = "" // (exited), (unknown): no provenance rather than a made-up one
	}
	var err error
	switch d.Kind {
	case report.KindSyscall:
		err = proposeSyscall(pr, d, by)
	case report.KindFile:
		err = proposeFile(pr, base, d, by, env)
	case report.KindNetwork:
		err = proposeNetwork(pr, d, by, env)
	case report.KindLimit:
		if g, ok := d.Suggested(); ok && policy.IsLimitSection(g.Section) {
			pr.Exact = Patch{Grant: g}
			pr.Summary = fmt.Sprintf("raise %s to %s", g.Section, g.Item)
		} else {
			err = fmt.Errorf("no limit to raise")
		}
	default:
		err = fmt.Errorf("unknown denial kind %q", d.Kind)
	}
	if err == nil && pr.Exact.Section != "" {
		// What the proposal adds must make a valid profile (a relative path, an endpoint
		// without a port would not): else it is shown, but cannot be accepted.
		next := clone(base)
		if err = apply(next, pr.Exact); err == nil {
			err = policy.Validate(next)
		}
	}
	if err != nil {
		pr.Exact, pr.Dir, pr.Hide, pr.Credential = Patch{}, nil, nil, ""
		pr.Summary = fmt.Sprintf("%s cannot be allowed automatically (%v): edit the profile by hand", d.What, err)
	}
	if pr.Exact.Section == "" { // nothing refine can add allows it
		pr.Choices, pr.Default = []Choice{KeepDenied}, KeepDenied
		pr.Risk = max(d.Risk, policy.RiskLow)
		return pr
	}
	pr.Changes = changesOf(base, pr.Exact)
	pr.Risk, pr.Reason = policy.GrantRisk(base, pr.Exact.Grant)
	if r, why := worst(pr.Changes); r > pr.Risk {
		pr.Risk, pr.Reason = r, why
	}
	if d.Risk > pr.Risk { // never below what the report said
		pr.Risk, pr.Reason = d.Risk, "rated "+d.Risk.String()+" by the report"
	}
	pr.Review = review(pr.Exact)
	if pr.Credential != "" {
		pr.Risk = policy.RiskCritical
		if pr.Reason == "" || !strings.Contains(pr.Reason, "credential") {
			pr.Reason = "credential store " + pr.Credential
		}
	}
	pr.Choices = []Choice{AllowExact}
	if pr.Dir != nil {
		pr.DirChanges = changesOf(base, *pr.Dir)
		pr.DirRisk, _ = worst(pr.DirChanges)
		if pr.Credential != "" {
			pr.DirRisk = policy.RiskCritical
		}
		pr.Choices = append(pr.Choices, AllowDir)
	}
	pr.Choices = append(pr.Choices, KeepDenied)
	if pr.Hide != nil {
		pr.Choices = append(pr.Choices, Hide)
	}
	pr.Default = AllowExact
	if pr.Credential != "" || pr.Review != "" {
		pr.Default = KeepDenied
	}
	return pr
}

// changesOf returns the widening changes applying x to base makes.
func changesOf(base *policy.Profile, x Patch) []policy.Change {
	next := clone(base)
	if err := apply(next, x); err != nil {
		return nil
	}
	var out []policy.Change
	for _, c := range policy.Diff(base, next) {
		if c.Widens {
			out = append(out, c)
		}
	}
	if len(out) == 0 && x.Section == policy.SectionArgs && len(next.Syscalls.Args) > len(base.Syscalls.Args) {
		// A rule where the profile had none (applyArg): the diff reads it as a restriction,
		// but the filter's own check it replaces let less through (prlimit64: pid 0 only).
		risk, why := policy.GrantRisk(base, x.Grant)
		out = append(out, policy.Change{Kind: policy.Widened, Section: policy.SectionArgs, Widens: true, Risk: risk, Reason: why, By: x.By,
			Item: fmt.Sprintf("%s arg %d: %s (beside what the filter's own check lets through)", x.Syscall, x.Arg, x.Item)})
	}
	return out
}

func worst(cs []policy.Change) (policy.Risk, string) {
	r, why := policy.RiskNone, ""
	for _, c := range cs {
		if c.Risk > r {
			r, why = c.Risk, c.Reason
		}
	}
	return r, why
}

func proposeSyscall(pr *Proposal, d report.Denial, exe string) error {
	g, suggested := d.Suggested()
	switch {
	case suggested && g.Section == policy.SectionArgs:
		if _, err := policy.ParseValue(g.Item); err != nil {
			return fmt.Errorf("suggested value: %w", err)
		}
		pr.Exact = Patch{Grant: policy.Grant{Section: policy.SectionArgs, Syscall: g.Syscall, Arg: g.Arg, Item: g.Item}, By: exe}
		pr.Summary = fmt.Sprintf("allow %s with argument %d = %s", g.Syscall, g.Arg, g.Item)
		return nil
	case suggested && g.Section == policy.SectionArchitectures,
		!suggested && strings.TrimSpace(d.Suggest) == policy.SectionArchitectures+": +" && d.Arch != "":
		a := g.Item
		if a == "" {
			a = d.Arch
		}
		pr.Exact = Patch{Grant: policy.Grant{Section: policy.SectionArchitectures, Item: a}}
		pr.Summary = "allow system calls through the " + a + " ABI"
		return nil
	}
	name := d.Syscall
	if name == "" && suggested && g.Section == policy.SectionSyscalls {
		name = g.Item
	}
	if name == "" {
		return fmt.Errorf("no syscall name")
	}
	if !policy.IsSyscall(name) {
		pr.Summary = fmt.Sprintf("%s cannot be allowed: not a syscall name sysprof knows", name)
		return nil
	}
	pr.Exact = Patch{Grant: policy.Grant{Section: policy.SectionSyscalls, Item: name}, By: exe}
	pr.Summary = "allow syscall " + name
	return nil
}

func proposeFile(pr *Proposal, base *policy.Profile, d report.Denial, exe string, env map[string]string) error {
	if d.Path == "" {
		return fmt.Errorf("no path")
	}
	p := Portable(d.Path, env)
	var section, verb string
	switch d.Access {
	case "read", "list", "metadata", "":
		section, verb = policy.SectionRead, "allow reading "+p
	case "write", "create", "delete":
		section, verb = policy.SectionWrite, "allow writing "+p
	case "exec":
		section, verb = policy.SectionExec, "allow "+p+" to run"
	default:
		return fmt.Errorf("unknown access %q", d.Access)
	}
	pr.Summary = verb
	unhide := hiddenCovering(base, p)
	pr.Exact = Patch{Grant: policy.Grant{Section: section, Item: p, Unhide: unhide}, By: exe}
	if section == policy.SectionExec {
		pr.Exact.Binary = binaryOf(base, d.Path, exe, env)
	}
	pr.Credential = paths.CredentialStore(p)
	if pr.Credential != "" {
		if len(unhide) == 0 {
			pr.Hide = &Patch{Grant: policy.Grant{Section: policy.SectionHidden, Item: pr.Credential}, By: exe}
		}
		return nil
	}
	if len(unhide) == 0 {
		pr.Hide = &Patch{Grant: policy.Grant{Section: policy.SectionHidden, Item: p}, By: exe}
	}
	if dir := parentDir(p); dir != "" && len(hiddenCovering(base, dir)) == 0 {
		pr.Dir = &Patch{Grant: policy.Grant{Section: section, Item: dir, Unhide: unhide}, By: exe, Binary: pr.Exact.Binary}
	}
	return nil
}

// Executable returns what learn records for the binary at host path p: its path with symlinks
// resolved (the kernel's name for what runs) and its sha256. It is the one host access refine
// makes; ok is false when p cannot be read here. Tests replace it.
var Executable = hostExecutable

// binaryOf is the binaries: entry a denied exec of host path p needs: nil when the profile
// lists that binary already (under any hash: a changed binary is drift's to report) or it
// cannot be read. A binary the run itself writes (below $TMPDIR or a write rule) gets no hash,
// as learn gives it none: it changes with every build.
func binaryOf(base *policy.Profile, p, by string, env map[string]string) *policy.Binary {
	if !path.IsAbs(p) {
		return nil
	}
	resolved, sum, ok := Executable(p)
	if !ok {
		return nil
	}
	bp := Portable(resolved, env)
	if slices.ContainsFunc(base.Binaries, func(b policy.Binary) bool { return b.Path == bp }) {
		return nil
	}
	if strings.HasPrefix(bp, "$TMPDIR/") || slices.ContainsFunc(base.Filesystem.Write, func(w policy.PathRule) bool { return paths.Covers(w.Path, bp) }) {
		sum = ""
	}
	return &policy.Binary{Path: bp, SHA256: sum, Provenance: policy.Provenance{By: by}}
}

func hostExecutable(p string) (resolved, sum string, ok bool) {
	resolved, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", "", false
	}
	f, err := os.Open(resolved)
	if err != nil {
		return "", "", false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "", "", false
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", "", false
	}
	return resolved, hex.EncodeToString(h.Sum(nil)), true
}

// parentDir is the directory a proposal may allow instead of a path: its parent, unless that
// is `/`, a bare variable ($HOME, $WORKDIR), a top-level directory, or holds a credential store.
func parentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return ""
	}
	dir := p[:i]
	if !strings.Contains(dir, "/") || strings.Count(dir, "/") == 1 && !strings.HasPrefix(dir, "$") {
		return "" // $HOME, /usr: far more than the path
	}
	for _, c := range paths.CredentialStores() {
		if paths.Covers(dir, c) || paths.Covers(c, dir) {
			return ""
		}
	}
	return dir
}

// hiddenCovering returns the hidden rules of p that cover path.
func hiddenCovering(p *policy.Profile, x string) []string {
	var out []string
	for _, h := range p.Filesystem.Hidden {
		if paths.Covers(h.Path, x) {
			out = append(out, h.Path)
		}
	}
	return out
}

func proposeNetwork(pr *Proposal, d report.Denial, exe string, env map[string]string) error {
	if g, ok := d.Suggested(); ok && g.Section == policy.SectionResolve {
		// A refused lookup knows no port: the stub answers the name, and the connection that
		// follows is reported with its port.
		if a, err := policy.ParseEndpoint(g.Item + ":1"); err != nil || a.Host == "" {
			return fmt.Errorf("%q is not a DNS name", g.Item)
		}
		pr.Exact = Patch{Grant: policy.Grant{Section: g.Section, Item: g.Item}, By: exe}
		pr.Summary = "answer " + g.Item + " in the DNS stub"
		return nil
	}
	section := networkSection(d)
	ep := d.Endpoint
	if ep == "" {
		return fmt.Errorf("no endpoint")
	}
	proto := d.Proto
	if rest, ok := strings.CutPrefix(ep, "unix:"); ok {
		if path.IsAbs(rest) {
			ep = "unix:" + Portable(rest, env)
		}
		proto = ""
	} else {
		port, err := portOf(ep)
		if err != nil {
			return err
		}
		if d.Host != "" {
			ep = hostPort(d.Host, port)
		}
		if proto == "" {
			proto = "tcp"
			if section == policy.SectionSend {
				proto = "udp"
			}
		}
	}
	if _, err := policy.ParseEndpoint(ep); err != nil {
		return err
	}
	pr.Exact = Patch{Grant: policy.Grant{Section: section, Item: ep, Proto: proto}, By: exe}
	op := strings.TrimPrefix(section, "network.")
	pr.Summary = strings.TrimSpace(fmt.Sprintf("allow %s %s %s", op, ep, proto))
	return nil
}

func hostPort(host string, port uint16) string {
	if a, err := netip.ParseAddr(host); err == nil && a.Is6() {
		return netip.AddrPortFrom(a, port).String()
	}
	return host + ":" + strconv.Itoa(int(port))
}

func portOf(ep string) (uint16, error) {
	if ap, err := netip.ParseAddrPort(ep); err == nil {
		return ap.Port(), nil
	}
	a, err := policy.ParseEndpoint(ep)
	if err != nil {
		return 0, err
	}
	return uint16(a.Port), nil
}

// networkSection says which allowlist a network denial needs: the denied syscall, else the
// report's suggestion, else connect.
func networkSection(d report.Denial) string {
	switch d.Syscall {
	case "connect":
		return policy.SectionConnect
	case "sendto", "sendmsg", "sendmmsg":
		return policy.SectionSend
	case "bind":
		return policy.SectionBind
	}
	for _, s := range []string{policy.SectionConnect, policy.SectionSend, policy.SectionBind} {
		if g, ok := d.Suggested(); ok && g.Section == s || strings.HasPrefix(d.Suggest, s+":") {
			return s
		}
	}
	switch {
	case strings.HasPrefix(d.What, "send"):
		return policy.SectionSend
	case strings.HasPrefix(d.What, "bind"):
		return policy.SectionBind
	}
	return policy.SectionConnect
}

// Apply returns p with the answers applied; p is never modified. A KeepDenied answer changes
// nothing; an answer that is not one of its proposal's Choices is an error. The result is
// normalized and validated.
func Apply(p *policy.Profile, decisions []Decision) (*policy.Profile, error) {
	if p == nil {
		return nil, fmt.Errorf("refine: no profile")
	}
	out := clone(p)
	for _, d := range decisions {
		if d.Choice == KeepDenied {
			continue
		}
		x := d.Proposal.Patch(d.Choice)
		if x == nil {
			return nil, fmt.Errorf("refine: %q cannot be answered %s (choices: %v)", d.Proposal.Summary, d.Choice, d.Proposal.Choices)
		}
		if err := apply(out, *x); err != nil {
			return nil, fmt.Errorf("refine: %s: %w", x, err)
		}
	}
	policy.Normalize(out)
	if err := policy.Validate(out); err != nil {
		return nil, fmt.Errorf("refine: the refined profile is invalid: %w", err)
	}
	return out, nil
}

// apply adds one patch to p in place.
func apply(p *policy.Profile, x Patch) error {
	fs := &p.Filesystem
	if len(x.Unhide) > 0 {
		fs.Hidden = slices.DeleteFunc(fs.Hidden, func(h policy.PathRule) bool { return slices.Contains(x.Unhide, h.Path) })
	}
	addPath := func(l *[]policy.PathRule) {
		if policy.Accept(p, x.Section, x.Item) {
			return // learned pending: accepting it is all
		}
		if !slices.ContainsFunc(*l, func(r policy.PathRule) bool { return r.Path == x.Item }) {
			*l = append(*l, policy.PathRule{Path: x.Item, Provenance: policy.Provenance{By: x.By}, Note: Note})
		}
	}
	addEndpoint := func(l *[]policy.Endpoint) {
		if !slices.ContainsFunc(*l, func(e policy.Endpoint) bool { return e.Endpoint == x.Item && e.Proto == x.Proto }) {
			*l = append(*l, policy.Endpoint{Endpoint: x.Item, Proto: x.Proto, Provenance: policy.Provenance{By: x.By}})
		}
	}
	if b := x.Binary; b != nil && !slices.ContainsFunc(p.Binaries, func(o policy.Binary) bool { return o.Path == b.Path }) {
		p.Binaries = append(p.Binaries, *b)
	}
	switch x.Section {
	case policy.SectionSyscalls:
		if !slices.ContainsFunc(p.Syscalls.Allow, func(s policy.Syscall) bool { return s.Name == x.Item }) {
			p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: x.Item, Provenance: policy.Provenance{By: x.By}})
		}
	case policy.SectionArchitectures:
		if !slices.Contains(p.Syscalls.Architectures, x.Item) {
			p.Syscalls.Architectures = append(p.Syscalls.Architectures, x.Item)
		}
	case policy.SectionArgs:
		return applyArg(p, x)
	case policy.SectionRead:
		addPath(&fs.Read)
	case policy.SectionWrite:
		addPath(&fs.Write)
	case policy.SectionExec:
		addPath(&fs.Exec)
	case policy.SectionHidden:
		addPath(&fs.Hidden)
	case policy.SectionConnect:
		addEndpoint(&p.Network.Connect)
	case policy.SectionSend:
		addEndpoint(&p.Network.Send)
	case policy.SectionBind:
		addEndpoint(&p.Network.Bind)
	case policy.SectionResolve:
		addEndpoint(&p.Network.Resolve)
	case policy.SectionLimitPids, policy.SectionLimitMemory, policy.SectionLimitTmp, policy.SectionLimitWrite, policy.SectionLimitFiles:
		return p.Limits.Raise(x.Section, x.Item)
	default:
		return fmt.Errorf("BUG: refine cannot patch section %q", x.Section)
	}
	return nil
}

// applyArg lets value x.Item through every rule on x.Syscall's argument x.Arg: it is taken
// off their deny lists, added to their value lists, and its bits to their flag lists. Without
// such a rule the refused value met the filter's own check: the rule seccomp.LiftRule gives
// is added.
func applyArg(p *policy.Profile, x Patch) error {
	v, err := policy.ParseValue(x.Item)
	if err != nil {
		return err
	}
	num := func(s string) (uint64, bool) {
		n, err := policy.ParseValue(s)
		return n, err == nil
	}
	if !slices.ContainsFunc(p.Syscalls.Args, func(r policy.ArgRule) bool { return r.Syscall == x.Syscall && r.Arg == x.Arg }) {
		// No rule of the profile: the filter's own check refused it (prlimit64 on another
		// pid). Add the rule that lets v through besides what that check lets through.
		r, guarded, ok := seccomp.LiftRule(x.Syscall, x.Arg, v)
		switch {
		case !guarded:
			return nil // every value passes already
		case !ok:
			return fmt.Errorf("no rule on %s argument %d to widen, and the filter's check there cannot be lifted by one: allow it by hand in syscalls.args", x.Syscall, x.Arg)
		}
		r.Provenance = policy.Provenance{By: x.By}
		p.Syscalls.Args = append(p.Syscalls.Args, r)
		return nil
	}
	for i := range p.Syscalls.Args {
		r := &p.Syscalls.Args[i]
		if r.Syscall != x.Syscall || r.Arg != x.Arg {
			continue
		}
		mask := ^uint64(0)
		if r.Mask != "" {
			if m, ok := num(r.Mask); ok {
				mask = m
			}
		}
		mv := v & mask
		r.Deny = slices.DeleteFunc(slices.Clone(r.Deny), func(s string) bool {
			n, ok := num(s)
			return ok && n&mask == mv
		})
		if len(r.Deny) == 0 {
			r.Deny = nil
		}
		if len(r.Values) > 0 && !slices.ContainsFunc(r.Values, func(s string) bool {
			n, ok := num(s)
			return ok && n&mask == mv
		}) {
			r.Values = append(slices.Clone(r.Values), x.Item)
		}
		if len(r.Flags) > 0 {
			var allowed uint64
			for _, f := range r.Flags {
				if n, ok := num(f); ok {
					allowed |= n
				}
			}
			if v&^allowed != 0 {
				r.Flags = append(slices.Clone(r.Flags), x.Item)
			}
		}
	}
	return nil
}

// clone is a deep copy (policy.Clone, and the deny lists it shares).
func clone(p *policy.Profile) *policy.Profile {
	q := policy.Clone(p)
	for i := range q.Syscalls.Args {
		q.Syscalls.Args[i].Deny = slices.Clone(q.Syscalls.Args[i].Deny)
	}
	return q
}
