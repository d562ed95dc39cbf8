package synth

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/trace"
)

// DefaultRollupThreshold is how many distinct rules under one system directory make the
// directory itself the rule (Options.RollupThreshold).
const DefaultRollupThreshold = 8

// Options tune synthesis. The zero value is usable.
type Options struct {
	// RollupThreshold is the minimum number of distinct paths read (or written) under one
	// directory before the directory replaces them; 0 means DefaultRollupThreshold.
	RollupThreshold int
	// AllowSecrets are credential-store paths the user explicitly allows (--allow-secret), as
	// given: absolute, $HOME/..., ~/..., or relative to the work tree (.env). Allowing a path
	// inside a store un-hides the store (a mount cannot hide around one file) but keeps every
	// other access into it dropped, so only the named path becomes allowed.
	AllowSecrets []string
	// Exact turns the behaviour-equivalence Families off (learn --exact): only the syscalls
	// seen, the base set and the terminal probes are allowed. It also turns portability off,
	// which is on by default (profiles are committed and shared): without it synthesis adds
	// the libc-variant syscall families (open/openat, stat/newfstatat/statx, …) of every
	// family the command used and globs versions in paths (python3.11 → python3.*), so that a
	// profile learned with one libc, gcc or python runs with another.
	Exact bool
	// Unportable turns portability off but keeps the families: what learn did before portable
	// became the default. Drift compares with it too, so that a profile learned so does not
	// widen by portability alone.
	Unportable bool
	// Architectures the profile lists (learn --arch); empty means DefaultArchitectures when
	// learning, and the profile's own list when resynthesizing.
	Architectures []string
	// SysprofVersion is written to metadata.sysprofVersion.
	SysprofVersion string
	// Now gives the metadata timestamps; nil means time.Now.
	Now func() time.Time
	// Stores are the brokerable entries of the credential stores on the learn host (portable
	// store path -> entries: keys and hosts, never values), for the credential-flows pass.
	Stores map[string][]policy.SecretEntry
	// EnvTokens are the well-known token variables (policy.WellKnownToken) set in learn's
	// environment: names only, never values.
	EnvTokens []string
}

// Step is one line of what a pass did, printed by `sysprof learn --explain`.
type Step struct{ Pass, Message string }

func (s Step) String() string { return s.Pass + ": " + s.Message }

// Result is a synthesized profile with the story of how it was made.
type Result struct {
	Profile *policy.Profile
	// Explain holds what each pass did, in pipeline order.
	Explain []Step
	// Warnings are for the user's eyes now, e.g. the command touched a credential store.
	Warnings []string
	// SecretTouches are the credential-store accesses the profile kept hidden: behaviour a
	// drift check must flag even though the policy did not change.
	SecretTouches []SecretTouch
	// CredentialFlows are the credential flows the profile brokers (one line each), for
	// learn's review.
	CredentialFlows []string
}

// SecretTouch is one access to a credential store that synthesis dropped.
type SecretTouch struct {
	Exe    string // portable path of the binary
	Access string // read, write, ... or "tried to read (EACCES)"
	Path   string // portable path touched
	Store  string // the hidden store it lies in
}

// Synthesize turns one learn run into the smallest portable profile that lets the command do
// what it was seen doing. It is pure: it reads nothing but t and opts (Now included), and the
// same input always gives the same profile.
func Synthesize(t *trace.Trace, opts Options) (*Result, error) {
	if t == nil {
		return nil, fmt.Errorf("synthesize: nil trace")
	}
	if t.Version > trace.Version {
		return nil, fmt.Errorf("synthesize: trace format version %d is newer than this sysprof (%d): upgrade sysprof", t.Version, trace.Version)
	}
	s := newState(opts)
	if !opts.Exact {
		t, s.gitRefresh = withGitIndexRefresh(t)
	}
	s.ingestTrace(t)
	return s.run(), nil
}

