package changeset

import (
	"strings"
	"testing"

	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
)

// rules of a work tree /w staged whole, with a learned output directory /w/build and a
// learned .git/index (a rule below the protected .git).
var testRules = Rules{
	Dir:       "/w",
	Tree:      "/w",
	Keep:      []string{"/w/build/**", "/w/out.txt", "/w/.git/index", "/w/venv/**", "/w/**/*.o"},
	Protected: []string{"/w/.git", "/w/.github", "/w/.sysprof"},
	ExecOK:    []string{"/w/build", "/w/venv/bin"},
	Vars:      map[string]string{"WORKDIR": "/w", "HOME": "/home/u"},
}

// gitWhole: a work tree whose .git a rule names whole.
var gitWhole = Rules{Dir: "/w", Tree: "/w", Keep: []string{"/w/.git"}, Protected: []string{"/w/.git", "/w/.git/hooks"}, Vars: testRules.Vars}

func TestClassify(t *testing.T) {
	file := func(op Op, p string, mode uint32) Change {
		return Change{Path: p, Op: op, Type: TypeFile, Mode: mode}
	}
	link := func(p, target string) Change {
		return Change{Path: p, Op: OpSymlink, Type: TypeSymlink, Mode: 0o777, Target: target}
	}
	for _, c := range []struct {
		name  string
		c     Change
		r     Rules
		want  Class
		grant bool // a Grant is suggested
	}{
		// dropped: a bytecode cache, whatever a rule says; a delete of one is ordinary.
		{"bytecode cache under a rule", file(OpCreate, "/w/build/__pycache__/a.cpython-311.pyc", 0o644), testRules, Dropped, false},
		{"bytecode cache in the tree", file(OpModify, "/w/__pycache__/a.cpython-311.pyc", 0o644), testRules, Dropped, false},
		{"bytecode cache directory", Change{Path: "/w/pkg/__pycache__", Op: OpMkdir, Type: TypeDir, Mode: 0o755}, testRules, Dropped, false},
		{"bytecode cache deleted", file(OpDelete, "/w/build/__pycache__/a.cpython-311.pyc", 0), testRules, Learned, false},
		{"set-id bytecode stays dangerous", file(OpCreate, "/w/__pycache__/a.cpython-311.pyc", 0o4755), testRules, Dangerous, false},
		// learned: a rule covers it.
		{"learned output", file(OpCreate, "/w/build/a.o", 0o644), testRules, Learned, false},
		{"learned exact file", file(OpModify, "/w/out.txt", 0o644), testRules, Learned, false},
		{"learned glob", file(OpCreate, "/w/src/x.o", 0o644), testRules, Learned, false},
		{"learned binary in an output dir", file(OpCreate, "/w/build/app", 0o755), testRules, Learned, false},
		{"learned delete", Change{Path: "/w/build/old.o", Op: OpDelete, Type: TypeFile, Mode: 0o644, HostExists: true}, testRules, Learned, false},
		{"learned mkdir", Change{Path: "/w/build/sub", Op: OpMkdir, Type: TypeDir, Mode: 0o755}, testRules, Learned, false},
		{"rule below a protected path", file(OpModify, "/w/.git/index", 0o644), testRules, Learned, false},
		{"in-tree symlink", link("/w/build/latest", "app-1.2"), testRules, Learned, false},
		{"in-tree hard link", Change{Path: "/w/build/b", Op: OpHardlink, Type: TypeFile, Mode: 0o644, Target: "/w/build/a", Links: 2}, testRules, Learned, false},
		{"modified executable that was one", Change{Path: "/w/tool.sh", Op: OpModify, Type: TypeFile, Mode: 0o755, HostExists: true, HostMode: 0o755}, testRules, Held, true},

		// held: ordinary, not learned.
		{"new file (git rebase)", file(OpCreate, "/w/newfile.txt", 0o644), testRules, Held, true},
		{"modified source", Change{Path: "/w/src/main.c", Op: OpModify, Type: TypeFile, Mode: 0o644, HostExists: true, HostMode: 0o644}, testRules, Held, true},
		{"deleted source", Change{Path: "/w/src/old.c", Op: OpDelete, Type: TypeFile, Mode: 0o644, HostExists: true}, testRules, Held, true},
		{"mode change", Change{Path: "/w/README", Op: OpMode, Type: TypeFile, Mode: 0o600, HostExists: true, HostMode: 0o644}, testRules, Held, true},
		{"new directory", Change{Path: "/w/builddir", Op: OpMkdir, Type: TypeDir, Mode: 0o755}, testRules, Held, true},
		{"unreadable directory", Change{Path: "/w/build/locked", Op: OpMkdir, Type: TypeDir, Mode: 0, Unreadable: "permission denied"}, testRules, Held, true},
		{"removed directory", Change{Path: "/w/tmp", Op: OpRmdir, Type: TypeDir, Mode: 0o755, HostExists: true}, testRules, Held, true},

		// dangerous: whatever a rule says.
		{"git hook", file(OpCreate, "/w/.git/hooks/pre-commit", 0o644), testRules, Dangerous, true},
		{"git config under the work tree's rule", file(OpModify, "/w/.git/config", 0o644), Rules{Dir: "/w", Tree: "/w", Keep: []string{"/w/**"}, Protected: testRules.Protected, Vars: testRules.Vars}, Dangerous, true},
		{"git hook inside a .git named whole", file(OpCreate, "/w/.git/hooks/pre-push", 0o755), Rules{Dir: "/w", Tree: "/w", Keep: []string{"/w/.git"}, Protected: []string{"/w/.git", "/w/.git/hooks"}, Vars: testRules.Vars}, Dangerous, true},
		// git init's sample hooks run nothing: a .git rule carries them (and the directory).
		{"git init's sample hook", file(OpCreate, "/w/.git/hooks/pre-push.sample", 0o755), Rules{Dir: "/w", Tree: "/w", Keep: []string{"/w/.git"}, Protected: []string{"/w/.git", "/w/.git/hooks"}, Vars: testRules.Vars}, Learned, false},
		{"git init's hooks directory", Change{Path: "/w/.git/hooks", Op: OpMkdir, Type: TypeDir, Mode: 0o755}, Rules{Dir: "/w", Tree: "/w", Keep: []string{"/w/.git"}, Protected: []string{"/w/.git", "/w/.git/hooks"}, Vars: testRules.Vars}, Learned, false},
		{"a sample hook no rule names", file(OpCreate, "/w/.git/hooks/pre-push.sample", 0o755), Rules{Dir: "/w", Tree: "/w", Keep: []string{"/w/build"}, Protected: []string{"/w/.git", "/w/.git/hooks"}, Vars: testRules.Vars}, Held, true},
		{"workflow", file(OpCreate, "/w/.github/workflows/ci.yml", 0o644), testRules, Dangerous, true},
		{"profile", file(OpModify, "/w/.sysprof/make.yaml", 0o644), testRules, Dangerous, true},
		{"protected from the one list, not in Rules.Protected", file(OpModify, "/home/u/.bashrc", 0o644), Rules{Dir: "/home/u", Tree: "/home/u", Keep: []string{"/home/u/**"}, Vars: testRules.Vars}, Dangerous, true},
		{"sysprof's run state under a learned state rule", file(OpModify, "/home/u/.local/state/sysprof/runs/r1/manifest.json", 0o644), Rules{Dir: "/home/u/.local/state", Tree: "/home/u/.local/state", Keep: []string{"/home/u/.local/state/**"}, Vars: testRules.Vars}, Dangerous, true},
		{"pre-commit config", file(OpCreate, "/w/.pre-commit-config.yaml", 0o644), testRules, Dangerous, true},
		{".pth in a learned site-packages", file(OpCreate, "/w/venv/lib/python3.12/site-packages/evil.pth", 0o644), testRules, Dangerous, true},
		{".pth in the home site-packages", file(OpCreate, "/home/u/.local/lib/python3.12/site-packages/x.pth", 0o644), Rules{Dir: "/home/u/.local/lib", Tree: "/home/u", Keep: []string{"/home/u/.local/lib/**"}, Vars: testRules.Vars}, Dangerous, true},
		{"sitecustomize.py", file(OpCreate, "/w/venv/lib/python3.12/site-packages/sitecustomize.py", 0o644), testRules, Dangerous, true},
		{"usercustomize.py", file(OpCreate, "/w/build/usercustomize.py", 0o644), testRules, Dangerous, true},
		{"symlink out of the tree", link("/w/build/out", "/home/u/.bashrc"), testRules, Dangerous, false},
		{"relative symlink out of the tree", link("/w/build/out", "../../etc/passwd"), testRules, Dangerous, false},
		{"symlink to a protected path", link("/w/build/hook", "../.git/hooks/pre-commit"), testRules, Dangerous, false},
		{"hard link to a protected path", Change{Path: "/w/build/h", Op: OpHardlink, Type: TypeFile, Mode: 0o644, Target: "/w/.git/config", Links: 2}, testRules, Dangerous, false},
		{"hard link with names outside", Change{Path: "/w/build/h", Op: OpCreate, Type: TypeFile, Mode: 0o644, Links: 2, LinksOutside: 1}, testRules, Dangerous, false},
		{"fifo", Change{Path: "/w/build/p", Op: OpSpecial, Type: TypeFIFO, Mode: 0o644}, testRules, Dangerous, false},
		{"socket", Change{Path: "/w/build/s", Op: OpSpecial, Type: TypeSocket, Mode: 0o755}, testRules, Dangerous, false},
		{"char device", Change{Path: "/w/build/c", Op: OpSpecial, Type: TypeChar, Mode: 0o666}, testRules, Dangerous, false},
		{"block device", Change{Path: "/w/build/b", Op: OpSpecial, Type: TypeBlock, Mode: 0o660}, testRules, Dangerous, false},
		{"setuid in a learned output", file(OpCreate, "/w/build/su", 0o4755), testRules, Dangerous, false},
		{"setgid", file(OpModify, "/w/build/sg", 0o2755), testRules, Dangerous, false},
		{"setuid by mode change", Change{Path: "/w/build/app", Op: OpMode, Type: TypeFile, Mode: 0o4755, HostExists: true, HostMode: 0o755}, testRules, Dangerous, false},
		{"file capabilities", Change{Path: "/w/build/cap", Op: OpCreate, Type: TypeFile, Mode: 0o755, Caps: true}, testRules, Dangerous, false},
		{"new executable outside the outputs", file(OpCreate, "/w/src/x.o", 0o755), testRules, Dangerous, false},
		{"removing a directory holding a protected path", Change{Path: "/home/u/.config", Op: OpRmdir, Type: TypeDir, Mode: 0o755, HostExists: true}, Rules{Dir: "/home/u", Tree: "/home/u", Keep: []string{"/home/u/**"}, Vars: testRules.Vars}, Dangerous, true},
		// A .git written whole (a learned git commit): git's config files judged by content;
		// one replaced by another type git would read through (issue 23).
		{"git config replaced by an in-tree symlink", link("/w/.git/config", "../evil.cfg"), gitWhole, Dangerous, false},
		{"git info/ replaced by a symlink", link("/w/.git/info", "../evilinfo"), gitWhole, Dangerous, false},
		{"a module's git dir replaced by a symlink", link("/w/.git/modules/lib", "../../x"), gitWhole, Dangerous, false},
		{"git config replaced by a directory", Change{Path: "/w/.git/config", Op: OpMkdir, Type: TypeDir, Mode: 0o755, HostExists: true}, gitWhole, Dangerous, false},
		{"a module's git directory made (submodule update)", Change{Path: "/w/.git/modules/lib", Op: OpMkdir, Type: TypeDir, Mode: 0o755}, gitWhole, Learned, false},
		{"a submodule's hook in a .git written whole", file(OpCreate, "/w/.git/modules/lib/hooks/post-checkout", 0o755), gitWhole, Dangerous, true},
		{"a submodule's config in a .git written whole (submodule update)", file(OpCreate, "/w/.git/modules/lib/config", 0o644), gitWhole, Learned, false},
		{"an ordinary symlink in .git", link("/w/.git/refs/x", "../../y"), gitWhole, Learned, false},
		{"removing the work tree's .git", Change{Path: "/w/.git", Op: OpRmdir, Type: TypeDir, Mode: 0o755, HostExists: true}, testRules, Dangerous, true},
		{"removing a directory holding r.Protected", Change{Path: "/w/sub", Op: OpRmdir, Type: TypeDir, Mode: 0o755, HostExists: true}, Rules{Dir: "/w", Tree: "/w", Keep: []string{"/w/**"}, Protected: []string{"/w/sub/.git"}, Vars: testRules.Vars}, Dangerous, true},
		{"made executable outside the outputs", Change{Path: "/w/run.sh", Op: OpMode, Type: TypeFile, Mode: 0o755, HostExists: true, HostMode: 0o644}, testRules, Dangerous, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Classify(c.c, c.r)
			if got.Class != c.want {
				t.Fatalf("Classify(%+v) = %s (%s), want %s", c.c, got.Class, got.Reason, c.want)
			}
			if got.Reason == "" {
				t.Errorf("no reason")
			}
			switch got.Class {
			case Dangerous:
				if got.Risk != policy.RiskCritical {
					t.Errorf("dangerous rated %s, want critical", got.Risk)
				}
			case Learned:
				if got.Risk != policy.RiskNone || got.Grant != nil {
					t.Errorf("learned has risk %s, grant %v", got.Risk, got.Grant)
				}
			case Held:
				if got.Risk == policy.RiskNone {
					t.Errorf("held rated none")
				}
			}
			if (got.Grant != nil) != c.grant {
				t.Fatalf("grant %v, want one: %v", got.Grant, c.grant)
			}
			if got.Grant != nil {
				if got.Grant.Section != policy.SectionWrite {
					t.Errorf("grant %v is not a write rule", got.Grant)
				}
				if r, _ := policy.GrantRisk(nil, *got.Grant); got.Class == Held && r != got.Risk {
					t.Errorf("risk %s is not the policy's rating %s of %v", got.Risk, r, got.Grant)
				}
			}
		})
	}
}

