package synth

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/trace"
)

// passPortable rewrites every machine-specific path (files, exes, unix sockets, the command)
// into its portable form. A profile read back is portable already: nothing to do.
func (s *state) passPortable() []string {
	if s.trace == nil {
		return nil
	}
	// With many files, the second half is rewritten at once with counts of its own.
	counts, second := newPortableCounts(), newPortableCounts()
	s.makePortable(counts, second)
	return s.portableMsgs(counts, second)
}

// exeConverter makes executables portable: they are few and repeat.
type exeConverter struct {
	s           *state
	counts      *portableCounts
	out         map[string]string
	lastIn      string
	lastOut     string
	lastCounted lastCounted
}

// convN returns p's portable form, counting p as used uses times as an executable.
func (c *exeConverter) convN(p string, uses int) string {
	if p == "" || !path.IsAbs(p) {
		return p
	}
	if p != c.lastIn {
		o, ok := c.out[p]
		if !ok {
			o = c.s.vars.Generalize(p, c.s.exePIDs[""])
			c.out[p] = o
		}
		c.lastIn, c.lastOut = p, o
	}
	c.counts.add(p, c.lastOut, uses, &c.lastCounted)
	return c.lastOut
}

func (c *exeConverter) conv(p string) string { return c.convN(p, 1) }

// makePortable rewrites the paths of every observation (files, unix sockets) and every
// executable (ranks, processes, syscalls, arguments, the command), counting what it did in
// counts (and the second half of the files in second).
func (s *state) makePortable(counts, second *portableCounts) {
	rw := newPathRewriter(s, counts)
	exe := &exeConverter{s: s, counts: counts, out: map[string]string{}}
	rank := map[string]int{}
	for e, r := range s.rank {
		pe := exe.conv(e)
		if cur, ok := rank[pe]; !ok || r < cur {
			rank[pe] = r
		}
	}
	// Rewriting the file rw is most of the pass, and each path is rewritten on its own:
	// with many, the two halves at once, the second with its own memo and counts (its rw
	// are told apart from the first's at the end).
	uses, secondUses := make([]int, len(s.exes)), make([]int, len(s.exes))
	inHalves(len(s.files),
		func(lo, hi int) { rw.files(s.files[lo:hi], s.exes, uses) },
		func(lo, hi int) { newPathRewriter(s, second).files(s.files[lo:hi], s.exes, secondUses) })
	counts.procSelf += second.procSelf
	counts.procAny += second.procAny
	for i, n := range secondUses {
		uses[i] += n
	}
	for i, e := range s.exes {
		s.exes[i] = exe.convN(e, uses[i])
	}
	for i := range s.procs {
		p := &s.procs[i]
		p.exe, p.parent = exe.conv(p.exe), exe.conv(p.parent)
	}
	for i := range s.sys {
		s.sys[i].exe = exe.conv(s.sys[i].exe)
	}
	for i := range s.args {
		s.args[i].exe = exe.conv(s.args[i].exe)
	}
	for i := range s.net {
		n := &s.net[i]
		if !strings.HasPrefix(n.path, "@") {
			n.path = rw.rewrite(n.path, n.exe, n.ok)
		}
		n.exe = exe.conv(n.exe)
	}
	for i, a := range s.command {
		s.command[i] = exe.conv(a)
	}
	s.rank = rank
}

// portableMsgs says what passPortable did: the paths each variable stands in, the per-run
// names collapsed into globs, the /proc/<pid> paths.
func (s *state) portableMsgs(counts, second *portableCounts) []string {
	var msgs []string
	perVar := distinctPaths(counts.perVar, second.perVar)
	for _, v := range s.vars {
		if n := perVar[v.Name]; n > 0 {
			msgs = append(msgs, fmt.Sprintf("%s → $%s (%s seen)", v.Value, v.Name, plural(n, "path")))
		}
	}
	msgs = append(msgs, collapsedNames(distinctPaths(counts.globbed, second.globbed))...)
	if counts.procSelf+counts.procAny > 0 {
		msgs = append(msgs, fmt.Sprintf("/proc/<pid>: %s to the process's own pid → /proc/self, %d to other pids → /proc/*", plural(counts.procSelf, "access"), counts.procAny))
	}
	return msgs
}

// collapsedNames is one line per directory of the globbed paths (how many paths each glob
// stands for): its collapsed names, and how many paths they stand for; sibling directories
// beyond a few share a line ($GOCACHE/00 … $GOCACHE/ff → $GOCACHE/*).
func collapsedNames(globbed map[string]int) []string {
	byDir := map[string]map[string]bool{}
	count := map[string]int{}
	for key, n := range globbed {
		d := parentDir(key)
		if byDir[d] == nil {
			byDir[d] = map[string]bool{}
		}
		byDir[d][key[len(d)+1:]] = true
		count[d] += n
	}
	siblings := map[string][]string{}
	for d := range byDir {
		siblings[parentDir(d)] = append(siblings[parentDir(d)], d)
	}
	for parent, dirs := range siblings {
		if len(dirs) <= 3 || parent == "" {
			continue
		}
		merged := parent + "/* (" + plural(len(dirs), "directory") + ")"
		byDir[merged] = map[string]bool{}
		for _, d := range dirs {
			for n := range byDir[d] {
				byDir[merged][n] = true
			}
			count[merged] += count[d]
			delete(byDir, d)
		}
	}
	var msgs []string
	for _, d := range sortedKeys(byDir) {
		msgs = append(msgs, fmt.Sprintf("per-run names collapsed in %s: %s (%s)", d, strings.Join(sortedKeys(byDir[d]), ", "), plural(count[d], "path")))
	}
	return msgs
}

// minParallel is the least work, in observations, worth a second goroutine (a variable for
// the test that compares with the serial code).
var minParallel = 2048

// inHalves runs first and second on the two halves of [0, n) at once, second in another
// goroutine, when each has at least minParallel items (the machine has a core spare once the
// command has ended); else first on the whole.
func inHalves(n int, first, second func(lo, hi int)) {
	mid := n / 2
	if mid < minParallel {
		first(0, n)
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { second(mid, n) })
	first(0, mid)
	wg.Wait()
}

// pathRewriter rewrites observed paths into their portable form, and counts what it did.
// Observations come sorted by path: one path seen with several access kinds by one exe is
// rewritten and counted once (the pids of exe matter for /proc/<pid>), and the next path
// usually lies in the directory of the last (portableMemo).
type pathRewriter struct {
	memo                     *paths.PortableMemo
	exePIDs                  map[string]map[string]bool
	counts                   *portableCounts
	lastIn, lastExe, lastOut string
	lastCounted              lastCounted
}

func newPathRewriter(s *state, counts *portableCounts) *pathRewriter {
	return &pathRewriter{memo: paths.NewPortableMemo(s.vars), exePIDs: s.exePIDs, counts: counts}
}

// rewrite returns the portable form of p, accessed by exe (as the trace names it). Failed
// accesses (counted false) are rewritten like the rest but not counted: their (many: ld.so's
// search path) names would only clutter the explain lines.
func (w *pathRewriter) rewrite(p, exe string, counted bool) string {
	if p == "" || !path.IsAbs(p) {
		return p
	}
	if p != w.lastIn || exe != w.lastExe {
		w.lastIn, w.lastExe = p, exe
		w.lastOut = w.memo.Path(p, func() map[string]bool { return w.exePIDs[exe] })
	}
	if counted {
		w.counts.add(p, w.lastOut, 1, &w.lastCounted)
	}
	return w.lastOut
}

// files rewrites the paths of files, whose exes (still as the trace names them) it counts in
// uses.
func (w *pathRewriter) files(files []fileObs, exes []string, uses []int) {
	for i := range files {
		f := &files[i]
		f.path = w.rewrite(f.path, exes[f.exe], f.ok)
		uses[f.exe]++
	}
}

// portableCounts is what passPortable tells about its rewrites: the distinct paths each
// variable stands for, the distinct paths behind each collapsed name (by the prefix of the
// rewrite through its first glob), and the accesses to /proc/<pid>.
type portableCounts struct {
	perVar, globbed   pathSets
	procSelf, procAny int
}

func newPortableCounts() *portableCounts {
	return &portableCounts{perVar: pathSets{}, globbed: pathSets{}}
}

// pathSets holds a set of paths by name.
type pathSets map[string]map[string]bool