// Resynthesize runs the pipeline again over a profile, read back as observations: every rule
// is one observation of its own path, every allowed syscall one observation by its `by`, every
// argument rule the values it lists, every endpoint one connection. A profile Synthesize made
// comes back unchanged (apart from metadata.updated) — the passes are idempotent — and a
// hand-edited one comes back normalized, with the credential stores hidden, the base syscalls
// present and the argument rules every allowed syscall needs.
func Resynthesize(p *policy.Profile, opts Options) (*Result, error) {
	if p == nil {
		return nil, fmt.Errorf("resynthesize: nil profile")
	}
	// A profile learned --exact stays exact: no pass adds a family it did not have.
	opts.Exact = opts.Exact || p.Metadata.Exact
	s := newState(opts)
	s.fromProfile = true
	if err := s.ingestProfile(p); err != nil {
		return nil, fmt.Errorf("resynthesize: %w", err)
	}
	return s.run(), nil
}

// pass is one step of the pipeline. It changes the state and says what it did, one line per
// thing; a pass with nothing to do says nothing.
type pass struct {
	name string
	run  func(*state) []string
}

// pipeline is the order synthesis runs in. File passes go from raw observations to rules,
// then shrink the rules (roll-ups run to a fixed point inside their pass; coverage only
// removes, so nothing after it can enable another roll-up).
var pipeline = []pass{
	{"git-index-refresh", func(s *state) []string { return s.gitRefresh }},
	{"portable-paths", (*state).passPortable},
	{"credentials", (*state).passCredentials},
	{"failed-probes", (*state).passFailedProbes},
	{"source-tree", (*state).passSourceTree},
	{"read", (*state).passRead},
	{"write", (*state).passWrite},
	{"tool-state", (*state).passToolState},
	{"exec", (*state).passExec},
	{"roles", (*state).passRoles},
	{"rollup-read", (*state).passRollupRead},
	{"rollup-write", (*state).passRollupWrite},
	{"locale", (*state).passLocale},
	{"versions", (*state).passVersions},
	{"terminal", (*state).passTerminal},
	{"coverage", (*state).passCoverage},
	{"private-tmp", (*state).passPrivateTmp},
	{"syscalls", (*state).passSyscalls},
	{"base", (*state).passBase},
	{"architectures", (*state).passArchitectures},
	{"runtime-variants", (*state).passRuntimeVariants},
	{"families", (*state).passFamilies},
	{"portable-syscalls", (*state).passPortableSyscalls},
	{"arch-equivalents", (*state).passArchEquivalents},
	{"args", (*state).passArgs},
	{"network", (*state).passNetwork},
	{"credential-flows", (*state).passCredentialFlows},
	{"metadata", (*state).passMetadata},
}

func (s *state) run() *Result {
	res := &Result{}
	for _, p := range pipeline {
		for _, m := range p.run(s) {
			res.Explain = append(res.Explain, Step{Pass: p.name, Message: m})
		}
	}
	res.Profile = s.emit()
	res.Warnings = s.warnings
	res.SecretTouches = s.secretTouches
	res.CredentialFlows = s.flows
	return res
}

// prov is the provenance of a rule while it is built: the portable exe that needed it, the
// rank of that exe's first process start (lower is earlier), and in how many runs it was seen.
type prov struct {
	by   string
	rank int
	seen int
}

// earliest keeps the provenance of whichever came first (rank, then exe name) and the
// highest seen count.
func earliest(a, b prov) prov {
	out := a
	switch {
	case a.by == "":
		out = b
	case b.by == "":
	case b.rank < a.rank || b.rank == a.rank && b.by < a.by:
		out = b
	}
	out.seen = max(a.seen, b.seen)
	return out
}

func (p prov) policy() policy.Provenance { return policy.Provenance{By: p.by, Seen: p.seen} }

// pathRule is one filesystem rule in the making.
type pathRule struct {
	prov
	note  string
	files int   // distinct observed paths the rule stands for
	node  int32 // scratch of rollup: the rule's place in its tree
}

