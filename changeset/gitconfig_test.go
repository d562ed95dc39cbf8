package changeset

import (
	"path/filepath"
	"strings"
	"testing"
)

const baseConfig = `[core]
	repositoryformatversion = 0
	filemode = true
	bare = false
[remote "origin"]
	url = https://example.invalid/r.git
	fetch = +refs/heads/*:refs/remotes/origin/*
[branch "main"]
	remote = origin
	merge = refs/heads/main
`

// TestGitConfigRuns: each code-running key git-config(1) names, in the spellings git accepts,
// is found when added or changed; git's ordinary writes are not.
func TestGitConfigRuns(t *testing.T) {
	code := map[string]string{
		"fsmonitor":          "[core]\n\tfsmonitor = ./payload\n",
		"fsmonitor header":   "[core] fsmonitor = ./payload\n",
		"fsmonitor case":     "[CoRe]\n\tFSMonitor=./payload\n",
		"fsmonitor dotted":   "[core.x]\n[core]\nfsmonitor = \"./pay\\\n load\" ; comment\n",
		"fsmonitor cont":     "[core]\n\tfsmonitor = ./pay\\\nload\n",
		"hooksPath":          "[core]\n\thooksPath = /tmp/h\n",
		"pager":              "[core]\n\tpager = sh -c evil\n",
		"editor":             "[core]\n\teditor = evil\n",
		"sshCommand":         "[core]\n\tsshCommand = evil\n",
		"askPass":            "[core]\n\taskPass = evil\n",
		"gitProxy":           "[core]\n\tgitProxy = evil\n",
		"alternateRefsCmd":   "[core]\n\talternateRefsCommand = evil\n",
		"sequence.editor":    "[sequence]\n\teditor = evil\n",
		"diff.external":      "[diff]\n\texternal = evil\n",
		"diff textconv":      "[diff \"bin\"]\n\ttextconv = evil\n",
		"diff command":       "[diff \"bin\"]\n\tcommand = evil\n",
		"diff dotted":        "[diff.x \"y\"]\n\ttextconv = evil\n",
		"merge driver":       "[merge \"m\"]\n\tdriver = evil %A\n",
		"filter clean":       "[filter \"lfs\"]\n\tclean = evil\n",
		"filter smudge":      "[filter \"lfs\"]\n\tsmudge = evil\n",
		"filter process":     "[filter \"lfs\"]\n\tprocess = evil\n",
		"credential.helper":  "[credential]\n\thelper = !evil\n",
		"credential url":     "[credential \"https://h\"]\n\thelper = evil\n",
		"alias bang":         "[alias]\n\tst = \"!sh -c evil\"\n",
		"alias bang spaced":  "[alias]\n\tst =   !evil\n",
		"include.path":       "[include]\n\tpath = ../x\n",
		"includeIf":          "[includeIf \"gitdir:/w/\"]\n\tpath = ../x\n",
		"gpg.program":        "[gpg]\n\tprogram = evil\n",
		"gpg ssh program":    "[gpg \"ssh\"]\n\tprogram = evil\n",
		"gpg defaultKeyCmd":  "[gpg \"ssh\"]\n\tdefaultKeyCommand = evil\n",
		"packObjectsHook":    "[uploadpack]\n\tpackObjectsHook = evil\n",
		"remote uploadpack":  "[remote \"o\"]\n\tuploadpack = evil\n",
		"remote receivepack": "[remote \"o\"]\n\treceivepack = evil\n",
		"remote ext url":     "[remote \"o\"]\n\turl = ext::sh -c evil\n",
		"url ext insteadOf":  "[url \"ext::sh -c evil\"]\n\tinsteadOf = https://\n",
		"protocol.ext.allow": "[protocol \"ext\"]\n\tallow = always\n",
		"protocol.allow":     "[protocol]\n\tallow = always\n",
		"pager.log":          "[pager]\n\tlog = evil\n",
		"web.browser":        "[web]\n\tbrowser = evil\n",
		"browser cmd":        "[browser \"x\"]\n\tcmd = evil\n",
		"man cmd":            "[man \"x\"]\n\tcmd = evil\n",
		"instaweb":           "[instaweb]\n\thttpd = evil\n",
		"difftool cmd":       "[difftool \"x\"]\n\tcmd = evil\n",
		"mergetool cmd":      "[mergetool \"x\"]\n\tcmd = evil\n",
		"sendemail":          "[sendemail]\n\tsmtpServer = /tmp/evil\n",
		"submodule update":   "[submodule \"m\"]\n\tupdate = !evil\n",
		"interactive":        "[interactive]\n\tdiffFilter = evil\n",
		"tar command":        "[tar \"tgz\"]\n\tcommand = evil\n",
		"trailer command":    "[trailer \"x\"]\n\tcommand = evil\n",
		"hook command":       "[hook \"x\"]\n\tcommand = evil\n",
		// Redirects: the user's next push goes where the run chose.
		"pushurl":       "[remote \"origin\"]\n\tpushurl = https://evil.invalid/loot.git\n",
		"second url":    "[remote \"origin\"]\n\turl = https://evil.invalid/loot.git\n",
		"pushInsteadOf": "[url \"https://evil.invalid/\"]\n\tpushInsteadOf = https://example.invalid/\n",
		"url insteadOf": "[url \"https://mirror/\"]\n\tinsteadOf = https://h/\n",
		"unparseable":   "[core\n\tfsmonitor = evil\n",
		"binary":        "[core]\x00",
	}
	for name, add := range code {
		if got := GitConfigRuns([]byte(baseConfig), []byte(baseConfig+add)); len(got) == 0 {
			t.Errorf("%s: %q not found as code-running", name, add)
		}
	}
	// git remote set-url: the remote the config had, another URL.
	if got := GitConfigRuns([]byte(baseConfig), []byte(strings.Replace(baseConfig, "example.invalid/r.git", "evil.invalid/loot.git", 1))); len(got) != 1 || !strings.Contains(got[0], "remote.origin.url") {
		t.Errorf("a changed remote URL: %v", got)
	}
	// A clone's or a new module's config names its remote: not a redirect.
	if got := GitConfigRuns(nil, []byte(baseConfig)); len(got) != 0 {
		t.Errorf("a new config with its remote: %v", got)
	}
	// Changed, not only added.
	if got := GitConfigRuns([]byte(baseConfig+"[core]\n\tpager = less\n"), []byte(baseConfig+"[core]\n\tpager = evil\n")); len(got) != 1 {
		t.Errorf("a changed core.pager: %v", got)
	}
	ordinary := map[string]string{
		"unchanged":           "",
		"remote add":          "[remote \"up\"]\n\turl = https://example.invalid/u.git\n\tfetch = +refs/heads/*:refs/remotes/up/*\n",
		"submodule init":      "[submodule \"lib\"]\n\tactive = true\n\turl = https://example.invalid/lib.git\n",
		"submodule update ck": "[submodule \"lib\"]\n\tupdate = checkout\n",
		"set-upstream":        "[branch \"dev\"]\n\tremote = origin\n\tmerge = refs/heads/dev\n",
		"user":                "[user]\n\tname = A\n\temail = a@b\n",
		"fsmonitor bool":      "[core]\n\tfsmonitor = true\n\tuntrackedCache = true\n",
		"fsmonitor bare":      "[core]\n\tfsmonitor\n",
		"pager bool":          "[pager]\n\tbranch = false\n",
		"alias plain":         "[alias]\n\tco = checkout\n",
		"http":                "[http \"https://h/\"]\n\textraHeader = X: y\n",
		"comment mention":     "# fsmonitor = evil\n[core]\n\tlogAllRefUpdates = true ; pager = evil\n",
		"quoted hash":         "[branch \"x\"]\n\tdescription = \"a # b\"\n",
	}
	for name, add := range ordinary {
		if got := GitConfigRuns([]byte(baseConfig), []byte(baseConfig+add)); len(got) != 0 {
			t.Errorf("%s: ordinary write found as code-running: %v", name, got)
		}
	}
	// Already there before the run (the user's own), or removed: nothing new.
	had := baseConfig + "[core]\n\tpager = less -R\n[alias]\n\tx = !make\n"
	if got := GitConfigRuns([]byte(had), []byte(had+"[user]\n\tname = A\n")); len(got) != 0 {
		t.Errorf("the user's own settings: %v", got)
	}
	if got := GitConfigRuns([]byte(had), []byte(baseConfig)); len(got) != 0 {
		t.Errorf("removed settings: %v", got)
	}
	// A new file (a new module's config): every code-running entry counts.
	if got := GitConfigRuns(nil, []byte("[core]\n\tfsmonitor = x\n")); len(got) != 1 || !strings.Contains(got[0], "core.fsmonitor") {
		t.Errorf("a new config: %v", got)
	}
}