func (m pathSets) add(name, p string) {
	if m[name] == nil {
		m[name] = map[string]bool{}
	}
	m[name][p] = true
}

// lastCounted is the last rewrite one caller counted: counting it again only adds to the
// /proc counters (the sets have it already).
type lastCounted struct {
	in, out           string
	procSelf, procAny int
}

// add counts n accesses to host path p, rewritten as out.
func (c *portableCounts) add(p, out string, n int, last *lastCounted) {
	if p != last.in || out != last.out {
		*last = lastCounted{in: p, out: out}
		if strings.HasPrefix(out, "$") {
			name := out[1:]
			if i := strings.IndexByte(name, '/'); i >= 0 {
				name = name[:i]
			}
			c.perVar.add(name, p)
		}
		switch {
		case strings.HasPrefix(out, "/proc/self") && !strings.HasPrefix(p, "/proc/self"):
			last.procSelf = 1
		case strings.HasPrefix(out, "/proc/*"):
			last.procAny = 1
		default:
			if key := globPrefix(out); key != "" {
				c.globbed.add(key, p)
			}
		}
	}
	c.procSelf += n * last.procSelf
	c.procAny += n * last.procAny
}

// distinctPaths returns how many distinct paths each name has in all the sets (cheaper than
// merging them: a path of a later set is only looked up in the earlier ones).
func distinctPaths(sets ...pathSets) map[string]int {
	out := map[string]int{}
	for i, m := range sets {
		for name, paths := range m {
			if i == 0 {
				out[name] += len(paths)
				continue
			}
			for p := range paths {
				if !slices.ContainsFunc(sets[:i], func(prev pathSets) bool { return prev[name][p] }) {
					out[name]++
				}
			}
		}
	}
	return out
}

// globPrefix is p up to the end of its first component holding a glob, or "" when none does.
func globPrefix(p string) string {
	i := strings.IndexByte(p, '*')
	if i < 0 {
		return ""
	}
	if j := strings.IndexByte(p[i:], '/'); j >= 0 {
		return p[:i+j]
	}
	return p
}

// secretPattern turns an --allow-secret argument into the portable form hidden paths use.
func (s *state) secretPattern(a string) string {
	a = strings.TrimSpace(a)
	switch {
	case a == "~":
		a = "$HOME"
	case strings.HasPrefix(a, "~/"):
		a = "$HOME" + a[1:]
	case path.IsAbs(a):
		a = s.vars.Generalize(a, nil)
	case !strings.HasPrefix(a, "$"):
		a = "$WORKDIR/" + a // relative to where the command runs: --allow-secret .env
	}
	if strings.HasPrefix(a, "${") {
		if i := strings.IndexByte(a, '}'); i > 0 {
			a = "$" + a[2:i] + a[i+1:]
		}
	}
	return path.Clean(a)
}

// passCredentials hides the credential stores in every profile and drops any observed access
// to them, with a loud warning, unless the user allowed that secret.
func (s *state) passCredentials() []string {
	msgs := s.hideStores()
	allowed := s.allowedSecrets()
	// Accesses are judged against every store, hidden or allowed: allowing
	// $HOME/.ssh/known_hosts un-hides $HOME/.ssh (a mount cannot hide around one file) but
	// keeps dropping what the tool did to $HOME/.ssh/id_rsa, so only the named path is allowed.
	for _, h := range sortedKeys(s.hidden.byPath()) {
		for _, a := range allowed {
			if paths.Covers(h, a) || paths.Covers(a, h) {
				s.hidden.delete(h)
				msgs = append(msgs, fmt.Sprintf("%s not hidden: --allow-secret %s", h, a))
				break
			}
		}
	}
	dropped, warned := s.dropSecretTouches(s.newStoreJudge(allowed))
	if dropped > 0 {
		msgs = append(msgs, fmt.Sprintf("dropped %s to credential stores (%d in the warnings; failed probes for missing files are not)", plural(dropped, "access"), warned))
	}
	msgs = append(msgs, fmt.Sprintf("%s hidden in every profile (credential stores, ssh-agent socket, .env files)", plural(s.hidden.len(), "path")))
	return msgs
}

// hideStores hides every credential store (paths.CredentialStores, the default ssh-agent
// socket and the one SSH_AUTH_SOCK names) and records them all, hidden already or not, in
// s.stores.
func (s *state) hideStores() []string {
	var msgs []string
	add := func(p, note string) {
		if s.hidden.get(p) == nil {
			s.hidden.set(p, &pathRule{note: note})
		}
	}
	stores := map[string]bool{}
	for p := range s.hidden.byPath() {
		stores[p] = true
	}
	for _, c := range append(paths.CredentialStores(), sshAgentDefault) {
		stores[c] = true
		if s.trace == nil && s.hidden.get(c) == nil && s.allowsUnder(c) {
			// A profile read back that allows something inside a store it does not hide got
			// there through --allow-secret (or an equally explicit edit): keep that choice.
			msgs = append(msgs, fmt.Sprintf("%s not hidden: the profile allows a path inside it", c))
			continue
		}
		if c == sshAgentDefault {
			add(c, "ssh-agent socket")
		} else {
			add(c, "credential store")
		}
	}
	if sock := s.ctx["SSH_AUTH_SOCK"]; path.IsAbs(sock) {
		p := s.vars.Generalize(sock, nil)
		if dir := parentDir(p); depth(dir) >= 2 && !strings.HasPrefix(dir, "$WORKDIR") {
			p = dir
		}
		stores[p] = true
		add(p, "ssh-agent socket")
	}
	s.stores = sortedKeys(stores)
	s.storeSet = newPatternSet(s.stores)
	return msgs
}

// allowedSecrets are the paths --allow-secret names, portable, sorted.
func (s *state) allowedSecrets() []string {
	var allowed []string
	for _, a := range s.opts.AllowSecrets {
		allowed = append(allowed, s.secretPattern(a))
	}
	slices.Sort(allowed)
	return slices.Compact(allowed)
}

// storeJudge tells which credential store a path lies in (hiddenBy), for paths that come
// sorted: most lie where no store can, and a path seen with several access kinds comes again.
type storeJudge struct {
	s                    *state
	allowed              []string
	hostStores           []string // s.stores expanded on this host
	portableIdx, hostIdx *patternSet
	// The last first component judged, and whether no store can lie below it.
	lastFirst string
	lastFree  bool
	// The last path judged, and its store.
	lastPath, lastStore string
}

func (s *state) newStoreJudge(allowed []string) *storeJudge {
	j := &storeJudge{s: s, allowed: allowed, hostStores: make([]string, len(s.stores))}
	for i, h := range s.stores {
		j.hostStores[i] = expandOr(h, s.ctx)
	}
	j.portableIdx, j.hostIdx = s.storeSet, newPatternSet(j.hostStores)
	return j
}

// hiddenBy returns the store that covers p and that no allowed secret opens, or "".
func (j *storeJudge) hiddenBy(p string) string {
	s := j.s
	// Most paths lie where no store can: no store starts with their first component, portable
	// or on the host (where a variable is the first component of its value). Sorted paths
	// repeat their first component: the last one is judged once.
	if k, plain := plainFirst(p); plain {
		if k != j.lastFirst {
			j.lastFirst, j.lastFree = k, false
			if j.portableIdx.coversNoneUnder(k) {
				hk, ok := hostFirst(k, s.ctx)
				j.lastFree = ok && j.hostIdx.coversNoneUnder(hk)
			}
		}
		// On the host, a path that starts with a variable is its value and the rest
		// cleaned: it starts with the value's first component if the rest is clean.
		if j.lastFree && (k[0] != '$' || cleanRest(p[len(k):])) {
			return ""
		}
	}
	for _, a := range j.allowed {
		if paths.Covers(a, p) {
			return ""
		}
	}
	hp := expandOr(p, s.ctx)
	// The first store, in s.stores order, that covers p. Compared on the host too: when two
	// variables share a value ($TMPDIR or $WORKDIR = $HOME), the portable spelling of a path
	// may use the other one.
	covers := func(i int) bool { return paths.Covers(s.stores[i], p) || paths.Covers(j.hostStores[i], hp) }
	i := j.portableIdx.firstCovering(p, covers)
	if k := j.hostIdx.firstCovering(hp, covers); k >= 0 && (i < 0 || k < i) {
		i = k
	}
	if i < 0 {
		return ""
	}
	return s.stores[i]
}