// ruleSet is one section's rules by path (filesystem.read, write, ...).
type ruleSet struct {
	rules map[string]*pathRule // all but those in sorted
	// sorted holds rules added in increasing path order, as sorted observations add them:
	// a path greater than all in the set is new without a lookup, and goes here instead of
	// into the map (byPath makes it when something asks for it: read and list rolled up whole
	// never do; write's is made before its rollup). rollup builds its tree faster in this
	// order, too.
	sorted []ruleRef
	last   string // no path in the set is greater
}

type ruleRef struct {
	path string
	rule *pathRule
}

func newRuleSet() *ruleSet { return &ruleSet{rules: map[string]*pathRule{}} }

// byPath returns the rules by path: the map holds all of them until a greater path is added
// (which goes to sorted again).
func (rs *ruleSet) byPath() map[string]*pathRule {
	if len(rs.sorted) > 0 {
		m := make(map[string]*pathRule, len(rs.rules)+len(rs.sorted))
		for p, r := range rs.rules {
			m[p] = r
		}
		for _, e := range rs.sorted {
			m[e.path] = e.rule
		}
		rs.rules, rs.sorted = m, nil
	}
	return rs.rules
}

// paths returns the paths of the rules in increasing order: those in sorted are in order
// already, so only the map's are sorted, then merged with them (on find /usr's trace, 1.7k
// instead of 17.5k).
func (rs *ruleSet) paths() []string {
	loose := slices.Sorted(maps.Keys(rs.rules))
	out := make([]string, 0, len(loose)+len(rs.sorted))
	i := 0
	for _, e := range rs.sorted {
		for i < len(loose) && loose[i] < e.path {
			out = append(out, loose[i])
			i++
		}
		out = append(out, e.path)
	}
	return append(out, loose[i:]...)
}

// entries returns the rules in increasing path order, merged as paths does.
func (rs *ruleSet) entries() []ruleRef {
	loose := make([]ruleRef, 0, len(rs.rules))
	for p, r := range rs.rules {
		loose = append(loose, ruleRef{p, r})
	}
	slices.SortFunc(loose, func(a, b ruleRef) int { return strings.Compare(a.path, b.path) })
	if len(loose) == 0 {
		return slices.Clone(rs.sorted)
	}
	out := make([]ruleRef, 0, len(loose)+len(rs.sorted))
	i := 0
	for _, e := range rs.sorted {
		for i < len(loose) && loose[i].path < e.path {
			out = append(out, loose[i])
			i++
		}
		out = append(out, e)
	}
	return append(out, loose[i:]...)
}

// under calls fn for each rule at dir or below it (underDir), without making byPath's map:
// sorted's are one run of it, found by a binary search.
func (rs *ruleSet) under(dir string, fn func(p string, r *pathRule)) {
	for p, r := range rs.rules {
		if underDir(dir, p) {
			fn(p, r)
		}
	}
	if dir == "" || dir == "/" {
		for _, e := range rs.sorted {
			fn(e.path, e.rule)
		}
		return
	}
	i, _ := slices.BinarySearchFunc(rs.sorted, dir, func(e ruleRef, p string) int { return strings.Compare(e.path, p) })
	for ; i < len(rs.sorted) && strings.HasPrefix(rs.sorted[i].path, dir); i++ {
		if underDir(dir, rs.sorted[i].path) {
			fn(rs.sorted[i].path, rs.sorted[i].rule)
		}
	}
}

// get returns the rule at path p, or nil.
func (rs *ruleSet) get(p string) *pathRule {
	if r := rs.rules[p]; r != nil {
		return r
	}
	if i, ok := slices.BinarySearchFunc(rs.sorted, p, func(e ruleRef, p string) int { return strings.Compare(e.path, p) }); ok {
		return rs.sorted[i].rule
	}
	return nil
}

// len is the number of rules.
func (rs *ruleSet) len() int { return len(rs.rules) + len(rs.sorted) }