// TestClassifyPortableGrant: a held change suggests the portable write rule.
// TestClassifyAppendOnlyCache: in a tool cache whose entries later builds use unchecked
// (paths.AppendOnlyCaches), a new entry is learned and a change to one the host has is
// dangerous, whatever the learned rule covering the cache says (issue 23).
func TestClassifyAppendOnlyCache(t *testing.T) {
	r := Rules{Dir: "/h/.cargo", Tree: "/h/.cargo", Keep: []string{"/h/.cargo/registry", "/h/.npm"},
		Vars: map[string]string{"HOME": "/h", "CARGO_HOME": "/h/.cargo", "NPM_CACHE": "/h/.npm"}}
	src := "/h/.cargo/registry/src/index-1"
	for _, c := range []struct {
		name string
		c    Change
		want Class
	}{
		{"new entry", Change{Path: src + "/dep-1.0.0", Op: OpMkdir, Type: TypeDir, Mode: 0o755, HostParent: true}, Learned},
		{"file of a new entry", Change{Path: src + "/dep-1.0.0/src/lib.rs", Op: OpCreate, Type: TypeFile, Mode: 0o644}, Learned},
		{"new registry directory", Change{Path: src, Op: OpMkdir, Type: TypeDir, Mode: 0o755}, Learned},
		{"entry removed whole", Change{Path: src + "/old-0.1.0", Op: OpRmdir, Type: TypeDir, Mode: 0o755, HostExists: true, HostParent: true}, Learned},
		{"index cache rewritten", Change{Path: "/h/.cargo/registry/index/i/.cache/de/p/dep", Op: OpModify, Type: TypeFile, Mode: 0o644, HostExists: true, HostParent: true}, Learned},
		{"source rewritten", Change{Path: src + "/dep-1.0.0/src/lib.rs", Op: OpModify, Type: TypeFile, Mode: 0o644, HostExists: true, HostParent: true}, Dangerous},
		{"build.rs added to an entry", Change{Path: src + "/dep-1.0.0/build.rs", Op: OpCreate, Type: TypeFile, Mode: 0o644, HostParent: true}, Dangerous},
		{"file removed from an entry", Change{Path: src + "/dep-1.0.0/src/a.rs", Op: OpDelete, Type: TypeFile, Mode: 0o644, HostExists: true, HostParent: true}, Dangerous},
		{"entry replaced", Change{Path: src + "/dep-1.0.0", Op: OpMkdir, Type: TypeDir, Mode: 0o755, HostExists: true, HostParent: true}, Dangerous},
		{"entry mode", Change{Path: src + "/dep-1.0.0/src/lib.rs", Op: OpMode, Type: TypeFile, Mode: 0o666, HostExists: true, HostParent: true}, Dangerous},
		{"npx package rewritten", Change{Path: "/h/.npm/_npx/abc/node_modules/x/cli.js", Op: OpModify, Type: TypeFile, Mode: 0o644, HostExists: true, HostParent: true}, Dangerous},
		{"npx's lock file rewritten", Change{Path: "/h/.npm/_npx/abc/node_modules/.package-lock.json", Op: OpModify, Type: TypeFile, Mode: 0o644, HostExists: true, HostParent: true}, Learned},
		{"npx's lock file a symlink", Change{Path: "/h/.npm/_npx/abc/package-lock.json", Op: OpSymlink, Type: TypeSymlink, Mode: 0o777, Target: "x", HostExists: true, HostParent: true}, Dangerous},
		{"new npx package", Change{Path: "/h/.npm/_npx/def/node_modules/x/cli.js", Op: OpCreate, Type: TypeFile, Mode: 0o644}, Learned},
	} {
		got := Classify(c.c, r)
		if got.Class != c.want {
			t.Errorf("%s: %s (%s), want %s", c.name, got.Class, got.Reason, c.want)
		}
	}
}