// cached is hiddenBy for observations, which come sorted by path: a path seen with several
// access kinds is judged once.
func (j *storeJudge) cached(p string) string {
	if p != j.lastPath || p == "" {
		j.lastPath, j.lastStore = p, j.hiddenBy(p)
	}
	return j.lastStore
}

// dropSecretTouches drops the file accesses and unix socket connects that reach a credential
// store, each with a warning (once per line), but for failed probes for missing files.
func (s *state) dropSecretTouches(j *storeJudge) (dropped, warned int) {
	seen := map[string]bool{}
	warn := func(exe, what, p, h string) {
		w := fmt.Sprintf("credential store touched: %s %s %s — the profile does not allow it and keeps %s hidden "+
			"unless --allow-secret names it; if the tool really needs it, learn again with --allow-secret %s", exe, what, p, h, p)
		if !seen[w] {
			seen[w] = true
			s.warnings = append(s.warnings, w)
			s.secretTouches = append(s.secretTouches, SecretTouch{Exe: exe, Access: what, Path: p, Store: h})
		}
		// The hidden rule says who reached for it: enforce lists it as hidden, not denied.
		if r := s.hidden.get(h); r != nil && r.prov.by == "" {
			r.prov = prov{by: exe, seen: 1}
		}
	}
	s.keepFiles(func(f *fileObs) bool {
		h := j.cached(f.path)
		if h == "" {
			return true
		}
		dropped++
		// A failed probe for a missing file (git looking for ~/.netrc) is not worth a warning.
		if f.ok || f.errno != errENOENT && f.errno != errENOTDIR {
			what := verbOf(f.access)
			if !f.ok {
				what = "tried to " + f.access + fmt.Sprintf(" (%s)", errnoName(f.errno))
			}
			warn(s.exes[f.exe], what, f.path, h)
			warned++
		}
		return false
	})
	keptNet := s.net[:0]
	for _, n := range s.net {
		if n.family == "unix" && !strings.HasPrefix(n.path, "@") {
			if h := j.hiddenBy(n.path); h != "" {
				dropped++
				warned++
				warn(n.exe, n.op+" to socket", n.path, h)
				continue
			}
		}
		keptNet = append(keptNet, n)
	}
	s.net = keptNet
	return dropped, warned
}

// hostFirst returns the first component on the host of the paths whose portable first
// component is the plain name k and whose rest is clean: k itself, or the first component of
// the value of the variable k, when that value is clean and absolute (Expand cleans the value
// and the rest joined). ok is false when the rest could change it.
func hostFirst(k string, ctx map[string]string) (string, bool) {
	name, _, ok := paths.Split(k)
	v := ctx[name]
	if !ok || v == "" {
		return k, true // expandOr leaves the path as it is
	}
	if v == "/" || !path.IsAbs(v) || !paths.CleanAbs(v) {
		return "", false
	}
	return plainFirst(v)
}

// cleanRest reports whether rest, what follows the first component of a path, is empty or
// clean components after a slash.
func cleanRest(rest string) bool { return rest == "" || rest[0] == '/' && paths.CleanAbs(rest) }

// keepFiles keeps, in order, the file observations keep returns true for (it may change the
// one it is given). Only those after the first one dropped move.
func (s *state) keepFiles(keep func(f *fileObs) bool) {
	n := 0
	for i := range s.files {
		if !keep(&s.files[i]) {
			continue
		}
		if n != i {
			s.files[n] = s.files[i]
		}
		n++
	}
	s.files = s.files[:n]
}

// allowsUnder reports whether a read, write or exec rule lies at or below pattern c.
func (s *state) allowsUnder(c string) bool {
	for _, m := range []*ruleSet{s.read, s.write, s.exec, s.list} {
		for p := range m.byPath() {
			if paths.Covers(c, p) {
				return true
			}
		}
	}
	return false
}

func verbOf(access string) string {
	switch access {
	case trace.AccessRead:
		return "read"
	case trace.AccessList:
		return "listed"
	case trace.AccessMetadata:
		return "looked up"
	case trace.AccessExec:
		return "executed"
	case trace.AccessMap:
		return "mapped executable"
	case trace.AccessCreate:
		return "created"
	case trace.AccessDelete:
		return "deleted"
	}
	return "wrote"
}

// passFailedProbes drops every failed access but one kind. A failed probe (ENOENT of an
// optional config file, EEXIST of `mkdir -p`) needs no allowance to fail again: path lookup
// errors come before any Landlock or mount check, so under enforcement the tool sees the same
// errno and no false denial. Recording them as rules would only widen the policy — under an
// already readable or writable path such a rule is redundant, anywhere else it grants what the
// tool never got.
//
// The exception is the delete of a file in the work tree that is not there (`rm -f
// stale.lock`, eslint removing a .eslintcache it did not make, Python's `os.unlink` in a `try:
// … except FileNotFoundError`): unlink, unlinkat and rmdir check that the mount is writable
// before they look the name up, so in a directory the sandbox mounts read-only the tool gets
// EROFS instead of ENOENT — reported as a denial, and fatal to a tool that ignores only ENOENT.
// Such a delete is kept (missingDelete) and passWrite grants that one path: the enforcer stages
// its directory, where the unlink answers ENOENT again, and copies back nothing but that path.
func (s *state) passFailedProbes() []string {
	byErrno := map[string]int{}
	n, kept := 0, 0
	s.keepFiles(func(f *fileObs) bool {
		if f.ok {
			return true
		}
		if environmentalDevice(f.path) {
			// /dev/tty fails with ENXIO when the learn run had no controlling terminal; under
			// enforcement Landlock would answer EACCES first and report a denial that is
			// only about where the tool ran. Terminal injection is closed by seccomp.
			f.ok = true
			return true
		}
		if missingDelete(f) {
			kept++
			return true
		}
		n++
		byErrno[errnoName(f.errno)]++
		return false
	})
	var msgs []string
	if n > 0 {
		var parts []string
		for _, e := range sortedKeys(byErrno) {
			parts = append(parts, fmt.Sprintf("%s %d", e, byErrno[e]))
		}
		msgs = append(msgs, fmt.Sprintf("ignored %s (%s): they fail the same way under enforcement, so they need no rule and cause no false denial",
			plural(n, "failed access"), strings.Join(parts, ", ")))
	}
	if kept > 0 {
		msgs = append(msgs, fmt.Sprintf("kept %s of a missing file: in a read-only directory the unlink would answer EROFS instead of ENOENT (passWrite grants the path itself)",
			plural(kept, "delete")))
	}
	return msgs
}

// missingDelete reports a failed delete that passWrite grants as exactly its path (see
// passFailedProbes): a delete that found no file (ENOENT) in the work tree, where such a write
// rates low (policy.PathRisk). Never a protected path (a missing .git/hooks/pre-commit stays
// unwritable: the tool gets EROFS there and the denial is reported) nor a path too broad to
// write. Not elsewhere: in the home a write rule on a file rates critical; in a temp directory
// the private /tmp answers ENOENT anyway, and the enforcer grants a host $TMPDIR whole, which a
// failed delete must not make writable; in a tool cache the names are hashes, different every
// run, and the tool writes the cache anyway (then its rule covers the path).
func missingDelete(f *fileObs) bool {
	if f.access != trace.AccessDelete || f.errno != errENOENT || !strings.HasPrefix(f.path, "$WORKDIR/") ||
		strings.ContainsAny(f.path, "*?[") || tooBroadToWrite(f.path) {
		return false
	}
	risk, _ := policy.PathRisk("write", f.path, nil)
	return risk == policy.RiskLow
}

// environmentalDevice reports devices whose failure in a learn run says more about the run's
// environment than about the tool: the controlling terminal.
func environmentalDevice(p string) bool { return p == "/dev/tty" }

// Errnos named in explain lines.
const (
	errENOENT  = 2
	errENOTDIR = 20
)

func errnoName(e int) string {
	switch e {
	case 1:
		return "EPERM"
	case errENOENT:
		return "ENOENT"
	case 13:
		return "EACCES"
	case 17:
		return "EEXIST"
	case errENOTDIR:
		return "ENOTDIR"
	case 21:
		return "EISDIR"
	case 22:
		return "EINVAL"
	case 30:
		return "EROFS"
	case 36:
		return "ENAMETOOLONG"
	case 39:
		return "ENOTEMPTY"
	case 40:
		return "ELOOP"
	case 0:
		return "unknown errno"
	}
	return fmt.Sprintf("errno %d", e)
}

