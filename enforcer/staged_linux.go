package enforcer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/phase"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/sandbox"
)

// stagedRun holds the host directories of one run's stages (see StageSpec): made before the
// init stage starts, copied back and removed once the command and its PID namespace are gone.
type stagedRun struct {
	specs []StageSpec
	tops  []string // one per spec: its upper/ and work/
}

// plan returns p with each stage's overlay layers (upper/ and work/ of its top) filled in: the
// plan the init stage receives for this run. p, and the compiled plan it shares its slices
// with, stay as they are.
func (sr *stagedRun) plan(p sandbox.Plan) sandbox.Plan {
	if sr == nil {
		return p
	}
	p.Staged = slices.Clone(p.Staged)
	for i, top := range sr.tops {
		p.Staged[i].Upper, p.Staged[i].Work = filepath.Join(top, "upper"), filepath.Join(top, "work")
	}
	return p
}

// maxStageDenials caps the discarded writes listed one by one (the rest are counted in a note).
const maxStageDenials = 64

// prepareStages makes an upper and a work directory for each stage, owned by the uid the
// command runs as (overlay writes with the mounter's credentials), on the stage's filesystem
// when a place there is writable (copy-back is then a rename). stagedRun.plan puts them into
// the run's plan.
func prepareStages(stages []StageSpec, id sandbox.Identity) (*stagedRun, error) {
	if len(stages) == 0 {
		return nil, nil
	}
	sr := &stagedRun{specs: stages}
	for _, s := range stages {
		parent := stageParent(s.Dir)
		if parent == "" {
			sr.remove()
			return nil, fmt.Errorf("stage %s: no directory for its overlay layers (writable, outside it, not on overlayfs): set TMPDIR to one, e.g. a tmpfs", s.Dir)
		}
		top, err := os.MkdirTemp(parent, stagePrefix())
		if err != nil {
			sr.remove()
			return nil, fmt.Errorf("stage %s: %w", s.Dir, err)
		}
		sr.tops = append(sr.tops, top)
		upper, work := filepath.Join(top, "upper"), filepath.Join(top, "work")
		dirs := []string{upper, work}
		for _, rel := range s.Precreate {
			dirs = append(dirs, filepath.Join(upper, rel))
		}
		for _, d := range dirs {
			if err := os.MkdirAll(d, 0o755); err != nil {
				sr.remove()
				return nil, fmt.Errorf("stage %s: %w", s.Dir, err)
			}
		}
		if os.Geteuid() == 0 && id.FileUID != 0 {
			err := filepath.WalkDir(top, func(p string, _ os.DirEntry, err error) error {
				if err != nil {
					return err
				}
				return os.Lchown(p, id.FileUID, id.FileGID)
			})
			if err != nil {
				sr.remove()
				return nil, fmt.Errorf("stage %s: chown: %w", s.Dir, err)
			}
		}
	}
	return sr, nil
}

// stagePrefix names this process's stage directories (sysprof-stage-PID-*).
func stagePrefix() string { return fmt.Sprintf("sysprof-stage-%d-", os.Getpid()) }

// stageParent picks where a stage's layers live: the first candidate that is writable, not
// inside dir (overlay refuses a layer inside another) and not itself on overlayfs (which cannot
// be an upper layer: a container's root), preferring one on dir's filesystem (copy-back is
// then a rename). "" when there is none.
func stageParent(dir string) string {
	cands := []string{os.TempDir(), "/var/tmp"}
	if h, err := os.UserCacheDir(); err == nil {
		cands = append(cands, filepath.Join(h, "sysprof", "stages"))
	}
	if r := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(r) {
		cands = append(cands, r)
	}
	cands = append(cands, "/dev/shm")
	var st unix.Stat_t
	haveDev := unix.Stat(dir, &st) == nil
	fallback := ""
	for _, c := range cands {
		if paths.Within(c, dir) {
			continue
		}
		_ = os.MkdirAll(c, 0o700)
		var cs unix.Stat_t
		var fs unix.Statfs_t
		if unix.Stat(c, &cs) != nil || unix.Access(c, unix.W_OK) != nil || unix.Statfs(c, &fs) != nil || fs.Type == unix.OVERLAYFS_SUPER_MAGIC {
			continue
		}
		if haveDev && cs.Dev == st.Dev {
			return c
		}
		if fallback == "" {
			fallback = c
		}
	}
	return fallback
}