func TestClassifyPortableGrant(t *testing.T) {
	got := Classify(Change{Path: "/w/newfile.txt", Op: OpCreate, Type: TypeFile, Mode: 0o644}, testRules)
	if got.Grant == nil || got.Grant.String() != "filesystem.write: + $WORKDIR/newfile.txt" {
		t.Fatalf("grant %v, want filesystem.write: + $WORKDIR/newfile.txt", got.Grant)
	}
}

// A held new directory is learned when it holds a learned change (the parents a tool makes on
// its way to a learned path), the directory only; one holding only held changes stays held.
func TestLearnParents(t *testing.T) {
	r := Rules{Dir: "/h", Tree: "/h", Keep: []string{"/h/.config/go/telemetry/*"}, Vars: map[string]string{"HOME": "/h"}}
	mk := func(p string) Change { return Change{Path: p, Op: OpMkdir, Type: TypeDir, Mode: 0o755} }
	cs := []Change{mk("/h/.config"), mk("/h/.config/go"), mk("/h/.config/go/telemetry"),
		{Path: "/h/.config/go/telemetry/mode", Op: OpCreate, Type: TypeFile, Mode: 0o644},
		mk("/h/build"), {Path: "/h/build/x", Op: OpCreate, Type: TypeFile, Mode: 0o644}}
	for i := range cs {
		cs[i] = Classify(cs[i], r)
	}
	got := map[string]Class{}
	for _, c := range LearnParents(cs) {
		got[c.Path] = c.Class
	}
	want := map[string]Class{"/h/.config": Learned, "/h/.config/go": Learned, "/h/.config/go/telemetry": Learned,
		"/h/.config/go/telemetry/mode": Learned, "/h/build": Held, "/h/build/x": Held}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: %s, want %s", p, got[p], w)
		}
	}
}