func isWriteKind(a string) bool {
	return a == trace.AccessWrite || a == trace.AccessCreate || a == trace.AccessDelete
}

// addRule merges one observation into a rule set.
func (s *state) addRule(m *ruleSet, p string, pr prov, note string) {
	// From sorted observations, a path is mostly greater than all in the set: new.
	greatest := p > m.last || m.len() == 0
	if !greatest {
		if r := m.get(p); r != nil {
			r.prov = earliest(r.prov, pr)
			if r.note == "" {
				r.note = note
			}
			return
		}
	}
	// Rules come from a slab: a trace can make tens of thousands before the roll-ups.
	if len(s.ruleSlab) == 0 {
		s.ruleSlab = make([]pathRule, 512)
	}
	r := &s.ruleSlab[0]
	s.ruleSlab = s.ruleSlab[1:]
	*r = pathRule{prov: pr, note: note, files: 1}
	if greatest {
		m.sorted = append(m.sorted, ruleRef{p, r})
		m.last = p
	} else {
		m.rules[p] = r
	}
}

// passSourceTree makes the source tree one read-only rule: a build reads its sources, which
// files exactly is not the policy's business.
func (s *state) passSourceTree() []string {
	if s.ctx["WORKDIR"] == "" {
		return nil
	}
	seen := map[string]bool{}
	var pr prov
	provs := s.exeProvs()
	for _, f := range s.files {
		if f.access == trace.AccessRead && !f.dir && paths.Covers("$WORKDIR", f.path) {
			seen[f.path] = true
			pr = earliest(pr, provs[f.exe])
		}
	}
	if len(seen) == 0 {
		return nil
	}
	s.addRule(s.read, "$WORKDIR", pr, "source tree, read-only")
	return []string{fmt.Sprintf("%s read under $WORKDIR → $WORKDIR (read-only source tree)", plural(len(seen), "path"))}
}

// passRead turns successful reads into read rules and directory listings into list rules.
// Decisions:
//   - a listing gets a list rule (filesystem.list, Landlock's READ_DIR only): it lets the tool
//     see the names below that directory, never read a file, so even `ls /` or a listing of
//     $HOME is granted as such (hidden paths stay invisible);
//   - a read of /, $HOME, /etc, /tmp and the like themselves (tooBroadToReadPaths) is never a
//     read rule, which would cover everything below: the tool gets EACCES there;
//   - metadata-only accesses (stat, access, readlink) need no rule: no Landlock right guards
//     them, the path only has to be visible, and it is unless hidden;
//   - /dev nodes (/dev/null, /dev/tty, /dev/urandom) stay exact rules, never rolled up.
func (s *state) passRead() []string {
	var files, dirs, meta, refused, terminal int
	// Size the rule sets once: a trace may hold 100k paths.
	nList, nRead := 0, 0
	for _, f := range s.files {
		switch {
		case f.access == trace.AccessList || f.access == trace.AccessRead && f.dir:
			nList++
		case f.access == trace.AccessRead:
			nRead++
		}
	}
	s.list.sorted = slices.Grow(s.list.sorted, nList)
	s.read.sorted = slices.Grow(s.read.sorted, nRead)
	provs := s.exeProvs()
	srcTree := s.read.get("$WORKDIR") != nil // the source-tree rule covers reads below it
	for _, f := range s.files {
		switch {
		case f.access == trace.AccessMetadata:
			meta++
		case f.access == trace.AccessList || f.access == trace.AccessRead && f.dir:
			s.addRule(s.list, f.path, provs[f.exe], "")
			dirs++
		case f.access == trace.AccessRead && f.path == ptyDir:
			// A terminal read by name (less, node at a terminal): the enforcer grants the one
			// the command's stdio is on; the directory would be every terminal's keystrokes.
			terminal++
		case f.access == trace.AccessRead && tooBroadToRead(f.path):
			refused++
		case f.access == trace.AccessRead && slices.Contains(baseReads, f.path):
			// Every profile may read them (the enforcer's base): no rule, so that whether a
			// runtime happened to open one (node and /dev/null, by its stdio) never drifts.
		case f.access == trace.AccessRead && cacheRoot(f.path) != "":
			// A tool cache's names are hashes of the project and the run (pnpm's index
			// files name the project's path): its root is read whole.
			s.addRule(s.read, cacheRoot(f.path), provs[f.exe], noteCache)
			files++
		case f.access == trace.AccessRead:
			if !srcTree || !paths.Covers("$WORKDIR", f.path) {
				s.addRule(s.read, f.path, provs[f.exe], "")
				srcTree = srcTree || f.path == "$WORKDIR"
			}
			files++
		}
	}
	var msgs []string
	if files > 0 {
		msgs = append(msgs, fmt.Sprintf("%s from %s read", plural(s.read.len(), "read rule"), plural(files, "file")))
	}
	if dirs > 0 {
		msgs = append(msgs, fmt.Sprintf("%s from %s listed (names only, no file contents)", plural(s.list.len(), "list rule"), plural(dirs, "directory")))
	}
	if meta > 0 {
		msgs = append(msgs, fmt.Sprintf("%s: no rule needed, stat works on any path that is not hidden", plural(meta, "metadata-only access")))
	}
	if refused > 0 {
		msgs = append(msgs, fmt.Sprintf("not granted: %s of /, $HOME, /etc, /tmp or the like themselves (a read rule there would expose the whole tree)", plural(refused, "read")))
	}
	if terminal > 0 {
		msgs = append(msgs, "not granted: reading "+ptyDir+" (a terminal read by name): enforce grants the terminal the command's stdio is on, never every terminal")
	}
	return msgs
}

// cacheRoots are tool-owned caches granted whole when the tool writes anywhere in them.
// $CARGO_HOME is not one: it also holds bin/ (installed tools) and credentials, so a write there
// grants only the first directory below it ($CARGO_HOME/registry, $CARGO_HOME/git).
// pnpm's store is one; its home is not (it holds pnpm's global bins).
var cacheRoots = []string{"$GOCACHE", "$GOMODCACHE", "$NPM_CACHE", "$PNPM_HOME/store"}

// cacheRoot returns the cache root (cacheRoots) p lies in, or "".
func cacheRoot(p string) string {
	for _, r := range cacheRoots {
		if paths.Covers(r, p) {
			return r
		}
	}
	return ""
}

// writeAnchor returns the directory a write at p is granted on because p lies in a cache.
func writeAnchor(p string) string {
	if r := cacheRoot(p); r != "" {
		return r
	}
	// A tool's own directory in the user cache ($HOME/.cache/gopls/<shard>/...): the shards
	// and hashes differ every run, the directory is the tool's.
	if rest, ok := strings.CutPrefix(p, "$HOME/.cache/"); ok {
		if name, below, ok := strings.Cut(rest, "/"); ok && below != "" && name != "" && !strings.ContainsAny(name, "*?[") {
			if _, protected := paths.IsProtected("$HOME/.cache/" + name); !protected {
				return "$HOME/.cache/" + name
			}
		}
	}
	if strings.HasPrefix(p, "$CARGO_HOME/") {
		if c := strings.Split(p, "/"); len(c) >= 3 {
			return strings.Join(c[:2], "/")
		}
	}
	return ""
}

// protectedDirs are never granted for writing as a whole because one file in them was
// created; beside these, nothing at depth 1 or less (/, /tmp, /etc, $HOME, $WORKDIR, $TMPDIR,
// $GOROOT) is.
var protectedDirs = []string{
	"/var/tmp", "/var/lib", "/var/cache", "/run/user", "/run/user/*", "/usr/local", "/usr/lib",
	"/usr/share", "/usr/bin", "/dev/shm", "/dev/pts",
	"$HOME/.cache", "$HOME/.config", "$HOME/.local", "$HOME/.local/share", "$HOME/.local/bin",
	"$CARGO_HOME/bin", "$GOROOT/bin", "$GOROOT/pkg",
}

func protectedDir(d string) bool {
	if depth(d) <= 1 || slices.Contains(protectedDirs, d) {
		return true
	}
	for _, pre := range []string{"/dev/", "/proc/", "/sys/"} {
		if strings.HasPrefix(d, pre) {
			return true
		}
	}
	return false
}