// set puts r at path p.
func (rs *ruleSet) set(p string, r *pathRule) {
	rs.byPath()[p] = r
	rs.last = max(rs.last, p)
}

// delete removes the rule at path p.
func (rs *ruleSet) delete(p string) { delete(rs.byPath(), p) }

// fileObs is one file access. A trace holds tens of thousands and the passes go over them
// many times, so they are kept small: the exe, one of a few, is an index into state.exes, and
// the access kind is one of the trace.Access* constants when it is a known kind (comparing
// with a constant then reads no memory of the trace).
type fileObs struct {
	path, access string
	errno        int
	exe          int32 // in state.exes
	ok, dir      bool
}

type procObs struct {
	exe, parent, sha string
}

type sysObs struct {
	name, arch, exe string
	nr              int
	seen            int
}

type argObs struct {
	exe, syscall, kind string
	value              uint64
	fields             map[string]uint64
	seen               int
}

type netObs struct {
	exe, op, family, proto, addr, path, host string
	port                                     int
	ok                                       bool
}

type epKey struct{ op, endpoint, proto string }

// state is the intermediate rule set the passes work on.
type state struct {
	opts Options
	// fromProfile: Resynthesize (the architectures stay the profile's own).
	fromProfile bool
	ctx         map[string]string
	vars        paths.Roots
	// rank orders exes by their first process start; exePIDs maps an absolute exe to its pids
	// (to turn /proc/<pid> into /proc/self).
	rank    map[string]int
	exePIDs map[string]map[string]bool

	// Observations (from a trace, or a profile read back).
	command []string
	files   []fileObs
	exes    []string // of files, as the trace names them sorted (indexes compare as names do), then portable
	procs   []procObs
	sys     []sysObs
	args    []argObs
	net     []netObs
	dnsName map[string]string // address → name that resolved to it
	limits  policy.Limits     // the peaks learn measured, times a margin (policy.LearnedLimits)

	// Rules.
	read, write, exec, list, hidden *ruleSet
	// stores are the credential stores of this profile, hidden or allowed: no roll-up or
	// directory grant may reach into one.
	stores        []string
	storeSet      *patternSet // stores, indexed
	ruleSlab      []pathRule  // where addRule takes new rules from
	privateTmp    bool
	syscalls      map[string]*sysRule
	arches        map[string]bool
	argRules      []policy.ArgRule
	clone3Plain   bool // a profile read back allows clone3 without the ENOSYS rule
	endpoints     map[epKey]prov
	resolved      map[string]prov // names looked up (DNS answers, resolve rules read back)
	binaries      map[[2]string]prov
	meta          policy.Metadata
	trace         *trace.Trace
	warnings      []string
	secretTouches []SecretTouch
	creds         []policy.Credential
	flows         []string
	// gitRefresh says which git index refreshes withGitIndexRefresh added to the trace.
	gitRefresh []string
}

type sysRule struct {
	prov
	base   bool
	family string // the Family (or terminalFamily, "arch") that added it; "" when learned
}

