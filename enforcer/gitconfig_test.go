package enforcer

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/profilecache"
	"github.com/sysprof/sysprof/policy"
)

func TestMaskGitConfig(t *testing.T) {
	in := `[core]
	repositoryformatversion = 0
	bare = false
[remote "origin"]
	url = https://x-access-token:ghs_abcdefabcdef@github.example/o/r.git
	fetch = +refs/heads/*:refs/remotes/origin/*
[remote "mirror"]
	url = ssh://git@git.example/o/r.git
	pushurl = https://ghp_0123456789abcdef0123@git.example/o/r.git
[http "https://github.example/"]
	extraheader = AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzX3NlY3JldA==
[HTTP]
	extraHeader = "X-Token: abc" \
		continued-secret
	sslVerify = true
[credential]
	helper = "!f() { echo password=hunter2; }; f"
	username = alice
[credential "https://git.example"] helper = store
[url "https://user:pw@mirror.example/"]
	insteadOf = https://github.example/
[http]
	proxy = http://proxyuser:proxypass@proxy.example:3128
[branch "main"]
	remote = origin
`
	out, removed := maskGitConfig([]byte(in))
	got := string(out)
	for _, secret := range []string{"ghs_abcdef", "ghp_0123", "AUTHORIZATION", "X-Token", "continued-secret", "hunter2", "helper", "user:pw", "proxypass"} {
		if strings.Contains(got, secret) {
			t.Errorf("masked config still holds %q:\n%s", secret, got)
		}
	}
	for _, keep := range []string{
		"[core]\n\trepositoryformatversion = 0\n\tbare = false\n",
		"\turl = https://github.example/o/r.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
		"url = ssh://git@git.example/o/r.git", "pushurl = https://git.example/o/r.git",
		"[http \"https://github.example/\"]\n[HTTP]\n\tsslVerify = true\n",
		"\tusername = alice\n", "[credential \"https://git.example\"]",
		"[url \"https://mirror.example/\"]\n\tinsteadOf = https://github.example/\n",
		"proxy = http://proxy.example:3128", "[branch \"main\"]\n\tremote = origin\n",
	} {
		if !strings.Contains(got, keep) {
			t.Errorf("masked config lost %q:\n%s", keep, got)
		}
	}
	if len(removed) != 8 {
		t.Errorf("removed %d entries, want 8: %q", len(removed), removed)
	}
	plain := "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = git@git.example:o/r.git\n"
	if out, removed := maskGitConfig([]byte(plain)); string(out) != plain || len(removed) != 0 {
		t.Errorf("a config without credentials changed: %q %q", out, removed)
	}
}