func (sr *stagedRun) remove() {
	if sr == nil {
		return
	}
	for _, top := range sr.tops {
		// overlay leaves directories with mode 0 in work/ (work/work, work/incompat/volatile):
		// an ordinary user can remove them only once they are readable again.
		chmodDirs(filepath.Join(top, "work"))
		_ = os.RemoveAll(top)
	}
}

// finish copies back what each stage's rules cover, reports the rest, and removes the layers.
func (sr *stagedRun) finish(p *policy.Profile, env Env) (denials []report.Denial, notes []string) {
	if sr == nil {
		return nil, nil
	}
	defer func() { sr.remove(); phase.Mark("stage remove") }()
	for i, s := range sr.specs {
		cb := copyBack{spec: s, upper: filepath.Join(sr.tops[i], "upper"), profile: p, env: env}
		cb.prune()
		phase.Mark("stage prune")
		cb.walk("")
		phase.Mark("stage walk")
		denials = append(denials, cb.denials...)
		if cb.more > 0 {
			notes = append(notes, fmt.Sprintf("staged %s: %d more discarded writes not listed", s.Dir, cb.more))
		}
		if cb.kept > 0 {
			notes = append(notes, fmt.Sprintf("staged %s: %d learned output(s) copied back", s.Dir, cb.kept))
		}
		notes = append(notes, cb.errs...)
	}
	return denials, notes
}

type copyBack struct {
	spec    StageSpec
	upper   string
	profile *policy.Profile
	env     Env

	denials []report.Denial
	more    int
	kept    int
	errs    []string
}

// prune removes the directories made for exec rules (Precreate) that stayed empty.
func (cb *copyBack) prune() {
	pre := slices.Clone(cb.spec.Precreate)
	slices.SortFunc(pre, func(a, b string) int { return len(b) - len(a) })
	for _, rel := range pre {
		for d := filepath.Join(cb.upper, rel); d != cb.upper && paths.Within(d, cb.upper); d = filepath.Dir(d) {
			if os.Remove(d) != nil {
				break
			}
		}
	}
}