// passWrite grants writes on the narrowest directories the tool created or wrote in:
//   - anything in a tool cache ($GOCACHE, $GOMODCACHE, npm's cache, a tool's directory in
//     $HOME/.cache) grants the cache;
//   - a directory the tool created is granted whole ($WORKDIR/target, $TMPDIR/go-build*);
//   - an existing file the tool modified is granted as that file;
//   - a file created or deleted needs the right on its directory, which is granted — unless
//     that directory is a protected one ($WORKDIR, $HOME, $TMPDIR, /tmp, …): then only the
//     file is granted, so one go.sum never makes the work tree writable.
func (s *state) passWrite() []string {
	var n, created, anchored, exact int
	var refused, pager, bytecode []string
	terminal := false
	var missing []fileObs
	provs := s.exeProvs()
	for _, f := range s.files {
		if !isWriteKind(f.access) {
			continue
		}
		if !f.ok { // a delete of a missing file (missingDelete): granted below, as itself
			missing = append(missing, f)
			continue
		}
		if paths.PagerHistory(f.path) {
			pager = append(pager, f.path)
			continue
		}
		if paths.KeptBytecodeCache(f.path) {
			bytecode = append(bytecode, f.path)
			continue
		}
		if (f.access == trace.AccessWrite || f.access == trace.AccessCreate && !f.dir) && baseDevice(f.path) {
			// A base device (the enforcer grants it whole, read and write): no rule, so that
			// whether a runtime opened it never drifts (libuv opens /dev/null O_RDWR over a
			// closed stdin; a shell's `>/dev/null` on one branch of a script, an open with
			// O_CREAT the learn records as a create: the device is there, nothing is made).
			continue
		}
		n++
		target, note := writeTarget(f.path, f.access, f.dir, s.storeSet)
		switch {
		case target == "" && f.path == ptyDir:
			// A terminal reopened by name (node): the enforcer grants the one the command's
			// stdio is on, whatever its number; the directory would be every terminal.
			terminal = true
			continue
		case target == "":
			refused = append(refused, f.path)
			continue
		case note == noteCache:
			anchored++
		case note == noteCreated:
			created++
		case target == f.path:
			exact++
		}
		s.addRule(s.write, target, provs[f.exe], note)
	}
	collapsed := s.collapseTempSiblings()
	// After the successful writes: a path the tool also wrote keeps that rule (and its note).
	added := 0
	for _, f := range missing {
		if r := s.write.get(f.path); r != nil {
			r.prov = earliest(r.prov, provs[f.exe])
			continue
		}
		s.addRule(s.write, f.path, provs[f.exe], noteMissing)
		added++
	}
	var msgs []string
	if len(collapsed) > 0 {
		msgs = append(msgs, fmt.Sprintf("temp names of a sibling the tool also wrote (NAME + 6 random letters and digits, renamed to NAME): %s",
			strings.Join(collapsed, ", ")))
	}
	if added > 0 {
		msgs = append(msgs, fmt.Sprintf("%s that the tool deletes only if present: each exactly that path, never rolled up "+
			"(in a read-only directory the unlink would answer EROFS instead of ENOENT)", plural(added, "write rule")))
	}
	if len(pager) > 0 {
		slices.Sort(pager)
		msgs = append(msgs, fmt.Sprintf("not granted: the pager's history %s (the sandbox runs less with "+paths.NoPagerHistory+": it neither reads nor saves one; "+
			"a write rule on a file in $HOME would make enforce refuse the profile)", strings.Join(slices.Compact(pager), ", ")))
	}
	if len(bytecode) > 0 {
		slices.Sort(bytecode)
		msgs = append(msgs, fmt.Sprintf("not granted: %s of Python's bytecode cache (%s): python reads the caches that exist and goes on without "+
			"writing one where it cannot; a write rule there would let the command plant bytecode that a later python outside the sandbox runs in place of its source",
			plural(len(slices.Compact(bytecode)), "write"), bytecode[0]))
	}
	if terminal {
		msgs = append(msgs, "not granted: "+ptyDir+" (a terminal reopened by name): enforce grants the terminal the command's stdio is on, whatever its number")
	}
	if n == 0 {
		return msgs
	}
	msgs = append(msgs, fmt.Sprintf("%s → %s (%d in tool caches, %d in directories the tool created, %d exact files; "+
		"never $WORKDIR, $HOME or $TMPDIR whole)", plural(n, "write"), plural(s.write.len(), "write rule"), anchored, created, exact))
	if len(refused) > 0 {
		slices.Sort(refused)
		refused = slices.Compact(refused)
		msgs = append(msgs, fmt.Sprintf("not granted: writing %s itself (too broad; the tool gets EACCES or EROFS there)", strings.Join(refused, ", ")))
	}
	return msgs
}

// collapseTempSiblings turns the write rule of a temp name made for a sibling the tool also
// wrote into NAME* (Rust's tempfile crate: cargo makes target as targetXXXXXX, then renames it).
// paths.GlobComponent does this alone when the random part holds a digit; without one (a third of
// the names) only the sibling tells, and the next run's name would be a new rule. It returns
// the rules it made.
func (s *state) collapseTempSiblings() []string {
	rules := s.write.byPath()
	written := map[string]bool{} // every rule's path and its directories
	for p := range rules {
		for d := p; d != "/" && d != "." && !written[d]; d = path.Dir(d) {
			written[d] = true
		}
	}
	var made []string
	for _, p := range sortedKeys(rules) {
		dir, base := path.Split(p)
		name, ok := tempSiblingOf(base)
		if !ok || !written[dir+name] {
			continue
		}
		glob := dir + name + "*"
		r := rules[p]
		s.write.delete(p)
		if g := s.write.get(glob); g != nil {
			g.prov = earliest(g.prov, r.prov)
			continue
		}
		s.write.set(glob, r)
		made = append(made, glob)
	}
	return made
}

// tempSiblingOf splits a tempfile-crate name, a lower-case word and 6 random letters and
// digits, and returns the word. All six may be lower-case letters (one name in ~180: cargo's
// targetqwerty, learned exact, made the next run's target* a drift): the sibling the caller
// requires is what tells a temp name from a word.
func tempSiblingOf(base string) (string, bool) {
	if len(base) < 8 {
		return "", false
	}
	word, random := base[:len(base)-6], base[len(base)-6:]
	if strings.Trim(word, "abcdefghijklmnopqrstuvwxyz") != "" {
		return "", false
	}
	for i := 0; i < len(random); i++ {
		if !isAlnum(random[i]) {
			return "", false
		}
	}
	return word, true
}

// Notes on write rules.
const (
	noteCache   = "tool cache"
	noteCreated = "created by the tool"
	// noteMissing is the rule of a file the tool deletes if present and found missing
	// (missingDelete). Such rules are never rolled up: the directory was never written.
	noteMissing = "deleted if present (missing when learned): this path only"
)

// writeTarget is the rule one successful write-kind access at p (portable) needs, with its
// note, or "" when that rule would be too broad to grant (a write on $WORKDIR or $HOME itself).
//
// Inside a credential store (reachable only through --allow-secret) only the exact path is
// granted, never its directory: allowing ~/.ssh/known_hosts must not make ~/.ssh writable.
func writeTarget(p, access string, dir bool, stores *patternSet) (string, string) {
	var target, note string
	switch a := writeAnchor(p); {
	case a != "" && !stores.touches(a):
		return a, noteCache
	case access == trace.AccessCreate && dir:
		target, note = p, noteCreated
	case access == trace.AccessWrite || protectedDir(parentDir(p)) || stores.touches(parentDir(p)):
		target = p
	default:
		target = parentDir(p)
	}
	if tooBroadToWrite(target) {
		return "", ""
	}
	return target, note
}

// touchesStore reports whether a rule on d would reach into a credential store: d lies in one
// or contains one.
func touchesStore(d string, stores []string) bool {
	for _, st := range stores {
		if paths.Covers(st, d) || paths.Covers(d, st) {
			return true
		}
	}
	return false
}

// tooBroadToWrite: never a write rule on these, even when the tool wrote that very path.
func tooBroadToWrite(p string) bool {
	p = wholeDir(p)
	return depth(p) <= 1 || slices.Contains(protectedDirs, p)
}

