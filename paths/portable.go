package paths

import (
	"path"
	"regexp"
	"strings"
	"sync"
)

// Generalize is the portable form learn gives host path p: see portablePath. exePIDs are the
// pids of the process image that made the access (nil: none).
func (rs Roots) Generalize(p string, exePIDs map[string]bool) string {
	return portablePath(p, rs, exePIDs)
}

// portablePath rewrites one absolute host path into its portable form: /proc/<pid> becomes
// /proc/self (when pid is one of exePIDs, the pids of the process image that made the access)
// or /proc/*, the longest variable prefix is substituted, and per-run random components
// collapse to globs. Relative or empty paths come back unchanged.
func portablePath(p string, vars Roots, exePIDs map[string]bool) string {
	if p == "" || !path.IsAbs(p) {
		return p
	}
	if !CleanAbs(p) {
		p = path.Clean(p)
	}
	switch first, _ := Component(p, 1); first {
	case "proc", "sys", "dev":
		return portableKernelPath(p, exePIDs)
	}
	prefix, rest := "", p[1:] // rest: the components after the variable, or all of them
	if name, r, ok := vars.Cut(p); ok {
		if r == "" {
			return "$" + name
		}
		prefix, rest = "$"+name, r
	}
	// Glob the components; most need nothing, and then neither does the path.
	var b strings.Builder
	changed := false
	for i := 0; i <= len(rest); {
		c, next := Component(rest, i)
		g := c
		switch {
		case i == 0 && prefix == "$TMPDIR", i > 0 && prefix == "" && tempRoot("/"+rest[:i-1]):
			g = GlobTempComponent(c)
		case i == 0 && prefix == "$GOCACHE" && cacheFanOut(c):
			g = "*"
		case mayGlob(c):
			g = globComponentCached(c)
		}
		switch {
		case changed:
			b.WriteByte('/')
			b.WriteString(g)
		case g != c:
			changed = true
			b.Grow(len(prefix) + len(rest) + 8)
			b.WriteString(prefix)
			b.WriteByte('/')
			b.WriteString(rest[:i]) // the unchanged components, with their trailing slash
			b.WriteString(g)
		}
		i = next
	}
	switch {
	case changed:
		return b.String()
	case prefix == "":
		return p
	}
	return prefix + "/" + rest
}

// PortableMemo is Roots.Generalize for many paths at once, each directory rewritten once: the
// portable form of a path is that of its directory, a slash, and its globbed base name, unless
// the path is a variable's value itself or lies in /proc, /sys or /dev (where the pids of the
// process that made the access matter). Those, and paths that are not clean, take portablePath.
//
// It remembers the directories of the last path, each the parent of the next (the paths come
// sorted, so that is where the next path usually lies); any order gives the same answers.
type PortableMemo struct {
	vars    Roots
	varLens uint64 // bit n: a variable's value is n bytes long (n < 64; longer ones always checked)
	stack   []dirMemo
}

type dirMemo struct {
	dir, out string
	ok       bool // false: the directory's paths take portablePath
	same     bool // out is dir itself
}

func NewPortableMemo(vars Roots) *PortableMemo {
	m := &PortableMemo{vars: vars}
	for _, v := range vars {
		if len(v.Value) < 64 {
			m.varLens |= 1 << len(v.Value)
		}
	}
	return m
}

// Path returns portablePath(p, m.vars, pids()); pids is called only for paths that need it.
// p is remembered as a directory too: the next path may lie in it.
func (m *PortableMemo) Path(p string, pids func() map[string]bool) string {
	if r := m.dir(p); r.ok {
		return r.out
	}
	return portablePath(p, m.vars, pids())
}