// A name the command chose is quoted exactly in the suggested rule: a file named `*` under
// .git/hooks is a rule for that one file, never for every hook.
func TestClassifyGrantQuotesNames(t *testing.T) {
	r := Rules{Dir: "/w", Tree: "/w", Protected: []string{"/w/.git"}, Vars: map[string]string{"WORKDIR": "/w"}}
	for _, name := range []string{"/w/.git/hooks/*", "/w/out/[x]?"} {
		c := Classify(Change{Path: name, Op: OpCreate, Type: TypeFile, Mode: 0o644}, r)
		if c.Grant == nil {
			t.Fatalf("%s: no suggested rule: %+v", name, c)
		}
		other := strings.Replace(name, "*", "pre-commit", 1)
		other = strings.Replace(other, "[x]?", "xy", 1)
		if paths.Covers(c.Grant.Item, strings.Replace(other, "/w", "$WORKDIR", 1)) {
			t.Errorf("the rule %q for %s covers %s", c.Grant.Item, name, other)
		}
		if !paths.Covers(c.Grant.Item, strings.Replace(paths.Literal(name), "/w", "$WORKDIR", 1)) {
			t.Errorf("the rule %q does not cover %s itself", c.Grant.Item, name)
		}
	}
}

// A venv's interpreter link points into the system's programs: ordinary (learned under a rule),
// while a link to a file in $HOME or /etc stays dangerous.
func TestClassifySystemCodeLinks(t *testing.T) {
	r := Rules{Dir: "/w", Tree: "/w", Keep: []string{"/w/venv/**"}, Vars: map[string]string{"WORKDIR": "/w", "HOME": "/home/u"}}
	for _, tc := range []struct {
		target string
		want   Class
	}{
		{"/usr/bin/python3", Learned},
		{"python3", Learned},
		{"/home/u/.bashrc", Dangerous},
		{"/etc/passwd", Dangerous},
		{"/usr/../home/u/.bashrc", Dangerous},
	} {
		c := Classify(Change{Path: "/w/venv/bin/python", Op: OpSymlink, Type: TypeSymlink, Target: tc.target}, r)
		if c.Class != tc.want {
			t.Errorf("venv/bin/python -> %s: %s (%s), want %s", tc.target, c.Class, c.Reason, tc.want)
		}
	}
}