// wholeDir cuts p before its first component that matches every name: $WORKDIR/* and
// $HOME/*/x reach into every directory of $WORKDIR or $HOME (and the enforcer, which cannot
// apply globs with Landlock, widens them to those directories), so they are judged as
// $WORKDIR and $HOME.
func wholeDir(p string) string {
	comps := strings.Split(p, "/")
	for i, c := range comps {
		if i > 0 && (c == "*" || c == "**") {
			if i == 1 && comps[0] == "" {
				return "/"
			}
			return strings.Join(comps[:i], "/")
		}
	}
	return p
}

// tooBroadToReadPaths are never read rules, even when the tool listed them: a read rule covers
// everything below, and these hold the whole disk, every user's files, devices or secrets.
var tooBroadToReadPaths = []string{
	"/", "/etc", "/tmp", "/home", "/root", "/var", "/var/tmp", "/run", "/dev", "/mnt", "/media",
	"/srv", "/boot", "$HOME", "$TMPDIR",
}

func tooBroadToRead(p string) bool { return slices.Contains(tooBroadToReadPaths, wholeDir(p)) }

// tooBroadToExec: an exec rule covers everything below it, so it is never one of the broad
// directories (an exec observation names a file; this guards against a bogus one).
func tooBroadToExec(p string) bool { return tooBroadToRead(p) || tooBroadToWrite(p) }

// inToolchainRoot reports a portable path inside a toolchain root ($RUSTUP_HOME, $GOROOT):
// enforce keeps those mappable whole, so a library mapped there needs no rule.
func inToolchainRoot(p string) bool {
	for _, v := range paths.Vars() {
		if v.Role == paths.RoleToolchain && paths.Within(p, "$"+v.Name) {
			return true
		}
	}
	return false
}

// memfdExe reports the exe path of a memfd that ran: "/" (its dentry has no parent to walk) or
// "/memfd:...". No rule can name it (an exec rule on "/" would grant every file): the learned
// memfd_create rule is what lets it run (memfdExecRule).
func memfdExe(p string) bool { return p == "/" || strings.HasPrefix(p, "/memfd:") }

// passExec grants exec on exactly the binaries that ran, and on the libraries mapped executable
// outside the system trees and the toolchain roots (a map access: a venv's .so, a node addon, a
// rustc proc-macro), which enforce's noexec trees keep mappable.
func (s *state) passExec() []string {
	n := 0
	for _, p := range s.procs {
		if memfdExe(p.exe) {
			continue
		}
		s.addRule(s.exec, p.exe, s.provOf(p.parent), "")
		n++
	}
	var refused []string
	provs := s.exeProvs()
	for _, f := range s.files {
		if f.access != trace.AccessExec && (f.access != trace.AccessMap || inToolchainRoot(f.path)) {
			continue
		}
		if tooBroadToExec(f.path) {
			refused = append(refused, f.path)
			continue
		}
		s.addRule(s.exec, f.path, provs[f.exe], "")
		n++
	}
	if n+len(refused) == 0 {
		return nil
	}
	// A toolchain that runs what it built from its cache on a hit and from its work dir on a
	// miss (go run) needs both places whatever the learn's cache state was.
	var twins, companions []string
	for p, r := range s.exec.byPath() {
		for _, t := range paths.ExecTwins(p) {
			if s.exec.get(t) == nil {
				s.addRule(s.exec, t, r.prov, "")
				twins = append(twins, t)
			}
		}
		for _, c := range paths.Companions(p) {
			if s.exec.get(c) == nil {
				s.addRule(s.exec, c, r.prov, noteCompanion)
				companions = append(companions, c)
			}
		}
	}
	msgs := []string{fmt.Sprintf("exec only on the %s that ran", plural(s.exec.len(), "binary"))}
	if len(twins) > 0 {
		slices.Sort(twins)
		msgs = append(msgs, "and where the toolchain runs the same binary from on another cache state: "+strings.Join(twins, ", "))
	}
	if len(companions) > 0 {
		slices.Sort(companions)
		msgs = append(msgs, "and what the tool runs by whether its output is a terminal: "+strings.Join(companions, ", "))
	}
	if len(refused) > 0 {
		slices.Sort(refused)
		msgs = append(msgs, "not granted: exec on directories "+strings.Join(slices.Compact(refused), ", "))
	}
	return msgs
}

// noteCompanion marks the exec rules of paths.Companions.
const noteCompanion = "run by the tool only when its output is (or is not) a terminal"

// baseReads are the harmless devices and files every profile may read whatever it says (the
// enforcer's BaseRead lists them too): glibc reads the online CPU list by itself (malloc's
// arenas under thread contention), in one run and not the next; glibc reads the user database
// when the environment makes a program look a user up (python's site.py and node's
// os.homedir() with HOME unset, ls -l, id): public data, read-only.
var baseReads = []string{"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/sys/devices/system/cpu/online"}

// baseDevice reports whether p is a device of baseReads: the enforcer grants those whole, read
// and write, in every profile (enforcer.BaseRead, a device rule).
func baseDevice(p string) bool { return strings.HasPrefix(p, "/dev/") && slices.Contains(baseReads, p) }

// readRoot is a system tree whose read-only files roll up to directories.
type readRoot struct {
	path string
	self bool // the root itself may become the rule
}

var readRoots = []readRoot{
	{"/usr", true}, {"/lib", true}, {"/lib32", true}, {"/lib64", true}, {"/libx32", true},
	{"/bin", true}, {"/sbin", true}, {"/opt", false},
	{"/etc", false}, // /etc/passwd, /etc/ssl/certs/…: roll up below /etc, never /etc itself
	{"/proc/self", true}, {"/sys", false},
	{"$GOROOT", true}, {"$RUSTUP_HOME", true}, {"$GOMODCACHE", true}, {"$GOCACHE", true},
	{"$NPM_CACHE", true}, {"$CARGO_HOME", false},
}

// wholeReadRoots are toolchain roots read whole once the tool reads anything below them: the
// toolchain is read-only input, and which of its files a build reads depends on the state of
// its cache, not on the tool (a warm Go cache needs none of $GOROOT/src, a cold one compiles
// the standard library from it and assembles the runtime with $GOROOT/pkg/include).
//
// The terminal databases are read whole for the same reason: which entry a tool reads is
// $TERM's (xterm-256color at a terminal, dumb or none in a CI job), not the tool's; they are
// public, read-only data.
var wholeReadRoots = []string{"$GOROOT", "/etc/terminfo", "/lib/terminfo", "/usr/lib/terminfo", "/usr/share/terminfo"}

// wholeReadWhy says why root is read whole (wholeReadRoots).
func wholeReadWhy(root string) (note, why string) {
	if strings.HasSuffix(root, "/terminfo") {
		return "terminal database, read-only", "the entry read is $TERM's, which differs between a terminal and a CI job"
	}
	return "toolchain root, read-only", "a toolchain reads what its cache lacks (a cold Go cache assembles the runtime with $GOROOT/pkg/include)"
}

// ReadMates returns the read rules a profile reading reads already has in effect: each
// toolchain root (wholeReadRoots) one of its read rules lies below, as synthesis would make
// it now. drift uses it so that a profile learned before a root was read whole is not widened
// by it.
func ReadMates(reads []string) map[string]bool {
	mates := map[string]bool{}
	for _, root := range wholeReadRoots {
		if slices.ContainsFunc(reads, func(p string) bool { return p != root && paths.Covers(root, p) }) {
			mates[root] = true
		}
	}
	return mates
}

// readWhole replaces the read rules below root by root (unless the tool also wrote there) and
// returns how many it replaced.
func (s *state) readWhole(root string, blocked func(string) bool) int {
	var below []string
	for p := range s.read.byPath() {
		if p != root && paths.Covers(root, p) {
			below = append(below, p)
		}
	}
	if len(below) == 0 || blocked(root) {
		return 0
	}
	slices.Sort(below)
	r := s.read.get(root)
	if r == nil {
		r = &pathRule{prov: s.read.get(below[0]).prov}
		s.read.set(root, r)
	}
	for _, p := range below {
		b := s.read.get(p)
		r.prov = earliest(r.prov, b.prov)
		r.files += max(b.files, 1)
		s.read.delete(p)
	}
	r.note, _ = wholeReadWhy(root)
	return len(below)
}

func readRollupAllowed(d string) bool {
	for _, r := range readRoots {
		if d == r.path {
			return r.self
		}
		if paths.Covers(r.path, d) {
			return true
		}
	}
	return false
}