// keeps reports whether host path h is a learned output: covered by a Keep rule that, when h
// lies in a protected path, lies itself in that protected path.
func (cb *copyBack) keeps(h string) bool {
	for _, k := range cb.spec.Keep {
		if !paths.Covers(k, h) {
			continue
		}
		// Inside a protected path only a rule at or below it counts.
		ok := true
		for _, q := range cb.spec.Protected {
			if paths.Within(h, q) && !paths.Within(staticPrefix(k), q) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// leadsToKeep reports whether a Keep rule could name something strictly below host directory
// h: h matches the rule's leading components and the rule goes deeper (or has a `**`).
func (cb *copyBack) leadsToKeep(h string) bool {
	hc := strings.Split(strings.Trim(h, "/"), "/")
	for _, k := range cb.spec.Keep {
		kc := strings.Split(strings.Trim(k, "/"), "/")
		ok := len(kc) > len(hc)
		for i := range hc {
			if i < len(kc) && kc[i] == "**" {
				ok = true
				break
			}
			if i >= len(kc) || !paths.MatchComponent(kc[i], hc[i]) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func (cb *copyBack) walk(rel string) {
	ents, err := os.ReadDir(filepath.Join(cb.upper, rel))
	if err != nil {
		cb.errs = append(cb.errs, fmt.Sprintf("staged %s: read %s: %v", cb.spec.Dir, rel, err))
		return
	}
	for _, e := range ents {
		r := filepath.Join(rel, e.Name())
		up, host := filepath.Join(cb.upper, r), filepath.Join(cb.spec.Dir, r)
		var st unix.Stat_t
		if err := unix.Lstat(up, &st); err != nil {
			continue
		}
		hostFI, hostErr := os.Lstat(host)
		hostDir := hostErr == nil && hostFI.IsDir()
		kept := cb.keeps(host)
		switch {
		case st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0: // a whiteout: deleted inside
			if hostErr != nil {
				continue
			}
			if kept {
				cb.apply(host, os.RemoveAll(host))
			} else {
				cb.deny(host, "delete", 1)
			}
		case st.Mode&unix.S_IFMT == unix.S_IFDIR:
			opaque := isOpaque(up)
			switch {
			case kept && (!hostDir || opaque):
				if hostErr == nil {
					if err := os.RemoveAll(host); err != nil {
						cb.apply(host, err)
						continue
					}
				}
				cb.apply(host, install(up, host))
			case hostDir && !opaque:
				cb.walk(r)
			case cb.leadsToKeep(host):
				if hostErr == nil && !hostDir {
					cb.deny(host, "write", 1) // a file or link where a rule's directory leads
					continue
				}
				if err := mkdirLike(up, host); err != nil {
					cb.apply(host, err)
					continue
				}
				cb.walk(r)
			default:
				cb.deny(host, "create", countFiles(up))
			}
		default:
			if !kept {
				cb.deny(host, map[bool]string{true: "write", false: "create"}[hostErr == nil], 1)
				continue
			}
			if hostDir {
				if err := os.RemoveAll(host); err != nil {
					cb.apply(host, err)
					continue
				}
			}
			cb.apply(host, install(up, host))
		}
	}
}

func (cb *copyBack) apply(host string, err error) {
	if err != nil {
		cb.errs = append(cb.errs, fmt.Sprintf("staged %s: could not copy back %s: %v", cb.spec.Dir, host, err))
		return
	}
	cb.kept++
}

func (cb *copyBack) deny(host, access string, count int) {
	if len(cb.denials) >= maxStageDenials {
		cb.more += count
		return
	}
	portable := paths.Portable(host, cb.env.Vars)
	d := report.Denial{Kind: report.KindFile, Path: host, Access: access, Count: count, First: time.Now().UTC(),
		Exe: "(staged)", What: fmt.Sprintf("%s %s (not a learned output of the staged %s: discarded)", host, access, cb.spec.Dir)}
	g := policy.Grant{Section: policy.SectionWrite, Item: portable}
	d.Change, d.Suggest = &g, g.String()
	d.Risk = fileRisk(cb.profile, "write", portable)
	cb.denials = append(cb.denials, d)
}

// isOpaque reports overlay's opaque mark (the directory replaced what the lower layer had).
func isOpaque(dir string) bool {
	buf := make([]byte, 4)
	n, err := unix.Lgetxattr(dir, "user.overlay.opaque", buf)
	return err == nil && n > 0 && buf[0] == 'y'
}

func mkdirLike(up, host string) error {
	var st unix.Stat_t
	if err := unix.Lstat(up, &st); err != nil {
		return err
	}
	if err := os.Mkdir(host, os.FileMode(st.Mode&0o7777)); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if os.Geteuid() == 0 {
		_ = os.Lchown(host, int(st.Uid), int(st.Gid))
	}
	return nil
}

func countFiles(dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return max(n, 1)
}

// install moves up to host: a rename when both are on one filesystem, else a copy that keeps
// mode, owner and times (make's next run compares them).
func install(up, host string) error {
	err := os.Rename(up, host)
	if err == nil || !errors.Is(err, unix.EXDEV) {
		return err
	}
	return copyTree(up, host)
}

func copyTree(src, dst string) error {
	var st unix.Stat_t
	if err := unix.Lstat(src, &st); err != nil {
		return err
	}
	tmp := dst + ".sysprof-copy"
	_ = os.RemoveAll(tmp)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		if err := os.Symlink(target, tmp); err != nil {
			return err
		}
	case unix.S_IFDIR:
		if err := os.Mkdir(tmp, os.FileMode(st.Mode&0o7777)); err != nil {
			return err
		}
		ents, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := copyTree(filepath.Join(src, e.Name()), filepath.Join(tmp, e.Name())); err != nil {
				return err
			}
		}
	case unix.S_IFREG:
		in, err := os.Open(src)
		if err != nil {
			return err
		}
		out, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, os.FileMode(st.Mode&0o7777))
		if err != nil {
			in.Close()
			return err
		}
		_, err = io.Copy(out, in)
		in.Close()
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		_ = os.Chmod(tmp, os.FileMode(st.Mode&0o7777))
	default:
		return fmt.Errorf("%s: not a file, directory or symlink", src)
	}
	if os.Geteuid() == 0 {
		_ = os.Lchown(tmp, int(st.Uid), int(st.Gid))
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		_ = os.Chtimes(tmp, time.Unix(st.Atim.Unix()), time.Unix(st.Mtim.Unix()))
	}
	return os.Rename(tmp, dst)
}

func chmodDirs(dir string) {
	if os.Chmod(dir, 0o700) != nil {
		return
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			chmodDirs(filepath.Join(dir, e.Name()))
		}
	}
}