func TestGitConfigParse(t *testing.T) {
	es, err := parseGitConfig([]byte("[core] Editor = \"a \\\"b\\\"\"  # c\n[Sec \"Sub\\\\x\"]\n\tk = v1  v2 \\\n\tv3\n[a.B]\nk\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`core.editor=a "b"`, `sec.Sub\x.k=v1  v2  v3`, `a.b.k=`}
	if len(es) != len(want) {
		t.Fatalf("entries %+v", es)
	}
	for i, e := range es {
		if got := e.name() + "=" + e.value; got != want[i] {
			t.Errorf("entry %d = %q, want %q", i, got, want[i])
		}
	}
}

func TestIsGitConfig(t *testing.T) {
	for p, want := range map[string]bool{
		"/w/.git/config":                       true,
		"/w/.git/config.worktree":              true,
		"/w/.git/modules/lib/config":           true,
		"/w/.git/modules/a/modules/b/config":   true,
		"/w/.git/worktrees/wt/config.worktree": true,
		"/w/x.git/config":                      true,
		"/w/.git/hooks/config":                 false,
		"/w/config":                            false,
		"/w/.git/configx":                      false,
	} {
		if IsGitConfig(p) != want {
			t.Errorf("IsGitConfig(%s) != %v", p, want)
		}
	}
}

// TestApplyGitConfigHeld: in a staged work tree whose profile writes .git whole, a config that
// gains core.fsmonitor is held dangerous, a submodule's config
// that gains a remote is applied.
func TestApplyGitConfigHeld(t *testing.T) {
	base := "[core]\n\tbare = false\n"
	r, w := newRun(t, func(w string) {
		write(t, filepath.Join(w, ".git/config"), base, 0o644)
		write(t, filepath.Join(w, ".git/modules/lib/config"), base, 0o644)
	}, []string{".git"})
	inOverlay(t, r, `printf '\tfsmonitor = "sh -c evil"\n' >> .git/config; printf '[remote "o"]\n\turl = https://example.invalid/o\n' >> .git/modules/lib/config`)
	res, err := r.Apply(ApplyLearned, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(w, ".git/config")); got != base {
		t.Errorf("the config's fsmonitor reached the host: %q", got)
	}
	if got := readFile(t, filepath.Join(w, ".git/modules/lib/config")); !strings.Contains(got, `[remote "o"]`) {
		t.Errorf("the submodule's remote did not: %q (%+v)", got, res)
	}
	c := scan(t, r)[".git/config"]
	if c.Class != Dangerous || !strings.Contains(c.Reason, "core.fsmonitor") {
		t.Errorf(".git/config = %+v, want dangerous for core.fsmonitor", c)
	}
}

func TestGitRepoFileRunsAttributes(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"/w/.git/info/attributes", true},
		{"/w/.git/modules/lib/info/attributes", true},
		{"/w/.git/info/exclude", false},
		{"/w/src/info/attributes", false},
		{"/w/.git/config", true},
	} {
		if got := IsGitConfig(tc.path); got != tc.want {
			t.Errorf("IsGitConfig(%s) = %v, want %v", tc.path, got, tc.want)
		}
	}
	// commondir: git reads the config and hooks of the directory it names; `git worktree
	// add` writes worktrees/NAME/commondir naming the git directory above.
	for _, c := range []struct {
		p, data string
		runs    bool
	}{
		{"/w/.git/commondir", "x\n", true},
		{"/w/.git/commondir", "/w/.git\n", true},
		{"/w/.git/worktrees/wt/commondir", "../..\n", false},
		{"/w/.git/worktrees/wt/commondir", "/w/.git\n", false},
		{"/w/.git/worktrees/wt/commondir", "../../x\n", true},
		{"/w/.git/modules/lib/commondir", "../..\n", true},
	} {
		if !IsGitConfig(c.p) {
			t.Errorf("IsGitConfig(%s) = false", c.p)
		}
		if got := GitRepoFileRuns(c.p, nil, []byte(c.data)); (len(got) > 0) != c.runs {
			t.Errorf("GitRepoFileRuns(%s, %q) = %v, want held %v", c.p, c.data, got, c.runs)
		}
	}
	if got := GitRepoFileRuns("/w/.git/info/attributes", nil, []byte("* filter=x\n")); len(got) != 1 {
		t.Errorf("a new info/attributes: %v, want held", got)
	}
	if got := GitRepoFileRuns("/w/.git/info/attributes", []byte("a\n"), []byte("a\n")); got != nil {
		t.Errorf("an unchanged info/attributes: %v", got)
	}
	if got := GitRepoFileRuns("/w/.git/config", nil, []byte("[remote \"o\"]\n\turl = x\n")); got != nil {
		t.Errorf("an ordinary config write: %v", got)
	}
}