// dir returns the portable form of path d, as the directory of the paths that follow, or ok
// false when d's paths (and d) need portablePath.
//
// The directories of d are its prefixes that end before a slash (not the leading one), each
// the parent of the next. The stack holds some of those of the last path, shortest first:
// keep the ones d shares, then add d's own below them.
func (m *PortableMemo) dir(d string) dirMemo {
	n := len(m.stack)
	if n > 0 {
		// A directory on the stack is a prefix of the top one: it is d's, or d itself, when
		// it is no longer than their common prefix and ends where a component of d ends.
		common := commonPrefixLen(m.stack[n-1].dir, d)
		for ; n > 0; n-- {
			k := len(m.stack[n-1].dir)
			if k < common || k == common && (k == len(d) || d[k] == '/') {
				break
			}
		}
		m.stack = m.stack[:n]
		if n > 0 && len(m.stack[n-1].dir) == len(d) {
			return m.stack[n-1]
		}
	}
	if d == "" {
		r := dirMemo{}
		m.stack = append(m.stack, r)
		return r
	}
	start := 0 // where the next directory's last component starts, its slash before it
	if n > 0 {
		start = len(m.stack[n-1].dir)
	}
	for {
		end := len(d)
		if i := strings.IndexByte(d[start+1:], '/'); i >= 0 {
			end = start + 1 + i
		}
		var parent *dirMemo
		if n := len(m.stack); n > 0 && start > 0 {
			parent = &m.stack[n-1]
		}
		r := m.child(d[:end], parent)
		m.stack = append(m.stack, r)
		if end == len(d) {
			return r
		}
		start = end
	}
}

// child makes the memo of directory d, whose parent directory is the memo parent (nil: d has
// none, it is a top directory such as /usr, or relative).
func (m *PortableMemo) child(d string, parent *dirMemo) dirMemo {
	r := dirMemo{dir: d}
	i := strings.LastIndexByte(d, '/')
	switch {
	case i < 0 || !plainName(d[i+1:]):
	case parent == nil:
		switch d {
		case "/proc", "/sys", "/dev":
		default:
			r.out, r.ok = portablePath(d, m.vars, nil), true
			r.same = r.out == d
		}
	case !parent.ok:
	case m.isVarValue(d):
		// A variable's paths are still its form, a slash and their base name: the variable
		// they start with is the one d starts with.
		r.out, r.ok = portablePath(d, m.vars, nil), true
		r.same = r.out == d
	default:
		base := d[i+1:]
		g := base
		switch {
		case tempRoot(parent.out):
			g = GlobTempComponent(base)
		case parent.out == "$GOCACHE" && cacheFanOut(base):
			g = "*"
		case mayGlob(base):
			g = globComponentCached(base)
		}
		r.ok = true
		if r.same = g == base && parent.same; r.same {
			r.out = d
		} else {
			r.out = parent.out + "/" + g
		}
	}
	return r
}

