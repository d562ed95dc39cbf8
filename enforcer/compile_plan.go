package enforcer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/changeset"
	"github.com/sysprof/sysprof/internal/profilecache"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/sandbox"
)

// changesetDirs are where runs' changesets live on this host: changeset.StateDir and the
// places changeset.AddStage may put layers (changeset.LayerPlaces).
func changesetDirs() []string {
	out := changeset.LayerPlaces()
	if d, err := changeset.StateDir(); err == nil {
		out = append(out, d)
	}
	return out
}

// expand is paths.Expand with this host's values.
func expand(path string, env Env) (string, error) { return paths.Expand(path, env.Vars) }

// globLimit is how many directory entries one glob may look at.
var globLimit = 20000

// expandRules expands a rule list; a glob becomes the directory that holds it (mounts and
// Landlock cannot express globs), which compile notes as a widening.
func (c *Compiled) expandRules(section string, rules []policy.PathRule, env Env, dirs *dirListings) ([]string, error) {
	var out []string
	var linked []policy.PathRule
	for _, r := range rules {
		p, err := expand(r.Path, env)
		if err != nil {
			return nil, fmt.Errorf("filesystem.%s: %w", section, err)
		}
		if section != "hidden" && (section != "write" || paths.Within(p, filepath.Join(env.Vars["WORKDIR"], ".git"))) {
			// $WORKDIR/.git is also the linked git directory a worktree's .git file names
			// (paths.LinkedGitPaths). Writing the tree never writes it, as it never writes a
			// .git directory (protected): only a write rule at or below .git reaches it.
			for _, g := range paths.LinkedGitPaths(p, env.Vars) {
				linked = append(linked, policy.PathRule{Path: g})
			}
		}
		if section == "write" && kernelTree(p) {
			// Never /proc as such: it stays read-only. A learned per-process file is granted
			// by the supervisor, that file only (procwrite.go).
			_, name, ok := procFile(p)
			if ok && slices.ContainsFunc(c.ProcWrites, func(w ProcWrite) bool { return w.Name == name && w.Granted }) {
				c.Notes = append(c.Notes, fmt.Sprintf("filesystem.write: %s granted by the supervisor: that file of the writing process only; the rest of /proc stays read-only", r.Path))
			} else {
				c.Notes = append(c.Notes, fmt.Sprintf("filesystem.write: %s refused: /proc and /sys stay read-only (the supervisor grants only %s of a process of the sandbox)", r.Path, strings.Join(procWritable, ", ")))
			}
			continue
		}
		if procSelf(p) {
			// Landlock resolves /proc/self once, to the init stage's pid: every child would be
			// refused its own /proc entries. /proc as a whole is what can be granted.
			c.Notes = append(c.Notes, fmt.Sprintf("filesystem.%s: %s granted as /proc (Landlock cannot follow /proc/self into child processes)", section, r.Path))
			out = append(out, "/proc")
			continue
		}
		if strings.ContainsAny(p, "*?[") && section == "hidden" {
			// Hiding the glob's directory would hide far more than asked (all of /tmp for
			// $TMPDIR/ssh-*): hide what matches now instead.
			m, cut := globMatches(p, globLimit, dirs)
			if cut {
				c.Notes = append(c.Notes, fmt.Sprintf("filesystem.hidden: %s: looked at the first %d directory entries only (nearest first); matches deeper down are not hidden", r.Path, globLimit))
			}
			out = append(out, m...)
			continue
		}
		if strings.ContainsAny(p, "*?[") && section == "write" {
			// Directories that match now are bound; otherwise the glob itself goes to
			// planWrites, which stages its directory and copies back what matches.
			if privateTmpRoot(p) == "" {
				if m, cut := globMatches(p, globLimit, dirs); !cut && len(m) > 0 && len(m) <= 256 && allDirs(m) {
					out = append(out, m...)
					continue
				}
			}
			out = append(out, p)
			continue
		}
		if strings.ContainsAny(p, "*?[") {
			// Landlock and mounts name inodes: grant what matches now. Only when nothing
			// matches yet (a per-run name the tool will create) is the glob's directory
			// granted instead, and said so.
			// Under /tmp the host's matches are other runs' leftovers (and with a private tmp
			// not even visible): widen there as before.
			if privateTmpRoot(p) == "" {
				if m, cut := globMatches(p, globLimit, dirs); !cut && len(m) > 0 && len(m) <= 256 {
					out = append(out, m...)
					continue
				}
			}
			dir := p
			for strings.ContainsAny(dir, "*?[") {
				dir = filepath.Dir(dir)
			}
			c.Notes = append(c.Notes, fmt.Sprintf("filesystem.%s: %s widened to %s (globs cannot be enforced)", section, r.Path, dir))
			p = dir
		}
		out = append(out, p)
	}
	if len(linked) > 0 {
		more, err := c.expandRules(section, linked, env, dirs)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// hiddenNames are the hidden paths whose name Landlock keeps unreadable: those that exist
// now, and those the profile names without a glob (a credential file the host may create
// during the run).
func hiddenNames(rules []policy.PathRule, existing []string, env Env) []string {
	out := slices.Clone(existing)
	for _, r := range rules {
		if p, err := expand(r.Path, env); err == nil && !strings.ContainsAny(p, "*?[") {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func maskedPaths(m []sandbox.Masked) []string {
	var out []string
	for _, x := range m {
		out = append(out, x.Path)
	}
	return out
}

// maskGitConfigs covers the work tree's git config files that hold credentials (the CI
// checkout token in http.extraHeader, passwords in remote URLs) with a copy without them:
// git needs the rest of the file. A file the profile hides stays hidden instead.
func (c *Compiled) maskGitConfigs(plan *sandbox.Plan, env Env) {
	wd := env.Vars["WORKDIR"]
	if wd == "" {
		return
	}
	for _, f := range gitConfigFiles(wd, env.Vars["HOME"]) {
		if paths.CoveredBy(f, plan.Hidden) {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			continue // absent, or unreadable to the caller: the tool cannot read it either
		}
		masked, removed := maskGitConfig(data)
		if len(removed) == 0 {
			continue
		}
		plan.Masked = append(plan.Masked, sandbox.Masked{Path: f, Content: masked})
		c.MaskedSecrets = append(c.MaskedSecrets, f)
		c.Notes = append(c.Notes, fmt.Sprintf("filesystem: %s is shown without its credentials (%s)", f, strings.Join(slices.Compact(removed), ", ")))
	}
}

// kernelTree reports /proc, /sys and paths below them.
func kernelTree(p string) bool {
	return p == "/proc" || p == "/sys" || strings.HasPrefix(p, "/proc/") || strings.HasPrefix(p, "/sys/")
}

// procSelf reports paths below /proc/self or /proc/thread-self (or a /proc/* glob).
func procSelf(p string) bool {
	for _, pre := range []string{"/proc/self", "/proc/thread-self", "/proc/*"} {
		if p == pre || strings.HasPrefix(p, pre+"/") {
			return true
		}
	}
	return false
}

// pathSets are the rules of a filesystem section expanded for this host (expandRules).
type pathSets struct {
	read, write, exec, list, hidden []string
}

// tmpGlob is a hidden glob inside a private /tmp: it can only match what is bound into it from
// the host, so it waits until that is known (listing the host's /tmp for $TMPDIR/ssh-* took
// ~1 ms).
type tmpGlob struct {
	rule policy.PathRule
	root string // the private tmp it lies in
}

// compilePlan is the host half of Compile: the sandbox plan (mounts, Landlock, network
// namespace), the stages and the host sockets to hide, for the profile's sections on env's
// host. Every profile gets the read-only root and Landlock: an empty section is "nothing of
// that kind" (beyond withBase), never "that layer off".
func (c *Compiled) compilePlan(p *policy.Profile, env Env, reachesSockets func() bool) error {
	fs := withBase(credentialFiles(p), env)
	dirs := &dirListings{}
	hiddenRules, tmpGlobs := fs.Hidden, []tmpGlob(nil)
	if fs.PrivateTmp {
		hiddenRules, tmpGlobs = splitTmpGlobs(fs.Hidden, env)
	}
	sets, err := c.expandSections(fs, hiddenRules, env, dirs)
	if err != nil {
		return err
	}
	c.Layers = append(c.Layers, LayerSeccomp)
	plan := &c.Plan
	plan.DropCaps = true
	c.Layers = append(c.Layers, LayerCaps)

	plan.ReadOnlyRoot = true
	plan.PrivateTmp = fs.PrivateTmp
	tmpWrites := privateTmpWrites(sets.write, fs.PrivateTmp, env)
	wg := c.planWrites(sets.write, sets.exec, fs.PrivateTmp, env)
	plan.Writable = append(plan.Writable, wg.binds...)
	c.Stages = wg.stages
	plan.Staged = stagesToPlan(wg.stages)
	sets.write = slices.Compact(slices.Sorted(slices.Values(wg.landlock)))
	if fs.PrivateTmp {
		if err := c.planPrivateTmp(&sets, tmpGlobs, tmpWrites, env, dirs); err != nil {
			return err
		}
	}
	for _, h := range sets.hidden {
		if _, err := os.Lstat(h); err == nil {
			plan.Hidden = append(plan.Hidden, h)
		}
	}
	c.maskGitConfigs(plan, env)
	if reachesSockets() {
		c.hideDaemonSockets(p.Network, fs.PrivateTmp, sets, env)
	}
	plan.Landlock = c.landlock(sets, hiddenNames(hiddenRules, sets.hidden, env), wg.binds, env)
	// Writable mounts in which no exec was learned are noexec (the private /tmp too).
	roots := slices.Concat(topLevelPaths(plan.Writable), stageDirsOf(c.Stages))
	if fs.PrivateTmp {
		roots = append(roots, privateTmpDirs...)
	}
	slices.Sort(roots)
	plan.NoExec = noExecRoots(slices.Compact(roots), sets.exec)
	// A stage whose exec rules name outputs it does not have yet, or existing files, is noexec
	// too: only those become exec-mappable (execoutputs.go).
	c.stageExec = c.narrowStageExec(sets.exec, wg.binds, programPaths(p, env), env)
	plan.NoExec = slices.Compact(slices.Sorted(slices.Values(slices.Concat(plan.NoExec, c.stageExec.stages))))
	plan.ExecOutputs = c.stageExec.outputs
	plan.ExecFiles = c.stageExec.files
	// (The private tmp roots are not among them here: a work tree bound into one is a mount of
	// its own, exec unless its tree is made noexec.)
	plan.NoExecTrees, plan.ExecKeep = c.noExecTrees(sets.exec, slices.Concat(topLevelPaths(plan.Writable), stageDirsOf(c.Stages)), plan.Hidden, env)
	if len(c.stageExec.keep) > 0 {
		plan.ExecKeep = slices.Compact(slices.Sorted(slices.Values(slices.Concat(plan.ExecKeep, c.stageExec.keep))))
	}
	c.Layers = append(c.Layers, LayerMounts, LayerLandlock)
	return c.planNetwork(p.Network, env)
}

// splitTmpGlobs sets apart the hidden globs that lie inside a private /tmp (see tmpGlob).
func splitTmpGlobs(hidden []policy.PathRule, env Env) (rest []policy.PathRule, globs []tmpGlob) {
	for _, r := range hidden {
		if p, err := expand(r.Path, env); err == nil && strings.ContainsAny(p, "*?[") && privateTmpRoot(p) != "" {
			globs = append(globs, tmpGlob{r, privateTmpRoot(p)})
		} else {
			rest = append(rest, r)
		}
	}
	return rest, globs
}

// expandSections expands the read, write, exec and list rules of fs, and the hidden rules.
func (c *Compiled) expandSections(fs policy.Filesystem, hidden []policy.PathRule, env Env, dirs *dirListings) (pathSets, error) {
	var sets pathSets
	for _, s := range []struct {
		name  string
		rules []policy.PathRule
		dst   *[]string
	}{{"read", fs.Read, &sets.read}, {"write", fs.Write, &sets.write}, {"exec", fs.Exec, &sets.exec},
		{"list", fs.List, &sets.list}, {"hidden", hidden, &sets.hidden}} {
		var err error
		if *s.dst, err = c.expandRules(s.name, s.rules, env, dirs); err != nil {
			return sets, err
		}
	}
	return sets, nil
}

// privateTmpWrites are the write rules below a private tmp root that land in its own tmpfs (not
// a host tree bound into it): what the command writes there itself.
func privateTmpWrites(write []string, privateTmp bool, env Env) []string {
	if !privateTmp {
		return nil
	}
	var out []string
	for _, w := range write {
		if root := privateTmpRoot(w); root != "" && w != root && !hostTreeInTmp(w, root, env) && hostTempDir(w, privateTmp, env) == "" {
			out = append(out, w)
		}
	}
	return out
}

// planPrivateTmp binds from the host, read-only, the read and exec paths inside the private
// /tmp (a work tree in /tmp) that would otherwise vanish under its fresh tmpfs; Landlock, which
// has no write rule for them, keeps them read-only (with Landlock degraded they would be
// writable: noted). A private tmp root itself is never bound (a glob's rule there is widened to
// the root: /tmp/rustdoctest*/rust_out made the whole private /tmp the host's, read-only), nor
// a path a write rule of the private tmp lies in or below (tmpWrites: what the command writes
// there is its own, never the host's copy). Then it hides what the hidden globs inside the
// private /tmp match among what the host's is bound into it.
func (c *Compiled) planPrivateTmp(sets *pathSets, globs []tmpGlob, tmpWrites []string, env Env, dirs *dirListings) error {
	plan := &c.Plan
	// The working directory must exist inside even when the tool never read it.
	keep := slices.Concat(sets.read, sets.exec, sets.list)
	if wd := env.Vars["WORKDIR"]; wd != "" {
		keep = append(keep, wd)
	}
	// So must a $TMPDIR below a private tmp root (pam_tmpdir's /tmp/user/UID) that the tool
	// only looked up: node's temp-dir realpaths os.tmpdir() when loaded (pnpm), which no rule
	// records. Read-only, only one hostTempDir would grant (no work tree or home below), and
	// only when nothing below it is kept (its mount point makes it exist then).
	if t := hostTempDir(env.Vars["TMPDIR"], true, env); t != "" && !slices.ContainsFunc(keep, func(k string) bool { return paths.Within(k, t) }) {
		keep = append(keep, t)
	}
	for _, r := range keep {
		if privateTmpRoot(r) == "" || privateTmpRoot(r) == r || paths.CoveredBy(r, plan.Writable) || paths.CoveredBy(r, stageDirsOf(c.Stages)) {
			continue
		}
		if slices.ContainsFunc(tmpWrites, func(w string) bool {
			sp := staticPrefix(w)
			return sp != privateTmpRoot(sp) && paths.Within(sp, r) || paths.Covers(w, r)
		}) {
			continue
		}
		if _, err := os.Stat(r); err == nil {
			// A read-only mount: Landlock's write rule on the tmp root covers it too.
			plan.ReadOnly = append(plan.ReadOnly, r)
			c.Notes = append(c.Notes, fmt.Sprintf("filesystem: %s is inside the private %s: bound read-only from the host", r, privateTmpRoot(r)))
		}
	}
	plan.ReadOnly = sandbox.ReadOnlyMounts(plan.ReadOnly, plan.Writable)
	scoped := map[string]*dirListings{}
	for _, g := range globs {
		var visible []string
		for _, w := range slices.Concat(plan.Writable, plan.ReadOnly, stageDirsOf(c.Stages)) {
			if privateTmpRoot(w) == g.root {
				visible = append(visible, w)
			}
		}
		if len(visible) == 0 {
			continue // nothing of the host's is visible in this private tmp
		}
		// Only what the binds show can be seen (or hidden): the walk lists the host's tmp root
		// no wider than the way to them (a /tmp of thousands of entries cost ~2 ms a run).
		if scoped[g.root] == nil {
			scoped[g.root] = &dirListings{scope: visible}
		}
		m, err := c.expandRules("hidden", []policy.PathRule{g.rule}, env, scoped[g.root])
		if err != nil {
			return err
		}
		sets.hidden = append(sets.hidden, m...)
	}
	slices.Sort(sets.hidden)
	sets.hidden = slices.Compact(sets.hidden)
	return nil
}

// hideDaemonSockets lists the pathname unix sockets of daemons outside the sandbox (tmux,
// docker, dbus, agents) for the init stage to cover after the plan's mounts: they are reachable
// through a read-only mount and Landlock has no rule for them. Each one the host has now is
// covered with an empty read-only file, unless the profile connects to it; sockets that vanish
// meanwhile are tolerated. Every network namespace's sockets count (a path ignores namespaces);
// many in one directory the profile does not use hide that directory (one mount, not hundreds).
func (c *Compiled) hideDaemonSockets(n policy.Network, privateTmp bool, sets pathSets, env Env) {
	plan := &c.Plan
	socks, unresolved := daemonSockets(env, n, privateTmp, slices.Concat(plan.Writable, plan.ReadOnly, stageDirsOf(c.Stages)))
	var uncovered, allowedSocks []string
	for _, sock := range socks {
		if !paths.CoveredBy(sock, plan.Hidden) {
			uncovered = append(uncovered, sock)
		}
	}
	for _, e := range slices.Concat(n.Connect, n.Send) {
		if x, ok := strings.CutPrefix(e.Endpoint, "unix:"); ok {
			if x, err := expand(x, env); err == nil {
				allowedSocks = append(allowedSocks, x)
			}
		}
	}
	var sockDirs []string
	c.HiddenSockets, sockDirs = groupSockets(uncovered, [][]string{sets.read, sets.write, sets.exec, sets.list, plan.Writable}, allowedSocks)
	if n := len(c.HiddenSockets) - len(sockDirs); n > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("filesystem.hidden: + %d unix socket(s) of daemons outside the sandbox", n))
	}
	for _, d := range sockDirs {
		c.Notes = append(c.Notes, fmt.Sprintf("filesystem.hidden: + %s (unix sockets of daemons outside the sandbox, no rule in it)", d))
	}
	for _, u := range unresolved {
		c.Notes = append(c.Notes, fmt.Sprintf("filesystem.hidden: unix socket bound as %q not located (its holders' working directories are not visible here): not hidden", u))
	}
}

// landlock is the plan's Landlock ruleset for the expanded sections: devices apart, no write
// under /proc ever (a learned /proc/self write is the supervisor's to grant, procwrite.go),
// exec rules as execDirs widens them, and hidden the names that stay
// unreadable when the host renames or creates a file there during the run (a mount covers the
// old file only: see sandbox.Landlock.Hidden).
func (c *Compiled) landlock(sets pathSets, hiddenNames, binds []string, env Env) *sandbox.Landlock {
	ll := &sandbox.Landlock{RestrictTCP: true, ScopeSignals: true, ScopeAbstractUnix: true}
	for _, r := range sets.read {
		if isDevice(r) {
			ll.Devices = append(ll.Devices, r)
			continue
		}
		ll.Read = append(ll.Read, r)
	}
	for _, w := range sets.write {
		if isDevice(w) {
			ll.Devices = append(ll.Devices, w)
			continue
		}
		ll.Write = append(ll.Write, w)
	}
	ll.Exec = c.execDirs(sets.exec, binds, c.Stages, env)
	ll.List = sets.list
	ll.Hidden = slices.Concat(hiddenNames, maskedPaths(c.Plan.Masked))
	slices.Sort(ll.Devices)
	ll.Devices = slices.Compact(ll.Devices)
	return ll
}

// planNetwork gives the command a network namespace of its own: with only loopback when the
// profile has no network section, else (a network allowlist) one whose only way out is the
// egress proxy (egress.go), as root and as an ordinary user; Landlock holds the TCP ports too.
func (c *Compiled) planNetwork(n policy.Network, env Env) error {
	plan := &c.Plan
	if len(n.Connect)+len(n.Send)+len(n.Bind)+len(n.Resolve) == 0 {
		plan.NetNS = true
		c.Layers = append(c.Layers, LayerNetNS)
		return nil
	}
	c.Layers = append(c.Layers, LayerNetwork)
	// Validated here; the egress proxy enforces them (egress.go), for root and users alike.
	if err := checkEndpoints(n); err != nil {
		return err
	}
	if err := compileEgress(c, plan, n, env); err != nil {
		return err
	}
	return c.landlockPorts(n)
}

// landlockPorts adds the TCP ports of the network section to Landlock's connect and bind rules,
// and turns abstract-unix scoping off for a profile that connects to an abstract socket.
func (c *Compiled) landlockPorts(n policy.Network) error {
	ll := c.Plan.Landlock
	for _, set := range []struct {
		name string
		eps  []policy.Endpoint
		dst  *[]uint16
	}{{"connect", n.Connect, &ll.ConnectTCP}, {"send", n.Send, nil}, {"bind", n.Bind, &ll.BindTCP}} {
		for _, e := range set.eps {
			if strings.HasPrefix(e.Endpoint, "unix:@") {
				ll.ScopeAbstractUnix = false
				c.Notes = append(c.Notes, fmt.Sprintf("network.%s: %s needs abstract unix sockets outside the sandbox: abstract-unix scoping is off", set.name, e.Endpoint))
			}
			if strings.HasPrefix(e.Endpoint, "unix:") {
				continue
			}
			port, err := endpointPort(e.Endpoint)
			if err != nil {
				return fmt.Errorf("network.%s: %w", set.name, err)
			}
			proto := strings.ToLower(e.Proto)
			if set.dst != nil && (proto == "" || proto == "tcp" || proto == "mptcp") {
				*set.dst = append(*set.dst, port)
			}
		}
	}
	for _, l := range []*[]uint16{&ll.ConnectTCP, &ll.BindTCP} {
		slices.Sort(*l)
		*l = slices.Compact(*l)
	}
	return nil
}

// isDevice: a path in /dev names a device node (Landlock takes it as it is). /dev/shm is no
// device but a temp root (POSIX semaphores, shared memory: random names, a private tmpfs).
func isDevice(p string) bool { return strings.HasPrefix(p, "/dev/") && privateTmpRoot(p) == "" }

// BaseRead is what every profile may read whatever its filesystem section says: what the
// dynamic loader needs to start any program, the harmless devices (read and write), and the
// online CPU list glibc reads on its own (get_nprocs: malloc sizing its arenas when threads
// contend, which one run does and the next does not).
var BaseRead = []string{"/etc/ld.so.cache", "/lib", "/lib64", "/usr/lib", "/usr/lib64",
	"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", // the user database (HOME unset: python, node)
	"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/sys/devices/system/cpu/online"}

// notWeaker refuses a compiled plan that enforces less than p reads: no read-only root or
// Landlock, no private /tmp asked for, or a hidden path of p or of the base (withBase) that
// exists here but is not hidden. Each is a bug in compile, never something to run with.
func (c *Compiled) notWeaker(p *policy.Profile, env Env) error {
	pl := c.Plan
	switch {
	case !pl.ReadOnlyRoot || pl.Landlock == nil:
		return errors.New("BUG: compile: the plan has no read-only root or no Landlock; refusing to run")
	case p.Filesystem.PrivateTmp && !pl.PrivateTmp:
		return errors.New("BUG: compile: the profile asks for a private /tmp and the plan has none; refusing to run")
	}
	// The profile's hidden paths and what withBase adds (credential stores, sysprof's state).
	for _, h := range withBase(credentialFiles(p), env).Hidden {
		x, err := expand(h.Path, env)
		if err != nil || strings.ContainsAny(x, "*?[") || privateTmpRoot(x) != "" && pl.PrivateTmp && !paths.CoveredBy(x, pl.Writable) {
			continue // globs hide what matches; a private /tmp hides the host's anyway
		}
		if _, err := os.Lstat(x); err == nil && !paths.CoveredBy(x, pl.Hidden) {
			return fmt.Errorf("BUG: compile: filesystem.hidden %s exists on this host but the plan does not hide it; refusing to run", h.Path)
		}
	}
	return nil
}

// EffectiveFilesystem is the filesystem section Compile enforces for fs on env's host (see
// withBase): what `sysprof show` prints.
func EffectiveFilesystem(fs policy.Filesystem, env Env) policy.Filesystem { return withBase(fs, env) }

// withBase is the filesystem section compile enforces: fs plus BaseRead; the command itself as
// the one exec rule when fs has none; the terminal its stdio is on (env.Terminal) writable;
// every credential store (paths.CredentialStores) hidden unless a rule names it, and when
// rules name paths inside one, everything else in it hidden (see hideAround); sysprof's own
// state (the binary-hash cache) hidden; and a private /tmp when fs has no rules at all. fs is
// not modified.
func withBase(fs policy.Filesystem, env Env) policy.Filesystem {
	empty := len(fs.Read)+len(fs.Write)+len(fs.Exec)+len(fs.List) == 0
	out := fs
	out.Read = slices.Clone(fs.Read)
	for _, r := range BaseRead {
		out.Read = append(out.Read, policy.PathRule{Path: r, Note: "base"})
	}
	if len(fs.Exec) == 0 && env.Command != "" {
		out.Exec = []policy.PathRule{{Path: env.Command, Note: "the command"}}
	}
	if env.Terminal != "" && !slices.ContainsFunc(fs.Write, func(r policy.PathRule) bool { return r.Path == env.Terminal }) {
		out.Write = append(slices.Clone(fs.Write), policy.PathRule{Path: env.Terminal, Note: "the terminal the command's stdio is on"})
	}
	out.Hidden = slices.Clone(fs.Hidden)
	named := slices.Concat(fs.Read, fs.Write, fs.Exec)
	for _, cs := range paths.CredentialStores() {
		if slices.ContainsFunc(out.Hidden, func(h policy.PathRule) bool { return paths.Covers(h.Path, cs) }) ||
			slices.ContainsFunc(named, func(r policy.PathRule) bool { return r.Path == cs }) {
			continue
		}
		x, err := expand(cs, env)
		if err != nil {
			continue // a variable this host does not set: nothing there to hide
		}
		var inside []string
		for _, r := range named {
			if paths.Covers(cs, r.Path) {
				if p, err := expand(r.Path, env); err == nil {
					inside = append(inside, p)
				}
			}
		}
		if len(inside) == 0 {
			out.Hidden = append(out.Hidden, policy.PathRule{Path: cs, Note: "credential store"})
			continue
		}
		// A rule inside the store grants that path only: the rest of the store stays hidden.
		note := fmt.Sprintf("credential store %s, but for the profile's rule(s) in it", cs)
		for _, h := range hideAround(x, inside) {
			out.Hidden = append(out.Hidden, policy.PathRule{Path: h, Note: note})
		}
	}
	// sysprof's own state: the command must not plant binary hashes for the next run.
	d := binHashDir()
	if d != "" {
		out.Hidden = append(out.Hidden, policy.PathRule{Path: d, Note: "sysprof's own state"})
	}
	// enforce's cache of parsed profiles (root's is /var/cache/sysprof/profiles, outside d): an
	// entry the command planted (as root-idmap its files are root's on disk) would be the next
	// run's profile. Made first, private, so that there is a directory to hide.
	if pc := profilecache.Dir(); pc != "" && !paths.Within(pc, d) && os.MkdirAll(pc, 0o700) == nil {
		out.Hidden = append(out.Hidden, policy.PathRule{Path: pc, Note: "sysprof's own state (parsed profiles)"})
	}
	if x, err := expand("$HOME/.cache/sysprof", env); err == nil && x != d {
		if _, err := os.Lstat(x); err == nil {
			out.Hidden = append(out.Hidden, policy.PathRule{Path: "$HOME/.cache/sysprof", Note: "sysprof's own state"})
		}
	}
	// The runs' changesets (manifests and layers): the command must not rewrite what is
	// applied after it, nor another run's held changes.
	for _, x := range changesetDirs() {
		if _, err := os.Lstat(x); err == nil {
			out.Hidden = append(out.Hidden, policy.PathRule{Path: x, Note: "sysprof's own state (changesets)"})
		}
	}
	out.PrivateTmp = fs.PrivateTmp || empty
	return out
}

// endpointPort returns the port of host:port, CIDR:port or [v6]:port.
func endpointPort(ep string) (uint16, error) {
	i := strings.LastIndexByte(ep, ':')
	if i < 0 {
		return 0, fmt.Errorf("endpoint %q has no port", ep)
	}
	n, err := strconv.ParseUint(ep[i+1:], 10, 16)
	if err != nil {
		return 0, fmt.Errorf("endpoint %q: port: %w", ep, err)
	}
	return uint16(n), nil
}

// socketDirs are where daemons put pathname unix sockets: listed (not their subdirectories),
// for sockets renamed since they were bound; the kernel's lists (hostSockets) name the others,
// wherever they are. (Walking them three levels deep reached every per-run cache under /tmp,
// a go build cache has 256 directories: ~40 ms of each enforce run here, with a /tmp of 600
// entries.)
var socketDirs = []string{"/run", "/var/run", "/tmp", "/var/tmp", "/dev/shm"}

// daemonSockets lists the pathname unix sockets on this host that a sandboxed command could
// connect to, except those the profile's network section names (unix:PATH), and the bound
// paths it could not place (see hostSockets). There is no cap: compile hides a directory
// instead when it holds many. With a private /tmp the host's sockets there are invisible,
// except below the host directories bound into it (binds, the plan's Writable).
func daemonSockets(env Env, n policy.Network, privateTmp bool, binds []string) (out, unresolved []string) {
	allowed := map[string]bool{}
	for _, l := range [][]policy.Endpoint{n.Connect, n.Send} {
		for _, e := range l {
			if p, ok := strings.CutPrefix(e.Endpoint, "unix:"); ok && !strings.HasPrefix(p, "@") {
				if x, err := expand(p, env); err == nil {
					allowed[x] = true
				}
			}
		}
	}
	var dirs, shown []string
	for _, d := range socketDirs {
		if !privateTmp || privateTmpRoot(d) == "" { // a private /tmp shows none of the host's
			dirs = append(dirs, d)
		}
	}
	if privateTmp {
		for _, b := range binds {
			if privateTmpRoot(b) != "" { // but what is bound into it from the host
				shown = append(shown, b)
				dirs = append(dirs, b)
			}
		}
	}
	hiddenByTmp := func(p string) bool { return privateTmp && privateTmpRoot(p) != "" && !paths.CoveredBy(p, shown) }
	if x := env.Vars["XDG_RUNTIME_DIR"]; x != "" {
		dirs = append(dirs, x)
	}
	seen := map[string]bool{}
	scan := takeSocketScan()
	bound, unresolved := scan.bound, scan.unresolved
	for _, p := range bound {
		if allowed[p] || seen[p] || hiddenByTmp(p) {
			continue
		}
		// Not stat'ed here (2 ms per 1000): the init stage covers only what is a socket then.
		seen[p] = true
		out = append(out, p)
	}
	list := func(dir string) {
		socks, ok := scan.dirs[dir]
		if !ok {
			socks = socketsIn(dir)
		}
		for _, p := range socks {
			if !allowed[p] && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	for _, d := range dirs {
		if real, err := filepath.EvalSymlinks(d); err == nil && real != d && slices.Contains(dirs, real) {
			continue // /var/run -> /run
		}
		list(d)
	}
	slices.Sort(out)
	return out, unresolved
}

// socketDirMin is how many sockets in one directory make compile hide the directory instead
// of each socket (one mount instead of many: ~24 µs each in the init stage), when the profile
// has no rule in, below or above it (Landlock refuses the rest of it to the command anyway).
const socketDirMin = 2

// groupSockets returns what to cover for socks: each socket, or its directory (with a trailing
// slash) when it holds
// socketDirMin or more and no rule (nor an allowed socket) is in, below or above it.
func groupSockets(socks []string, rules [][]string, allowed []string) (out, dirs []string) {
	count := map[string]int{}
	for _, s := range socks {
		count[filepath.Dir(s)]++
	}
	touched := func(d string) bool {
		for _, l := range append(rules, allowed) {
			for _, r := range l {
				if r == d || strings.HasPrefix(r, d+"/") || strings.HasPrefix(d, r+"/") || r == "/" {
					return true
				}
			}
		}
		return false
	}
	hide := map[string]bool{}
	for d, n := range count {
		if n >= socketDirMin && d != "/" && !touched(d) {
			hide[d] = true
			dirs = append(dirs, d)
		}
	}
	for _, s := range socks {
		if !hide[filepath.Dir(s)] {
			out = append(out, s)
		}
	}
	slices.Sort(dirs)
	for _, d := range dirs {
		out = append(out, d+"/") // a directory to hide whole, not a socket
	}
	return out, dirs
}

// privateTmpDirs get a fresh tmpfs each in the sandbox when the profile asks for a private /tmp
// (the same list as package sandbox).
var privateTmpDirs = []string{"/tmp", "/var/tmp", "/dev/shm"}

// privateTmpRoot returns the private tmp directory p is in (or is), or "".
func privateTmpRoot(p string) string {
	for _, d := range privateTmpDirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return d
		}
	}
	return ""
}

// createCacheDir creates a missing write rule that is exactly a tool cache root ($GOCACHE,
// $CARGO_HOME, ...: directories by definition), as the tool itself would on its first run, owned
// like its nearest existing parent. Without it a fresh $HOME widened the rule to $HOME, which
// enforce refuses. Paths below a root are not created: they may be files (cargo's lock files).
func (c *Compiled) createCacheDir(w string, env Env) bool {
	if _, err := os.Lstat(w); err == nil {
		return false
	}
	if !paths.CacheRoot(env.Vars, w) {
		return false
	}
	parent := filepath.Dir(w)
	for {
		if _, err := os.Stat(parent); err == nil || parent == "/" {
			break
		}
		parent = filepath.Dir(parent)
	}
	var st unix.Stat_t
	if err := unix.Stat(parent, &st); err != nil {
		return false
	}
	if err := os.MkdirAll(w, 0o755); err != nil {
		return false
	}
	for d := w; d != parent && d != "/"; d = filepath.Dir(d) {
		_ = os.Lchown(d, int(st.Uid), int(st.Gid))
	}
	c.Notes = append(c.Notes, fmt.Sprintf("filesystem.write: created the missing tool cache %s (owned like %s)", w, parent))
	return true
}

// dirListings keeps the directories one compile lists: the hidden globs walk the same trees
// ($WORKDIR/**/.env and $WORKDIR/**/.env.*, $HOME/.cargo and $CARGO_HOME), which in a large
// work tree costs milliseconds a walk. It lists ahead (prefetch) on a few goroutines: a walk is
// open, getdents and close per directory, syscalls that run in parallel on the host's CPUs.
// Used from one goroutine; the zero value is ready. globMatches stops the goroutines it started.
type dirListings struct {
	// scope, when set, limits what is listed to these paths: a directory above them lists
	// only the entries on the way to them (lstat'd, never read whole).
	scope   []string
	done    map[string]dirListing
	pending map[string]chan dirListing // prefetched, not yet taken
	jobs    chan prefetchJob           // nil until the first prefetch
}

type dirListing struct {
	ents []os.DirEntry // sorted by name (os.ReadDir)
	err  error
}

type prefetchJob struct {
	dir string
	out chan dirListing
}

// prefetchWorkers list directories ahead of a walk.
const prefetchWorkers = 3

// read lists dir, once.
func (d *dirListings) read(dir string) []os.DirEntry {
	if l, ok := d.done[dir]; ok {
		return l.ents
	}
	var l dirListing
	if c, ok := d.pending[dir]; ok {
		l = <-c
		delete(d.pending, dir)
	} else if d.outOfScope(dir) {
		l.ents = d.wayTo(dir)
	} else {
		l.ents, l.err = os.ReadDir(dir)
	}
	if d.done == nil {
		d.done = map[string]dirListing{}
	}
	d.done[dir] = l
	return l.ents
}

// prefetch starts listing dir, which read will likely be asked for soon.
func (d *dirListings) prefetch(dir string) {
	if _, ok := d.done[dir]; ok {
		return
	}
	if _, ok := d.pending[dir]; ok || d.outOfScope(dir) {
		return
	}
	if d.pending == nil {
		d.pending = map[string]chan dirListing{}
	}
	if d.jobs == nil {
		d.jobs = make(chan prefetchJob, 4096)
		for range prefetchWorkers {
			go func(jobs <-chan prefetchJob) {
				for j := range jobs {
					var l dirListing
					l.ents, l.err = os.ReadDir(j.dir)
					j.out <- l
				}
			}(d.jobs)
		}
	}
	out := make(chan dirListing, 1)
	select {
	case d.jobs <- prefetchJob{dir, out}:
		d.pending[dir] = out
	default: // far enough ahead: read lists it when it gets there
	}
}

// outOfScope reports whether dir lies outside a scoped listing's paths.
func (d *dirListings) outOfScope(dir string) bool {
	return d.scope != nil && !slices.ContainsFunc(d.scope, func(s string) bool { return paths.Within(dir, s) })
}

// wayTo lists, of dir (outside the scope), the entries that lead to the scope's paths below
// it, sorted by name.
func (d *dirListings) wayTo(dir string) []os.DirEntry {
	var ents []os.DirEntry
	for _, s := range d.scope {
		rel, err := filepath.Rel(dir, s)
		if err != nil || rel == "." || !paths.Within(s, dir) {
			continue
		}
		name, _, _ := strings.Cut(rel, "/")
		if slices.ContainsFunc(ents, func(e os.DirEntry) bool { return e.Name() == name }) {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			ents = append(ents, fs.FileInfoToDirEntry(fi))
		}
	}
	slices.SortFunc(ents, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents
}

// stop ends the prefetching goroutines once they have listed what is queued (read still takes
// it); a later prefetch starts them again.
func (d *dirListings) stop() {
	if d.jobs != nil {
		close(d.jobs)
		d.jobs = nil
	}
}

// listed reports how many directories were listed (or are being listed).
func (d *dirListings) listed() int { return len(d.done) + len(d.pending) }

// lacks reports whether dir was listed whole and name is not in it.
func (d *dirListings) lacks(dir, name string) bool {
	l, ok := d.done[dir]
	if !ok || l.err != nil {
		return false
	}
	_, found := slices.BinarySearchFunc(l.ents, name, func(e os.DirEntry, n string) int { return strings.Compare(e.Name(), n) })
	return !found
}

// globMatches is paths.Glob over dirs (which it stops when done).
func globMatches(pattern string, limit int, dirs *dirListings) ([]string, bool) {
	defer dirs.stop()
	return paths.Glob(pattern, limit, paths.Lister{
		Read:     dirs.read,
		Listed:   func(dir string) bool { _, ok := dirs.done[dir]; return ok },
		Lacks:    dirs.lacks,
		Prefetch: dirs.prefetch,
	})
}