// rollup replaces, deepest directory first, every set of at least threshold rules under one
// allowed directory by that directory, until nothing changes. It returns, sorted, the
// directories it made that are rules in the end (not rolled up further themselves).
//
// It works on the tree of the rules and their ancestor directories, children before parents:
// whether a directory rolls up depends only on what is below it, so this is the same as going
// level by level from the deepest, and every rule is visited once. Merging provenance does not
// depend on the order (earliest keeps the lowest rank and name, and the highest seen count).
func rollup(set *ruleSet, threshold int, noun string, allowed, blocked func(string) bool) []string {
	t := newRollTree(set)
	r := &roller{tree: t, threshold: threshold, allowed: allowed, blocked: blocked, gone: make([]int32, 0, t.size)}
	for _, i := range t.roots {
		r.visit(i)
	}
	return t.writeBack(r.gone, r.made, noun)
}

type rollNode struct {
	path             string
	rule             *pathRule // nil: no rule at path (any more)
	firstChild, next int32     // -1: none
	below            int       // rules strictly below path
}

// rollTree is the tree rollup works on: a node for every rule of set (the first size nodes, in
// sorted order), and one for every ancestor directory that holds no rule.
type rollTree struct {
	set    *ruleSet
	size   int
	nodes  []rollNode
	others map[string]int32 // the nodes of directories without a rule
	roots  []int32
}

// newRollTree links every rule's node to its parent (the ancestor one level up, which ends at
// the last slash), making the directories that hold no rule.
func newRollTree(set *ruleSet) *rollTree {
	size := set.len()
	t := &rollTree{set: set, size: size, nodes: make([]rollNode, 0, size+size/8), others: map[string]int32{}}
	addNode := func(p string, r *pathRule) {
		r.node = int32(len(t.nodes))
		t.nodes = append(t.nodes, rollNode{path: p, rule: r, firstChild: -1, next: -1})
	}
	for _, e := range set.sorted {
		addNode(e.path, e.rule)
	}
	for p, r := range set.rules {
		addNode(p, r)
	}
	// In sorted order, a node's parent is mostly the node before it or one of that node's
	// ancestors: those are kept on a stack, shortest first, and the rest looked up.
	var stack []int32
	for i := range int32(size) {
		p := t.nodes[i].path
		slash := strings.LastIndexByte(p, '/')
		if slash <= 0 { // depth(p) < 2
			t.roots = append(t.roots, i)
			stack = append(stack[:0], i)
			continue
		}
		d := p[:slash]
		n := len(stack)
		for n > 0 && len(t.nodes[stack[n-1]].path) > len(d) {
			n--
		}
		if n > 0 && t.nodes[stack[n-1]].path == d {
			stack = stack[:n]
			t.adopt(stack[n-1], i)
		} else {
			stack = append(stack[:0], t.link(i, d))
		}
		stack = append(stack, i)
	}
	return t
}

func (t *rollTree) adopt(parent, child int32) {
	t.nodes[child].next = t.nodes[parent].firstChild
	t.nodes[parent].firstChild = child
}

// link links node i to directory d's node, looked up or made (and then linked to its own
// parent), and returns d's node.
func (t *rollTree) link(i int32, d string) int32 {
	var parent int32
	made := false
	if r := t.set.get(d); r != nil {
		parent = r.node
	} else if j, ok := t.others[d]; ok {
		parent = j
	} else {
		parent, made = int32(len(t.nodes)), true
		t.nodes = append(t.nodes, rollNode{path: d, firstChild: -1, next: -1})
		t.others[d] = parent
	}
	t.adopt(parent, i)
	if slash := strings.LastIndexByte(d, '/'); made && slash > 0 {
		t.link(parent, d[:slash])
	} else if made {
		t.roots = append(t.roots, parent)
	}
	return parent
}

// roller rolls a rollTree up, children before parents.
type roller struct {
	tree             *rollTree
	threshold        int
	allowed, blocked func(string) bool
	made             []int32     // the nodes that became rules
	gone             []int32     // the nodes whose rules were rolled up
	members          []*pathRule // scratch: the rules below the node being rolled up
}

// visit counts the rules below node i, after rolling up its children, and rolls i up when
// they are enough and its directory may be granted.
func (r *roller) visit(i int32) {
	nodes := r.tree.nodes
	count := 0
	for c := nodes[i].firstChild; c >= 0; c = nodes[c].next {
		r.visit(c)
		count += nodes[c].below
		if nodes[c].rule != nil {
			count++
		}
	}
	nodes[i].below = count
	d := nodes[i].path
	if count == 0 || count < r.threshold || depth(d) < 1 || d == "/" || !r.allowed(d) || r.blocked(d) {
		return
	}
	r.members = r.members[:0]
	r.collect(i)
	rule := &pathRule{}
	if old := nodes[i].rule; old != nil {
		*rule = *old
	}
	for _, m := range r.members {
		rule.prov = earliest(rule.prov, m.prov)
		rule.files += max(m.files, 1)
	}
	n := &nodes[i]
	n.rule, n.below, n.firstChild = rule, 0, -1
	r.made = append(r.made, i)
}

// collect takes the rules strictly below node i.
func (r *roller) collect(i int32) {
	nodes := r.tree.nodes
	for c := nodes[i].firstChild; c >= 0; c = nodes[c].next {
		if rule := nodes[c].rule; rule != nil {
			r.members = append(r.members, rule)
			r.gone = append(r.gone, c)
			nodes[c].rule = nil
		}
		r.collect(c)
	}
}

// writeBack puts the rolled-up tree back into its set (a new map when most rules went: cheaper
// than deleting them) and returns, sorted, the directories made that are still rules.
func (t *rollTree) writeBack(gone, madeNodes []int32, noun string) []string {
	var rules map[string]*pathRule
	if len(gone) > t.size/2 {
		rules = make(map[string]*pathRule, t.size-len(gone))
		for i := range t.nodes {
			if r := t.nodes[i].rule; r != nil {
				rules[t.nodes[i].path] = r
			}
		}
		t.set.rules, t.set.sorted = rules, nil
	} else {
		rules = t.set.byPath()
		for _, i := range gone {
			delete(rules, t.nodes[i].path)
		}
	}
	var made []string
	for _, i := range madeNodes {
		if r := t.nodes[i].rule; r != nil { // not rolled up further
			r.note = fmt.Sprintf("rolled up from %d %s", r.files, noun)
			rules[t.nodes[i].path] = r
			made = append(made, t.nodes[i].path)
		}
	}
	slices.Sort(made)
	return made
}

// under1 is paths.Covers(d, p), faster for a glob-free d (never empty): paths.Within.
func under1(d, p string) bool {
	if strings.IndexByte(d, '*') >= 0 {
		return paths.Covers(d, p)
	}
	return paths.Within(p, d)
}

// passRollupRead rolls up what the tool only read (or listed) in system trees and toolchain
// roots.
func (s *state) passRollupRead() []string {
	blocked := func(d string) bool { // a tree the tool also wrote in is not "only read"
		if s.storeSet.touches(d) {
			return true
		}
		for w := range s.write.byPath() {
			if under1(d, w) {
				return true
			}
		}
		return false
	}
	var msgs []string
	for _, root := range wholeReadRoots {
		if n := s.readWhole(root, blocked); n > 0 {
			_, why := wholeReadWhy(root)
			msgs = append(msgs, fmt.Sprintf("%s under %s → %s (read): %s", plural(n, "read rule"), root, root, why))
		}
	}
	for _, d := range rollup(s.read, s.opts.RollupThreshold, "files", readRollupAllowed, blocked) {
		if r := s.read.get(d); r != nil {
			msgs = append(msgs, fmt.Sprintf("rolled up %d files under %s → %s (read)", r.files, d, d))
		}
	}
	// Read implies list: a directory a read rule already covers is not counted towards rolling
	// up listings. Counted, python's six listed stdlib directories under a read /usr/lib (and
	// whether this host has one more site-packages directory) decided whether
	// /usr/local/lib/python3.11/dist-packages alone stayed a rule or all of /usr became one.
	if n := dropCovered(s.list, s.read.byPath()); n > 0 {
		msgs = append(msgs, fmt.Sprintf("%s covered by read rules, not counted for list roll-ups", plural(n, "listed directory")))
	}
	storeBlocked := func(d string) bool { return s.storeSet.touches(d) }
	for _, d := range rollup(s.list, s.opts.RollupThreshold, "directories", readRollupAllowed, storeBlocked) {
		if r := s.list.get(d); r != nil {
			msgs = append(msgs, fmt.Sprintf("rolled up %d directories under %s → %s (list)", r.files, d, d))
		}
	}
	return msgs
}

