package synth

import (
	"reflect"
	"slices"
	"testing"

	"github.com/sysprof/sysprof/trace"
)

// gitApplyTrace is `git apply -R d && git apply d && git diff --stat` in a work tree, as the
// learn saw it: git reads its index and rewrites three.txt; met is whether the run met git
// diff's index refresh (measured, git 2.39: these are the observations it adds).
func gitApplyTrace(met, writesTree bool) *trace.Trace {
	const git, work = "/usr/bin/git", "/home/alice/src/p"
	tr := &trace.Trace{Version: trace.Version, Command: []string{"sh", "-c", "git apply -R d && git apply d && git diff --stat"},
		Context:   map[string]string{"HOME": "/home/alice", "WORKDIR": work, "TMPDIR": "/tmp"},
		Processes: []trace.Process{{ID: 1, PID: 10, Exe: git}},
	}
	add := func(p, access string, ok bool, errno int) {
		tr.Files = append(tr.Files, trace.FileAccess{Exe: git, Path: p, Access: access, OK: ok, Errno: errno, Count: 1})
	}
	add(work+"/.git/index", trace.AccessRead, true, 0)
	add(work+"/.git/HEAD", trace.AccessRead, true, 0)
	add(work+"/.git/objects/2b/df67abb163a4ffb2d7f3f0880c9fe5068ce782", trace.AccessRead, true, 0)
	add(work+"/d", trace.AccessRead, true, 0)
	if writesTree {
		add(work+"/three.txt", trace.AccessCreate, true, 0)
		add(work+"/three.txt", trace.AccessDelete, true, 0)
	}
	for _, c := range []string{"openat", "read", "write", "close", "fstat", "unlink", "exit_group"} {
		tr.Syscalls = append(tr.Syscalls, trace.SyscallCount{Exe: git, Arch: trace.ArchX86_64, Name: c, Count: 1})
	}
	if met {
		add(work+"/.git/index.lock", trace.AccessCreate, true, 0)
		add(work+"/.git/index.lock", trace.AccessMetadata, true, 0)
		add(work+"/.git/index.lock", trace.AccessDelete, true, 0)
		add(work+"/.git/index", trace.AccessCreate, true, 0)
		add(work+"/.git/index", trace.AccessMetadata, false, 22)
		add(work+"/.git/hooks/post-index-change", trace.AccessMetadata, false, 2)
		for _, c := range []struct {
			name string
			nr   int
		}{{"rename", 82}, {"getpid", 39}, {"readlink", 89}} {
			tr.Syscalls = append(tr.Syscalls, trace.SyscallCount{Exe: git, Arch: trace.ArchX86_64, Name: c.name, Nr: c.nr, Count: 1})
		}
	}
	return tr
}

// A git that reads the index of a work tree the run writes may refresh that index (git diff:
// index.lock renamed over index) or not, by timing: the profile is the same either way, so
// that enforce (where the staged tree makes the refresh certain) and drift hold it. Without a
// write in the tree, and learned --exact, nothing is added.
func TestGitIndexRefreshHeldMetOrNot(t *testing.T) {
	synth := func(tr *trace.Trace, exact bool) *Result {
		opts := testOpts()
		opts.Exact = exact
		res, err := Synthesize(tr, opts)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	met, unmet := synth(gitApplyTrace(true, true), false), synth(gitApplyTrace(false, true), false)
	if !reflect.DeepEqual(met.Profile.Filesystem, unmet.Profile.Filesystem) {
		t.Errorf("filesystem differs:\nmet:   %+v\nunmet: %+v", met.Profile.Filesystem, unmet.Profile.Filesystem)
	}
	if !reflect.DeepEqual(met.Profile.Syscalls, unmet.Profile.Syscalls) {
		t.Errorf("syscalls differ:\nmet:   %+v\nunmet: %+v", met.Profile.Syscalls, unmet.Profile.Syscalls)
	}
	if !writes(unmet, "$WORKDIR/.git") || !allows(unmet, "rename") {
		t.Errorf("unmet refresh: writes %v, rename %v", unmet.Profile.Filesystem.Write, allows(unmet, "rename"))
	}
	if !slices.ContainsFunc(unmet.Explain, func(s Step) bool { return s.Pass == "git-index-refresh" }) {
		t.Errorf("no explain line of git-index-refresh: %v", unmet.Explain)
	}
	for _, c := range []struct {
		name string
		res  *Result
	}{{"no write in the tree", synth(gitApplyTrace(false, false), false)}, {"exact", synth(gitApplyTrace(false, true), true)}} {
		if writes(c.res, "$WORKDIR/.git") || allows(c.res, "rename") {
			t.Errorf("%s: index refresh added: %v", c.name, c.res.Profile.Filesystem.Write)
		}
	}
}

func writes(r *Result, p string) bool {
	for _, w := range r.Profile.Filesystem.Write {
		if w.Path == p || w.Path == p+"/index" || w.Path == p+"/index.lock" {
			return true
		}
	}
	return false
}

func allows(r *Result, name string) bool {
	for _, s := range r.Profile.Syscalls.Allow {
		if s.Name == name {
			return true
		}
	}
	return false
}