// commonPrefixLen is the length of the longest common prefix of a and b.
func commonPrefixLen(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i+16 <= n && a[i:i+16] == b[i:i+16] { // sorted paths share long prefixes
		i += 16
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

func (m *PortableMemo) isVarValue(p string) bool {
	if len(p) < 64 && m.varLens&(1<<len(p)) == 0 {
		return false
	}
	for _, v := range m.vars {
		if v.Value == p {
			return true
		}
	}
	return false
}

// plainName reports whether a base name keeps a clean path clean.
func plainName(b string) bool { return b != "" && b != "." && b != ".." }

// portableKernelPath is portablePath for /proc, /sys and /dev (p clean and absolute):
// /proc/<pid> and task ids, and terminal numbers (/dev/pts/N → /dev/pts), are per run; nothing
// else there is.
func portableKernelPath(p string, exePIDs map[string]bool) string {
	comps := strings.Split(p[1:], "/")
	if HasGlob(p) { // /dev/shm/* named so: that one file
		for i, c := range comps {
			comps[i] = Literal(c)
		}
		p = "/" + strings.Join(comps, "/")
	}
	switch {
	case len(comps) >= 2 && comps[0] == "proc" && allDigits(comps[1]):
		if exePIDs[comps[1]] {
			comps[1] = "self"
		} else {
			comps[1] = "*"
		}
		if len(comps) >= 4 && comps[2] == "task" && allDigits(comps[3]) {
			comps[3] = "*"
		}
		return "/" + strings.Join(comps, "/")
	case len(comps) >= 4 && comps[0] == "proc" && (comps[1] == "self" || comps[1] == "thread-self") && comps[2] == "task" && allDigits(comps[3]):
		comps[3] = "*"
		return "/" + strings.Join(comps, "/")
	case len(comps) == 3 && comps[0] == "dev" && comps[1] == "pts" && allDigits(comps[2]):
		// The directory, not /dev/pts/*: a glob is expanded when enforce compiles, before the
		// run's terminal exists; a rule on the directory covers the terminals made later.
		return "/dev/pts"
	case len(comps) >= 3 && comps[0] == "dev" && comps[1] == "shm":
		// POSIX shared memory and semaphores: their names are a temp root's.
		comps[2] = GlobTempComponent(comps[2])
		return "/" + strings.Join(comps, "/")
	}
	return p
}

// CleanAbs reports whether the absolute path p is what path.Clean returns for it: no empty,
// "." or ".." component and no trailing slash (but "/").
func CleanAbs(p string) bool {
	if p == "/" {
		return true
	}
	if p[len(p)-1] == '/' {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] != '/' {
			continue
		}
		// p[i+1:] starts a component: reject "", "." and "..".
		j := i + 1
		if j == len(p) || p[j] == '/' {
			return false
		}
		if p[j] == '.' && (j+1 == len(p) || p[j+1] == '/' || p[j+1] == '.' && (j+2 == len(p) || p[j+2] == '/')) {
			return false
		}
	}
	return true
}

// mayGlob reports whether GlobComponent could change c: every rule of it needs a run of 4 or
// more letters and digits holding a digit, or one of the temp-name prefixes, so a name with
// neither comes back as it is (libc.so.6, x86_64, python3); a name holding a glob
// metacharacter is escaped.
func mayGlob(c string) bool {
	run, digit, meta := 0, false, false // the current run of letters and digits, and whether it has one
	for i := 0; i < len(c); i++ {
		switch nameByte[c[i]] {
		case byteDigit:
			run, digit = run+1, true
		case byteLetter:
			run++
		case byteMeta:
			run, digit, meta = 0, false, true
			continue
		default:
			run, digit = 0, false
			continue
		}
		if digit && run >= 4 {
			return true
		}
	}
	if c == "" {
		return false
	}
	if len(c) >= 36 && strings.Count(c, "-") >= 4 {
		return true // globUUIDs
	}
	if meta { // escaped by GlobComponent
		return true
	}
	if c[0] == 't' && strings.HasPrefix(c, "tmp") {
		return true // pythonTempName
	}
	if randomPrefixFirst[c[0]] {
		for _, rp := range randomPrefixes {
			if strings.HasPrefix(c, rp.prefix) {
				return true
			}
		}
	}
	return false
}

// nameByte classes the bytes of a name for mayGlob.
var nameByte = func() (t [256]uint8) {
	for c := '0'; c <= '9'; c++ {
		t[c] = byteDigit
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = byteLetter, byteLetter
	}
	t['*'], t['?'], t['['] = byteMeta, byteMeta, byteMeta
	return t
}()

const (
	byteOther = iota
	byteLetter
	byteDigit
	byteMeta // a glob metacharacter: the name is escaped (paths.Literal)
)

// randomPrefixFirst holds the first bytes of the randomPrefixes.
var randomPrefixFirst = func() (t [256]bool) {
	for _, rp := range randomPrefixes {
		t[rp.prefix[0]] = true
	}
	return t
}()

// randomPrefixes are temp-name makers whose random part has no digits often enough that the
// generic rules would miss it: the prefix is kept and the random run after it (of class, from
// min to max bytes) becomes `*`. A longer prefix comes before a shorter one it starts with.
var randomPrefixes = []struct {
	prefix   string
	min, max int
	class    nameClass
}{
	{"tmp.", 6, 16, classAlnum},       // mktemp(1): tmp.XXXXXXXXXX
	{".tmp", 6, 6, classAlnum},        // Rust's tempfile crate (cargo): .tmpXXXXXX
	{"rustc", 6, 6, classMixed},       // rustc's temp dirs: rustcXXXXXX
	{"cc", 6, 6, classMixed},          // gcc's temp files: ccXXXXXX.s, ccXXXXXX.o
	{"st", 6, 6, classMixed},          // binutils' ar, ranlib, strip, objcopy: stXXXXXX beside the file they rewrite
	{"zi", 6, 6, classMixed},          // Info-ZIP's zip: ziXXXXXX beside the archive it writes
	{"sed", 6, 6, classMixed},         // GNU sed -i: sedXXXXXX beside each file it edits
	{"ssh-", 6, 16, classAlnum},       // ssh-agent's socket dir: ssh-XXXXXXXXXX
	{"sem.mp-", 8, 8, classPython},    // Python multiprocessing's semaphores: /dev/shm/sem.mp-XXXXXXXX
	{"sem.", 6, 6, classAlnum},        // glibc sem_open's temp name: /dev/shm/sem.XXXXXX
	{"pymp-", 8, 8, classPython},      // Python multiprocessing's temp dir: pymp-XXXXXXXX
	{"pytest-of-", 1, 32, classUser},  // pytest's base temp dir: pytest-of-USER (the user differs)
	{"pytest-", 1, 10, classDigits},   // and its numbered session dirs in it: pytest-N (not pytest-7.2.1.dist-info)
	{"garbage-", 36, 36, classUUID},   // pytest's dirs on their way out: garbage-UUID
	{"rustdoctest", 6, 6, classAlnum}, // cargo test's doctests: $TMPDIR/rustdoctestXXXXXX/rust_out
	{"_tmp_", 3, 80, classWord},       // pnpm's hard-link probes (a file system's root, $PNPM_HOME): _tmp_<pid>_<hex>
	// mkstemp replaces only the last six X's of its template: perl -i's XXXXXXXX leaves
	// XX + 6 random letters and digits beside each file it edits.
	{"XX", 6, 6, classAlnum},
}

// linkProbes are where a package manager checks, once per run, that it can hard-link from its
// store: a directory of a per-run name it creates and removes again, beside the store (pnpm:
// $PNPM_HOME/_tmp_<pid>_<hex>, with a file of the same kind inside).
var linkProbes = []string{"$PNPM_HOME/_tmp_*"}

// LinkProbe reports whether portable path p is (or lies in) a package manager's hard-link
// probe beside its store: a write there is granted as the probe's glob, never as the
// directory it lies in (pnpm's home holds its global bins, on PATH).
func LinkProbe(p string) bool {
	for _, q := range linkProbes {
		if Covers(q, p) {
			return true
		}
	}
	return false
}

// nameClass is the alphabet of a generator's random run.
type nameClass uint8

const (
	classAlnum  nameClass = iota // [A-Za-z0-9]
	classMixed                   // [A-Za-z0-9] holding an upper-case letter or a digit (mkstemp's alphabet)
	classPython                  // [a-z0-9_] (Python's tempfile)
	classDigits                  // [0-9], up to the end of the name
	classUser                    // a user name: [A-Za-z0-9_.-], up to the end of the name
	classUUID                    // [0-9a-f-]
	classWord                    // [A-Za-z0-9_], up to the end of the name
)

// runOf returns how many bytes at the start of s are of class k.
func runOf(s string, k nameClass) int {
	n := 0
	for n < len(s) {
		c := s[n]
		var ok bool
		switch k {
		case classAlnum, classMixed:
			ok = isAlnum(c)
		case classPython:
			ok = c >= 'a' && c <= 'z' || isDigit(c) || c == '_'
		case classDigits:
			ok = isDigit(c)
		case classUser:
			ok = isAlnum(c) || c == '_' || c == '.' || c == '-'
		case classUUID:
			ok = isDigit(c) || c >= 'a' && c <= 'f' || c == '-'
		case classWord:
			ok = isAlnum(c) || c == '_'
		}
		if !ok {
			break
		}
		n++
	}
	return n
}

// pythonTempName reports Python's tempfile names (mkstemp, mkdtemp, NamedTemporaryFile):
// "tmp" and 8 characters of [a-z0-9_], then the end or a suffix (which it returns). All
// letters is as likely a random name as any other (1 in 16): no 11-letter word is kept apart.
func pythonTempName(c string) (suffix string, ok bool) {
	if len(c) < 11 || !strings.HasPrefix(c, "tmp") || runOf(c[3:11], classPython) != 8 {
		return "", false
	}
	if len(c) > 11 && (isAlnum(c[11]) || c[11] == '_') {
		return "", false
	}
	return c[11:], true
}

// cacheFanOut reports Go's build cache's first-level directories: the first byte of an entry's
// hash in hex ($GOCACHE/f8/f8…-d/NAME), a different one for every build.
func cacheFanOut(c string) bool {
	return len(c) == 2 && runOf(c, classUUID) == 2 && c[0] != '-' && c[1] != '-'
}

// tempRoot reports whether a portable directory is a temp root, where generators put their
// random names (GlobTempComponent).
func tempRoot(dir string) bool {
	switch dir {
	case "$TMPDIR", "/tmp", "/var/tmp", "/dev/shm":
		return true
	}
	return false
}

// GlobTempComponent is GlobComponent for a name directly in a temp root ($TMPDIR, /tmp,
// /var/tmp, /dev/shm), where a name's shape alone says which generator made it, also when its
// random part happens to hold no digit:
//
//   - exactly 8 of [a-z0-9_]: Python's tempfile.gettempdir() probe → ????????;
//   - a prefix ending in "-" or "." and 8 of [a-z0-9_]: Python's mkdtemp(prefix="pip-") → pip-*;
//   - a prefix and 6 of [A-Za-z0-9] mixing two of upper case, lower case and digits (mkstemp,
//     mkdtemp, node's fs.mkdtemp: foo-RVUtDz, myappXyZabc) → foo-*, myapp*.
//
// Anything else is GlobComponent's.
func GlobTempComponent(c string) string {
	if c == "" || strings.ContainsAny(c, "*$?[") {
		return c
	}
	if len(c) == 8 && runOf(c, classPython) == 8 {
		return "????????"
	}
	if i := strings.LastIndexAny(c, "-."); i >= 0 && len(c)-i-1 == 8 && runOf(c[i+1:], classPython) == 8 {
		return GlobComponent(c[:i+1]) + "*"
	}
	g := GlobComponent(c)
	if strings.HasSuffix(g, "*") {
		return g
	}
	if n := len(c); n >= 6 && runOf(c[n-6:], classAlnum) == 6 {
		var upper, lower, digit int
		for i := n - 6; i < n; i++ {
			switch b := c[i]; {
			case isDigit(b):
				digit = 1
			case b >= 'A' && b <= 'Z':
				upper = 1
			default:
				lower = 1
			}
		}
		if upper+lower+digit >= 2 {
			return GlobComponent(c[:n-6]) + "*"
		}
	}
	return g
}

// timestampRE matches a date or date-time stamp in a name (npm's
// 2026-11-30T04_00_00_000Z-debug.log, Go telemetry's go@go1.26-...-2026-11-30.v1.count).
var timestampRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(19|20)\d{2}-?[01]\d-?[0-3]\d([T_ -]?\d{2}[_:.-]?\d{2}[_:.-]?\d{2}([_:.,]\d{1,9})?Z?)?`)
})

// GlobComponent returns one path component with its per-run random parts replaced by `*`, or
// the component unchanged when nothing in it looks random. A component that holds a glob
// metacharacter itself (a file named `*`) comes back as paths.Literal of it: a host name never
// becomes a pattern. It is a heuristic over runs of
// letters and digits:
//
//   - a known temp-name prefix followed by its random run (tmp.XXXXXXXXXX, .tmpXXXXXX,
//     rustcXXXXXX, ccXXXXXX.o, ssh-XXXXXXXXXX, sem.XXXXXX, sem.mp-XXXXXXXX, pymp-XXXXXXXX,
//     pytest-of-USER, pytest-N; randomPrefixes), and Python's tempfile names (tmpXXXXXXXX);
//   - a run of 4 or more digits only (pids, uids, timestamps: agent.12345, 1000);
//   - a hex run of 8 or more holding both a digit and a letter a-f (build hashes:
//     serde-1a2b3c4d5e6f7a8b);
//   - a run of 6 or more mixing upper case, lower case and digits (mkstemp: XyZ12a), keeping a
//     lower-case word before its last 6 characters (tempfile: targeteVpTA7 → target*);
//   - a run of 10 or more with at least 3 digits and 3 letters changing between the two at
//     least 4 times (base-36 hashes: 00v5zyg4h84nypw5fqyxdz1el);
//   - inside any other run, a stretch of 6 or more digits (go-build123456789);
//   - a date or date-time stamp (2026-11-30, 2026-11-30T04_00_00_000Z, 20261130-040000);
//   - a UUID (bash_tool_d53713f2-eef2-41d1-9991-ab957b398f58 → bash_tool_*).
//
// Names directly in a temp root take GlobTempComponent. Version numbers (1.75.0, python3.11, x86_64) stay as they are.
func GlobComponent(c string) string {
	if HasGlob(c) {
		return Literal(c) // a name that looks like a pattern is that name, exactly
	}
	if c == "" || strings.Contains(c, "$") {
		return c
	}
	if countDigits(c) >= 8 { // a stamp holds at least 8 digits: skip the regexp otherwise
		c = globStamps(c)
	}
	if len(c) >= 36 {
		c = globUUIDs(c)
	}
	if rest, ok := pythonTempName(c); ok {
		return "tmp*" + GlobComponent(rest)
	}
	for _, rp := range randomPrefixes {
		if !strings.HasPrefix(c, rp.prefix) {
			continue
		}
		rest := c[len(rp.prefix):]
		n := runOf(rest, rp.class)
		if n < rp.min || n > rp.max || (rp.class == classUser || rp.class == classDigits || rp.class == classWord) && n != len(rest) || rp.class == classMixed && !strings.ContainsFunc(rest[:n], func(r rune) bool {
			return r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		}) {
			continue
		}
		return rp.prefix + "*" + GlobComponent(rest[n:])
	}
	var b strings.Builder
	for i := 0; i < len(c); {
		if !isAlnum(c[i]) {
			b.WriteByte(c[i])
			i++
			continue
		}
		j := i
		for j < len(c) && isAlnum(c[j]) {
			j++
		}
		b.WriteString(globRun(c[i:j]))
		i = j
	}
	out := b.String()
	for strings.Contains(out, "**") {
		out = strings.ReplaceAll(out, "**", "*")
	}
	return out
}

// globUUIDs replaces the UUIDs in c (8-4-4-4-12 hex digits, any case) with "*".
func globUUIDs(c string) string {
	var b strings.Builder
	last := 0
	for i := 0; i+36 <= len(c); i++ {
		if i > 0 && isAlnum(c[i-1]) || i+36 < len(c) && isAlnum(c[i+36]) || !isUUID(c[i:i+36]) {
			continue
		}
		b.WriteString(c[last:i])
		b.WriteByte('*')
		last = i + 36
		i += 35
	}
	if last == 0 {
		return c
	}
	b.WriteString(c[last:])
	return b.String()
}

func isUUID(s string) bool {
	for i := 0; i < 36; i++ {
		switch c := s[i]; i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isDigit(c) && !(c >= 'a' && c <= 'f') && !(c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// globStamps replaces the date stamps in c with "*". A match inside a longer run of digits is
// not a stamp but part of a random number (go-build3201711235 holds 20171123): globRun takes
// that run whole, and replacing the match would leave digits of it behind (go-build3*5).
func globStamps(c string) string {
	var b strings.Builder
	last := 0
	for _, m := range timestampRE().FindAllStringIndex(c, -1) {
		if m[0] > 0 && isDigit(c[m[0]-1]) || m[1] < len(c) && isDigit(c[m[1]]) {
			continue
		}
		b.WriteString(c[last:m[0]])
		b.WriteByte('*')
		last = m[1]
	}
	if last == 0 {
		return c
	}
	b.WriteString(c[last:])
	return b.String()
}

// globCache memoizes GlobComponent (a pure function): a trace repeats the same components
// (usr, share, lib...) tens of thousands of times.
var (
	globCacheMu sync.Mutex
	globCache   = map[string]string{}
)

func globComponentCached(c string) string {
	globCacheMu.Lock()
	g, ok := globCache[c]
	globCacheMu.Unlock()
	if ok {
		return g
	}
	g = GlobComponent(c)
	globCacheMu.Lock()
	if len(globCache) >= 1<<16 {
		clear(globCache)
	}
	globCache[c] = g
	globCacheMu.Unlock()
	return g
}

// globRun applies the generic rules of GlobComponent to one run of letters and digits.
func globRun(r string) string {
	var upper, lower, digit, nonHex bool
	for i := 0; i < len(r); i++ {
		switch c := r[i]; {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'A' && c <= 'Z':
			upper = true
			nonHex = nonHex || c > 'F'
		default:
			lower = true
			nonHex = nonHex || c > 'f'
		}
	}
	digits, switches := 0, 0 // digit count; letter↔digit changes
	for i := 0; i < len(r); i++ {
		if isDigit(r[i]) {
			digits++
		}
		if i > 0 && isDigit(r[i]) != isDigit(r[i-1]) {
			switches++
		}
	}
	switch {
	case allDigits(r) && len(r) >= 4:
		return "*"
	case len(r) >= 8 && digit && !nonHex && (upper != lower):
		return "*"
	case len(r) >= 6 && upper && lower && digit:
		// tempfile's prefix + 6 random characters (cargo's targeteVpTA7): keep the word.
		if w := r[:len(r)-6]; len(w) >= 2 && strings.Trim(w, "abcdefghijklmnopqrstuvwxyz") == "" {
			return w + "*"
		}
		return "*"
	case len(r) >= 10 && digits >= 3 && len(r)-digits >= 3 && switches >= 4:
		return "*" // a base-36 hash (rustc's 00v5zyg4h84nypw5fqyxdz1el)
	}
	// A long digit stretch inside a word: go-build123456789 → go-build*. Six digits, not
	// five: key and curve names (id_ed25519) are not random.
	var b strings.Builder
	for i := 0; i < len(r); {
		j := i
		for j < len(r) && isDigit(r[j]) {
			j++
		}
		if j-i >= 6 {
			b.WriteByte('*')
			i = j
			continue
		}
		if j > i {
			b.WriteString(r[i:j])
			i = j
			continue
		}
		b.WriteByte(r[i])
		i++
	}
	return b.String()
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func countDigits(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if isDigit(s[i]) {
			n++
		}
	}
	return n
}

// Portable rewrites a host path into the portable form a profile stores, with the variables of
// values (names without `$`): what learn does to every path it saw (Roots.Generalize), for
// callers that have no pids (enforce's suggestions, refine). /proc/<pid> becomes /proc/self:
// without the pid of the process that asked, the narrower reading is the safe one (a wrong
// guess fails closed).
func Portable(p string, values map[string]string) string {
	own := map[string]bool{}
	if rest, ok := strings.CutPrefix(path.Clean(p), "/proc/"); ok {
		pid, _, _ := strings.Cut(rest, "/")
		own[pid] = true
	}
	return NewRoots(values).Generalize(p, own)
}