// Compile masks the work tree's git config when it holds credentials, and gives Landlock the
// hidden names (existing ones and named ones that do not exist yet) and the masked file.
func TestCompileMasksGitConfigAndHidesNames(t *testing.T) {
	old := binHashCache
	binHashCache = func() string { return "" } // sysprof's own state is not what this test is about
	defer func() { binHashCache = old }()
	work := t.TempDir()
	os.MkdirAll(filepath.Join(work, ".git"), 0o755)
	cfg := filepath.Join(work, ".git", "config")
	os.WriteFile(cfg, []byte("[core]\n\tbare = false\n[http \"https://git.invalid/\"]\n\textraheader = AUTHORIZATION: basic c2VjcmV0\n"), 0o644)
	os.WriteFile(filepath.Join(work, ".env"), nil, 0o600)
	p := testProfile()
	p.Filesystem.Read = []policy.PathRule{{Path: "$WORKDIR"}}
	p.Filesystem.Hidden = []policy.PathRule{{Path: "$WORKDIR/.env"}, {Path: "$WORKDIR/.npmrc"}, {Path: "$WORKDIR/**/.env.*"}}
	c, err := Compile(p, Env{Vars: map[string]string{"WORKDIR": work, "TMPDIR": "/tmp"}, Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Plan.Masked) != 1 || c.Plan.Masked[0].Path != cfg || strings.Contains(string(c.Plan.Masked[0].Content), "extraheader") ||
		!strings.Contains(string(c.Plan.Masked[0].Content), "[core]") {
		t.Errorf("masked: %+v", c.Plan.Masked)
	}
	// The project credential stores the profile does not list are hidden too: every profile
	// hides them (withBase).
	want := []string{filepath.Join(work, ".env"), filepath.Join(work, ".netrc"), filepath.Join(work, ".npmrc"),
		filepath.Join(work, ".pypirc"), filepath.Join(work, ".yarnrc.yml"), cfg}
	// (and where this host keeps changesets and parsed profiles, sysprof's own: see TestMain,
	// changesetDirs and TestProfileIsProtected)
	got := slices.DeleteFunc(slices.Clone(c.Plan.Landlock.Hidden), func(h string) bool {
		return slices.Contains(changesetDirs(), h) || h == profilecache.Dir()
	})
	if !slices.Equal(got, want) {
		t.Errorf("landlock hidden %q, want %q", got, want)
	}
	// Without credentials nothing is masked.
	os.WriteFile(cfg, []byte("[core]\n\tbare = false\n"), 0o644)
	if c, _ := Compile(p, Env{Vars: map[string]string{"WORKDIR": work, "TMPDIR": "/tmp"}, Arch: "x86_64"}); len(c.Plan.Masked) != 0 {
		t.Errorf("a config without credentials was masked: %+v", c.Plan.Masked)
	}
}

// Compile masks every git config file a repository's git reads, not only .git/config: the
// submodules' (nested ones and names with slashes too), the other worktrees'
// config.worktree, and the files include.path and includeIf.*.path name, relative or in ~.
func TestCompileMasksSubmoduleAndIncludedGitConfigs(t *testing.T) {
	work, home := t.TempDir(), t.TempDir()
	token := "[http \"https://git.invalid/\"]\n\textraheader = AUTHORIZATION: basic c2VjcmV0\n"
	files := map[string]string{
		".git/config":                          "[core]\n\tbare = false\n[include]\n\tpath = creds.inc\n[includeIf \"gitdir:/nowhere/\"]\n\tpath = \"~/work.inc\" ; a comment\n",
		".git/creds.inc":                       token + "[include]\n\tpath = ../nested.inc\n",
		"nested.inc":                           token,
		".git/modules/sub/HEAD":                "ref: refs/heads/main\n",
		".git/modules/sub/config":              "[core]\n\tworktree = ../../../sub\n" + token,
		".git/modules/libs/deep/HEAD":          "ref: refs/heads/main\n",
		".git/modules/libs/deep/config":        token,
		".git/modules/sub/modules/in/HEAD":     "ref: refs/heads/main\n",
		".git/modules/sub/modules/in/config":   token,
		".git/worktrees/other/config.worktree": token,
	}
	for name, content := range files {
		p := filepath.Join(work, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(home, "work.inc"), []byte(token), 0o644)
	p := testProfile()
	p.Filesystem.Read = []policy.PathRule{{Path: "$WORKDIR"}, {Path: "$HOME"}}
	c, err := Compile(p, Env{Vars: map[string]string{"WORKDIR": work, "HOME": home, "TMPDIR": "/tmp"}, Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	masked := map[string]string{}
	for _, m := range c.Plan.Masked {
		masked[m.Path] = string(m.Content)
	}
	want := []string{filepath.Join(home, "work.inc")}
	for name := range files {
		if !strings.HasSuffix(name, "HEAD") && name != ".git/config" {
			want = append(want, filepath.Join(work, name))
		}
	}
	for _, f := range want {
		content, ok := masked[f]
		if !ok {
			t.Errorf("%s not masked (masked: %v)", f, slices.Sorted(maps.Keys(masked)))
		} else if strings.Contains(strings.ToLower(content), "extraheader") {
			t.Errorf("%s masked but still holds the token: %q", f, content)
		}
	}
	if _, ok := masked[filepath.Join(work, ".git/config")]; ok {
		t.Errorf(".git/config masked although it holds no credential")
	}
}

func TestGitIncludes(t *testing.T) {
	in := "[core]\n\tpath = not/this\n[include]\n\tpath = a.inc\n\tPath=\"b c.inc\"\n[includeIf \"onbranch:main\"]\n\tpath = ~/d.inc # comment\n[user]\n\tpath = nor/this\n"
	if got, want := gitIncludes([]byte(in)), []string{"a.inc", "b c.inc", "~/d.inc"}; !slices.Equal(got, want) {
		t.Errorf("gitIncludes = %q, want %q", got, want)
	}
}