// passRollupWrite rolls up write rules below one unprotected directory ($WORKDIR/target/debug
// with its deps, build and .fingerprint directories becomes one rule).
//
// Rules of files the tool only deletes if present (noteMissing) take no part: nothing was
// written in their directory, so they never make it writable. They come back afterwards, and
// passCoverage drops those a rolled-up directory covers.
func (s *state) passRollupWrite() []string {
	allowed := func(d string) bool { return !protectedDir(d) }
	blocked := func(d string) bool { return s.storeSet.touches(d) }
	held := map[string]*pathRule{}
	for p, r := range s.write.byPath() {
		if r.note == noteMissing {
			held[p] = r
			s.write.delete(p)
		}
	}
	var msgs []string
	for _, d := range rollup(s.write, s.opts.RollupThreshold, "files", allowed, blocked) {
		if r := s.write.get(d); r != nil {
			msgs = append(msgs, fmt.Sprintf("rolled up %d files under %s → %s (write)", r.files, d, d))
		}
	}
	for _, p := range sortedKeys(held) {
		if s.write.get(p) == nil {
			s.write.set(p, held[p])
		}
	}
	return msgs
}

// passCoverage drops rules a broader rule already covers: reads under a read or write rule
// (write implies read), listings under a list, read or write rule, writes under a write rule,
// execs under an exec rule.
func (s *state) passCoverage() []string {
	n := dropCovered(s.write, nil)
	n += dropCovered(s.read, s.write.byPath())
	n += dropCovered(s.list, s.write.byPath())
	n += dropCovered(s.list, s.read.byPath()) // read implies list
	n += dropCovered(s.exec, nil)
	if n == 0 {
		return nil
	}
	return []string{fmt.Sprintf("dropped %s covered by broader rules", plural(n, "rule"))}
}

// dropCovered removes the rules of set covered by another rule of set or by a rule of also,
// and returns how many it removed. A rule is covered by an ancestor (found by walking up) or by
// a glob rule (tested one by one).
func dropCovered(set *ruleSet, also map[string]*pathRule) int {
	// The set is walked in order and left in order (sorted, no map: the roll-up after it
	// builds its tree faster so); dropped rules are marked, the kept ones are the set again
	// at the end.
	all := set.entries()
	dropped := make([]bool, len(all))
	// get returns the rule at q, an ancestor of all[cur] (so before it), unless dropped. up
	// asks for one it has not seen yet: mostly the entry just before (a directory, then its
	// first child), so a few of those are tried before a binary search.
	cur := 0
	get := func(q string) *pathRule {
		i, ok := -1, false
		for j := cur - 1; j >= max(cur-4, 0); j-- {
			if all[j].path == q {
				i, ok = j, true
				break
			}
		}
		if !ok {
			i, ok = slices.BinarySearchFunc(all[:cur], q, func(e ruleRef, q string) int { return strings.Compare(e.path, q) })
		}
		if ok && !dropped[i] {
			return all[i].rule
		}
		return nil
	}
	var alsoGlobs []string
	var mGlobs []int // in all
	for q := range also {
		if strings.Contains(q, "*") {
			alsoGlobs = append(alsoGlobs, q)
		}
	}
	slices.Sort(alsoGlobs)
	for i, e := range all {
		if strings.Contains(e.path, "*") {
			mGlobs = append(mGlobs, i)
		}
	}
	// up returns the nearest rule at d or above it (also's first at each level). A directory is
	// visited (and kept or dropped) before every path below it, which sorts after it, so once
	// asked for, its answer no longer changes: the answers along the last directory asked for
	// are kept, ancestors first (paths in order mostly ask about the same or a near one; a map of
	// every directory's answer was a third of the pass on find /usr's 17k listed directories).
	type upEntry struct {
		dir string
		r   *pathRule
	}
	var chain []upEntry
	up := func(d string) *pathRule {
		if d == "" {
			return nil
		}
		for len(chain) > 0 && !atOrBelow(chain[len(chain)-1].dir, d) {
			chain = chain[:len(chain)-1]
		}
		var r *pathRule
		i := 0 // where d's next level starts
		if len(chain) > 0 {
			top := chain[len(chain)-1]
			if top.dir == d {
				return top.r
			}
			r, i = top.r, len(top.dir)
		}
		for i < len(d) {
			var q string
			switch j := strings.IndexByte(d[i+1:], '/'); {
			case i == 0 && d[0] == '/' && len(chain) == 0:
				q = "/" // the root is a level of its own
			case j < 0:
				q = d
			default:
				q = d[:i+1+j]
			}
			if x := also[q]; x != nil {
				r = x
			} else if x := get(q); x != nil {
				r = x
			}
			chain = append(chain, upEntry{q, r})
			i = len(q)
		}
		return r
	}
	coveredBy := func(p string) *pathRule {
		if r := up(parentDir(p)); r != nil {
			return r
		}
		if r := also[p]; r != nil {
			return r
		}
		for _, q := range alsoGlobs {
			if paths.Covers(q, p) {
				return also[q]
			}
		}
		for _, i := range mGlobs {
			if q := all[i].path; q != p && !dropped[i] && paths.Covers(q, p) {
				return all[i].rule
			}
		}
		return nil
	}
	n := 0
	for i, e := range all {
		cur = i
		if into := coveredBy(e.path); into != nil {
			into.prov = earliest(into.prov, e.rule.prov)
			dropped[i] = true
			n++
		}
	}
	kept := all[:0]
	for i, e := range all {
		if !dropped[i] {
			kept = append(kept, e)
		}
	}
	set.rules, set.sorted = map[string]*pathRule{}, kept // last stays: no path is greater
	return n
}

var tmpRoots = []string{"/tmp", "/var/tmp", "$TMPDIR"}

// passPrivateTmp gives the command a private /tmp unless it used something in /tmp it did not
// create itself (then a fresh tmpfs would break it).
func (s *state) passPrivateTmp() []string {
	if s.trace == nil {
		return nil // a profile read back keeps its choice
	}
	inTmp := func(p string) bool {
		for _, r := range tmpRoots {
			if under1(r, p) {
				return true
			}
		}
		return false
	}
	// One pass finds what the command created and what else it used in a temp directory; the
	// first of those no creation covers decides.
	var created []string
	var used []*fileObs
	for i := range s.files {
		f := &s.files[i]
		switch {
		case f.access == trace.AccessCreate:
			created = append(created, f.path)
		// A per-run name (collapsed to a glob) cannot have been there before the run, even
		// when its create was made by a process that did not report it: treating it as
		// foreign made the choice flip between learns of the same gcc build.
		// Only content the command needs from the host's /tmp turns the layer off: listing
		// it or deleting from it (pytest cleaning its older pytest-of-USER/pytest-N) works the
		// same in an empty private /tmp.
		case (f.access == trace.AccessRead || f.access == trace.AccessExec || f.access == trace.AccessMap || f.access == trace.AccessWrite) && inTmp(f.path) && !strings.Contains(f.path, "*"):
			used = append(used, f)
		}
	}
	for _, f := range used {
		if !slices.ContainsFunc(created, func(c string) bool { return paths.Covers(c, f.path) }) {
			s.privateTmp = false
			why := fmt.Sprintf("no private /tmp: %s used %s, which it did not create", s.exes[f.exe], f.path)
			// Never silently: the layer is off for every later run of this profile.
			s.warnings = append(s.warnings, why+"; the command sees the host's /tmp. If that file was left by an earlier run, "+
				"remove it and learn again, or set privateTmp: true in the profile")
			return []string{why}
		}
	}
	s.privateTmp = true
	return []string{"private /tmp: the command only used temp files it created"}
}

// atOrBelow reports whether p is d or below it (d and p portable: "/" holds the absolute
// paths, "$HOME" those below $HOME).
func atOrBelow(d, p string) bool {
	if d == "/" {
		return strings.HasPrefix(p, "/")
	}
	return strings.HasPrefix(p, d) && (len(p) == len(d) || p[len(d)] == '/')
}