func newState(opts Options) *state {
	if opts.RollupThreshold <= 0 {
		opts.RollupThreshold = DefaultRollupThreshold
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &state{
		opts:      opts,
		ctx:       map[string]string{},
		rank:      map[string]int{},
		exePIDs:   map[string]map[string]bool{},
		dnsName:   map[string]string{},
		resolved:  map[string]prov{},
		read:      newRuleSet(),
		write:     newRuleSet(),
		exec:      newRuleSet(),
		list:      newRuleSet(),
		hidden:    newRuleSet(),
		syscalls:  map[string]*sysRule{},
		arches:    map[string]bool{},
		endpoints: map[epKey]prov{},
		binaries:  map[[2]string]prov{},
	}
}

// provOf is the provenance of an observation made by exe (already portable).
func (s *state) provOf(exe string) prov {
	r, ok := s.rank[exe]
	if !ok {
		r = len(s.rank) + 1<<20 // exes never seen starting come after every process
	}
	return prov{by: exe, rank: r, seen: 1}
}

// exeProvs is provOf of each of s.exes.
func (s *state) exeProvs() []prov {
	out := make([]prov, len(s.exes))
	for i, exe := range s.exes {
		out[i] = s.provOf(exe)
	}
	return out
}

// ingestTrace copies the observations of t into the state, in a deterministic order.
func (s *state) ingestTrace(t *trace.Trace) {
	s.trace = t
	for k, v := range t.Context {
		s.ctx[k] = v
	}
	s.vars = paths.NewRoots(s.ctx)
	s.command = slices.Clone(t.Command)
	s.limits = policy.LearnedLimits(t.Peaks.Pids, t.Peaks.Memory, t.Peaks.Tmp)
	if t.Peaks.WritesMeasured {
		s.limits.LearnedWrites(t.Peaks.Written, t.Peaks.WrittenFiles)
	}

	procs := slices.Clone(t.Processes)
	slices.SortStableFunc(procs, func(a, b trace.Process) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	byID := map[int]trace.Process{}
	for _, p := range t.Processes {
		byID[p.ID] = p
	}
	for i, p := range procs {
		if _, ok := s.rank[p.Exe]; !ok {
			s.rank[p.Exe] = i
		}
		if s.exePIDs[p.Exe] == nil {
			s.exePIDs[p.Exe] = map[string]bool{}
		}
		s.exePIDs[p.Exe][fmt.Sprint(p.PID)] = true
		parent := p.Exe
		if pp, ok := byID[p.Parent]; ok && p.Parent != 0 {
			parent = pp.Exe
		}
		s.procs = append(s.procs, procObs{exe: p.Exe, parent: parent, sha: p.SHA256})
	}
	s.files = make([]fileObs, len(t.Files))
	exes := interner{}
	for i, f := range t.Files {
		s.files[i] = fileObs{path: f.Path, access: knownAccess(f.Access), exe: exes.id(f.Exe), ok: f.OK, dir: f.Dir, errno: f.Errno}
	}
	// Observation order must not matter, for the explain lines and warnings either. The
	// profiler writes files sorted by exe, then path: with one executable (find) that is this
	// order already. Check while numbering the exes in order, sort only if not.
	var exeIDs []int32
	s.exes, exeIDs = exes.sorted()
	sorted := true
	for i := range s.files {
		f := &s.files[i]
		f.exe = exeIDs[f.exe]
		if sorted && i > 0 {
			sorted = compareFileObs(&s.files[i-1], f) <= 0
		}
	}
	if !sorted {
		slices.SortFunc(s.files, func(a, b fileObs) int { return compareFileObs(&a, &b) })
	}
	for _, c := range t.Syscalls {
		if c.Count == 0 {
			continue
		}
		s.sys = append(s.sys, sysObs{name: c.Name, arch: c.Arch, exe: c.Exe, nr: c.Nr, seen: 1})
	}
	for _, a := range t.Args {
		s.args = append(s.args, argObs{exe: a.Exe, syscall: a.Syscall, kind: a.Kind, value: a.Value, fields: a.Fields, seen: 1})
	}
	for _, n := range t.Network {
		s.net = append(s.net, netObs{exe: n.Exe, op: n.Op, family: n.Family, proto: n.Proto, addr: n.Addr,
			port: n.Port, path: n.Path, host: n.Host, ok: n.OK})
	}
	slices.SortFunc(s.sys, func(a, b sysObs) int {
		return cmp.Or(strings.Compare(a.exe, b.exe), strings.Compare(a.arch, b.arch), strings.Compare(a.name, b.name), cmp.Compare(a.nr, b.nr))
	})
	slices.SortFunc(s.args, func(a, b argObs) int {
		return cmp.Or(strings.Compare(a.exe, b.exe), strings.Compare(a.syscall, b.syscall), strings.Compare(a.kind, b.kind),
			cmp.Compare(a.value, b.value), cmp.Compare(fmt.Sprint(a.fields), fmt.Sprint(b.fields)))
	})
	slices.SortFunc(s.net, func(a, b netObs) int {
		return cmp.Or(strings.Compare(a.exe, b.exe), strings.Compare(a.op, b.op), strings.Compare(a.family, b.family),
			strings.Compare(a.proto, b.proto), strings.Compare(a.addr, b.addr), cmp.Compare(a.port, b.port),
			strings.Compare(a.path, b.path), strings.Compare(a.host, b.host), boolCmp(a.ok, b.ok))
	})
	for _, d := range t.DNS {
		if len(d.Addrs) > 0 {
			s.resolved[d.Name] = prov{}
		}
		for _, a := range d.Addrs {
			if cur, ok := s.dnsName[a]; !ok || d.Name < cur {
				s.dnsName[a] = d.Name
			}
		}
	}
}

// compareFileObs orders file observations by path, then access, exe, ok, dir and errno. It
// compares lazily (cmp.Or would compare every field of each pair).
func compareFileObs(a, b *fileObs) int {
	if c := strings.Compare(a.path, b.path); c != 0 {
		return c
	}
	return cmp.Or(strings.Compare(a.access, b.access), cmp.Compare(a.exe, b.exe),
		boolCmp(a.ok, b.ok), boolCmp(a.dir, b.dir), cmp.Compare(a.errno, b.errno))
}

// knownAccess returns the trace.Access* constant equal to a, or a.
func knownAccess(a string) string {
	for _, k := range trace.Accesses {
		if a == k {
			return k
		}
	}
	return a
}

// interner numbers strings in the order it first sees them.
type interner struct {
	names  []string
	ids    map[string]int32
	last   string // runs repeat a name: the last one is looked up first
	lastID int32
}

func (in *interner) id(name string) int32 {
	if len(in.names) > 0 && name == in.last {
		return in.lastID
	}
	id, ok := in.ids[name]
	if !ok {
		if in.ids == nil {
			in.ids = map[string]int32{}
		}
		id = int32(len(in.names))
		in.ids[name] = id
		in.names = append(in.names, name)
	}
	in.last, in.lastID = name, id
	return id
}

// sorted returns the names in order, and what each id becomes: its index among them.
func (in *interner) sorted() ([]string, []int32) {
	names := slices.Clone(in.names)
	slices.Sort(names)
	ids := make([]int32, len(names))
	for i, n := range names {
		ids[in.ids[n]] = int32(i)
	}
	return names, ids
}

// ingestProfile reads a profile back as observations and rules (see Resynthesize).
func (s *state) ingestProfile(p *policy.Profile) error {
	s.meta = p.Metadata
	s.meta.Command = slices.Clone(p.Metadata.Command)
	s.meta.IncompleteReasons = slices.Clone(p.Metadata.IncompleteReasons)
	s.command = slices.Clone(p.Metadata.Command)
	s.limits = p.Limits
	fromRules := func(dst *ruleSet, rules []policy.PathRule) {
		for _, r := range rules {
			if r.Note == localeNote && r.By == "" {
				continue // the locale pass puts it back
			}
			files := 1
			var n int
			if _, err := fmt.Sscanf(r.Note, "rolled up from %d", &n); err == nil && n > 0 {
				files = n
			}
			pr := prov{by: r.By, seen: r.Seen}
			if old := dst.get(r.Path); old != nil {
				pr = earliest(old.prov, pr)
			}
			dst.set(r.Path, &pathRule{prov: pr, note: r.Note, files: files})
		}
	}
	fromRules(s.read, p.Filesystem.Read)
	fromRules(s.write, p.Filesystem.Write)
	fromRules(s.exec, p.Filesystem.Exec)
	fromRules(s.list, p.Filesystem.List)
	fromRules(s.hidden, p.Filesystem.Hidden)
	s.privateTmp = p.Filesystem.PrivateTmp
	for _, a := range p.Syscalls.Architectures {
		s.arches[a] = true
	}
	for _, sc := range p.Syscalls.Allow {
		if sc.Base && sc.By == "" || sc.Family != "" {
			continue // the base and family passes put it back
		}
		s.sys = append(s.sys, sysObs{name: sc.Name, exe: sc.By, seen: sc.Seen})
	}
	args, clone3Plain, err := argObsFromRules(p)
	if err != nil {
		return err
	}
	s.args = args
	s.clone3Plain = clone3Plain
	for _, l := range []struct {
		op  string
		eps []policy.Endpoint
	}{{trace.OpConnect, p.Network.Connect}, {trace.OpSend, p.Network.Send}, {trace.OpBind, p.Network.Bind}} {
		for _, e := range l.eps {
			k := epKey{l.op, e.Endpoint, e.Proto}
			s.reached(k, prov{by: e.By, seen: e.Seen})
		}
	}
	for _, e := range p.Network.Resolve {
		s.resolved[e.Endpoint] = earliest(s.resolved[e.Endpoint], prov{by: e.By, seen: e.Seen})
	}
	for _, b := range p.Binaries {
		k := [2]string{b.Path, b.SHA256}
		s.binaries[k] = earliest(s.binaries[k], prov{by: b.By, seen: b.Seen})
	}
	s.creds = policy.Clone(&policy.Profile{Credentials: p.Credentials}).Credentials
	return nil
}

// emit builds the normalized profile from the rules.
func (s *state) emit() *policy.Profile {
	p := &policy.Profile{APIVersion: policy.APIVersion, Kind: policy.Kind, Metadata: s.meta, Limits: s.limits}
	for a := range s.arches {
		p.Syscalls.Architectures = append(p.Syscalls.Architectures, a)
	}
	for name, r := range s.syscalls {
		p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: name, Provenance: r.policy(), Base: r.base, Family: r.family})
	}
	p.Syscalls.Args = slices.Clone(s.argRules)
	rules := func(m *ruleSet) []policy.PathRule {
		var out []policy.PathRule
		for path, r := range m.byPath() {
			out = append(out, policy.PathRule{Path: path, Provenance: r.policy(), Note: r.note})
		}
		return out
	}
	p.Filesystem.Read = rules(s.read)
	p.Filesystem.Write = rules(s.write)
	p.Filesystem.Exec = rules(s.exec)
	p.Filesystem.List = rules(s.list)
	p.Filesystem.Hidden = rules(s.hidden)
	p.Filesystem.PrivateTmp = s.privateTmp
	for k, pr := range s.endpoints {
		e := policy.Endpoint{Endpoint: k.endpoint, Proto: k.proto, Provenance: pr.policy()}
		switch k.op {
		case trace.OpConnect:
			p.Network.Connect = append(p.Network.Connect, e)
		case trace.OpSend:
			p.Network.Send = append(p.Network.Send, e)
		case trace.OpBind:
			p.Network.Bind = append(p.Network.Bind, e)
		}
	}
	for _, name := range s.resolveOnly() {
		p.Network.Resolve = append(p.Network.Resolve, policy.Endpoint{Endpoint: name, Provenance: s.resolved[name].policy()})
	}
	for k, pr := range s.binaries {
		p.Binaries = append(p.Binaries, policy.Binary{Path: k[0], SHA256: k[1], Provenance: pr.policy()})
	}
	p.Credentials = slices.Clone(s.creds)
	policy.Normalize(p)
	// Normalize does not know Deny yet; keep it sorted here.
	for i := range p.Syscalls.Args {
		slices.Sort(p.Syscalls.Args[i].Deny)
	}
	return p
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// plural formats "1 file" / "3 files".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	switch {
	case strings.HasSuffix(word, "s") || strings.HasSuffix(word, "x"):
		return fmt.Sprintf("%d %ses", n, word)
	case strings.HasSuffix(word, "y"):
		return fmt.Sprintf("%d %sies", n, word[:len(word)-1])
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
