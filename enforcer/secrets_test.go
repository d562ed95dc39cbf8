package enforcer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
)

const unprivSecretsEnv = "SYSPROF_TEST_UNPRIVILEGED_SECRETS"

// Secrets stay out of the command's reach, as root and as an ordinary user: secret-looking
// environment variables (unless passed), project credential files, the CI token in
// .git/config, and a hidden .env the host renames a new file over during the run. Each run
// has a benign control that must still work.
func TestSecretsKeptFromCommand(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "git")
	t.Run("root", func(t *testing.T) {
		if err := secretsChecks(secretsTree(t)); err != nil {
			t.Error(err)
		}
	})
	t.Run("ordinary user", func(t *testing.T) {
		dir := secretsTree(t)
		self, _ := os.Executable()
		bin := filepath.Join(dir, "enforcer.test")
		if err := copyFile(self, bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("chown", "-R", "65534:65534", filepath.Join(dir, "work"), filepath.Join(dir, "home")).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v %s", err, out)
		}
		cmd := exec.Command(bin) // TestMain runs secretsChecks when unprivSecretsEnv is set
		cmd.Env = append(os.Environ(), unprivSecretsEnv+"="+dir)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("as nobody: %v\n%s", err, out)
		}
	})
}

// secretsTree makes a 0755 directory with the victim, a home, and a work tree: a git
// repository whose config holds a checkout token, a project .npmrc with a token, a .env, and
// an ordinary source file.
func secretsTree(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sysprof-secrets-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	if err := copyFile(testutil.BuildC(t, "escape/escape.c"), filepath.Join(dir, "escape"), 0o755); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	for _, d := range []string{filepath.Join(dir, "home"), filepath.Join(work, "out"), filepath.Join(work, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range map[string]string{
		"src.txt":  "benign\n",
		".npmrc":   "//npm.invalid/:_authToken=npmfilesecret\n",
		".env":     "OLDSECRET=1\n",
		"sub/.env": "SUBSECRET=1\n",
	} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A credential store the profile reads one file of.
	aws := filepath.Join(dir, "home", ".aws")
	for name, content := range map[string]string{
		"config":        "[default] region = benign\n",
		"credentials":   "aws_secret_access_key = awsfilesecret\n",
		"sso/cache/tok": "ssotokensecret\n",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(aws, name)), 0o755)
		if err := os.WriteFile(filepath.Join(aws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t.invalid", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = work
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + filepath.Join(dir, "home"), "GIT_CONFIG_NOSYSTEM=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", "src.txt")
	git("commit", "-q", "-m", "initial commit")
	git("config", "http.https://git.invalid/.extraheader", "AUTHORIZATION: basic Z2hzX2NoZWNrb3V0c2VjcmV0")
	git("remote", "add", "origin", "https://x-access-token:ghs_remotesecret123@git.invalid/o/r.git")
	// A submodule's config and an included file hold tokens too.
	git("config", "include.path", "creds.inc")
	for name, content := range map[string]string{
		".git/creds.inc":          "[http \"https://git.invalid/\"]\n\textraheader = AUTHORIZATION: basic aW5jbHVkZXNlY3JldA==secret\n",
		".git/modules/sub/HEAD":   "ref: refs/heads/main\n",
		".git/modules/sub/config": "[core]\n\tbare = false\n[http \"https://git.invalid/\"]\n\textraheader = AUTHORIZATION: basic c3VibW9kdWxlc2VjcmV0secret\n",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(work, name)), 0o755)
		if err := os.WriteFile(filepath.Join(work, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// secretsProfile lets the victim, sh and git read the system and the work tree, write only
// $WORKDIR/out, and hides the credential stores a learned profile hides.
func secretsProfile(victim string) *policy.Profile {
	p := unprivilegedProfile()
	p.Filesystem = policy.Filesystem{
		Read:   rules("/usr", "/etc", "/proc", "/lib", "/lib64", "$WORKDIR", "$HOME", filepath.Dir(victim)),
		Write:  rules("$WORKDIR/out", "/dev/null"),
		Exec:   rules(victim, "/usr/bin", "/usr/lib", "/usr/libexec"),
		Hidden: rules(paths.CredentialStores()...),
	}
	return p
}

// secretsChecks runs every check of TestSecretsKeptFromCommand on a tree from secretsTree, as
// whoever calls it, and returns what failed.
func secretsChecks(dir string) error {
	victim := filepath.Join(dir, "escape")
	work := filepath.Join(dir, "work")
	home := filepath.Join(dir, "home")
	p := secretsProfile(victim)
	vars := map[string]string{"HOME": home, "WORKDIR": work}
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + home, "AWS_SECRET_ACCESS_KEY=awssecret", "GITHUB_TOKEN=ghtoken", "NPM_TOKEN=npmtoken"}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	run := func(p *policy.Profile, early bool, stdin io.Reader, stdout io.Writer, argv ...string) (string, error) {
		var out strings.Builder
		opts := Options{Profile: p, Command: argv, Dir: work, Vars: vars, Env: env, Stdin: stdin, Stdout: &out, Stderr: &out}
		if stdout != nil {
			opts.Stdout = stdout
		}
		if early {
			e := StartEarly(opts)
			if e == nil {
				return "", errors.New("StartEarly: nil")
			}
			defer e.Close()
			opts.Early = e
		}
		rep, code, err := Run(context.Background(), opts)
		if err == nil && code != 0 {
			err = fmt.Errorf("exit %d", code)
		}
		if err != nil && rep != nil {
			var b strings.Builder
			rep.WriteTable(&b)
			err = fmt.Errorf("%w\n%s", err, b.String())
		}
		return out.String(), err
	}

	// The environment: secrets removed unless passed; the ordinary variables stay. Also with
	// an init stage started before the profile was known, with the whole environment.
	passing := policy.Clone(p)
	passing.Env.Pass = []string{"NPM_TOKEN"}
	for _, early := range []bool{false, true} {
		out, err := run(passing, early, nil, nil, victim, "getenv=AWS_SECRET_ACCESS_KEY", "getenv=GITHUB_TOKEN", "getenv=NPM_TOKEN", "getenv=HOME", "getenv=PATH")
		want := "getenv AWS_SECRET_ACCESS_KEY: unset\ngetenv GITHUB_TOKEN: unset\ngetenv NPM_TOKEN: set\ngetenv HOME: set\ngetenv PATH: set\n"
		if err != nil || out != want {
			fail("environment (early %v): %v\ngot  %q\nwant %q", early, err, out, want)
		}
	}

	// Project credential files: hidden (read as empty or refused) while an ordinary file of
	// the work tree reads.
	out, err := run(p, false, nil, nil, victim, "cat=.npmrc", "cat=sub/.env", "cat=src.txt")
	if err != nil || strings.Contains(out, "secret") || !strings.Contains(out, "cat: [benign]\n") {
		fail("project credential files: %v\n%s", err, out)
	}

	// A rule for one file of a credential store grants that file: the rest of the store stays
	// hidden (here without the profile's own hidden rules, as withBase adds them).
	oneFile := policy.Clone(p)
	oneFile.Filesystem.Hidden = nil
	oneFile.Filesystem.Read = append(oneFile.Filesystem.Read, policy.PathRule{Path: "$HOME/.aws/config"})
	aws := filepath.Join(home, ".aws")
	out, err = run(oneFile, false, nil, nil, victim, "cat="+filepath.Join(aws, "config"), "cat="+filepath.Join(aws, "credentials"), "cat="+filepath.Join(aws, "sso/cache/tok"))
	if err != nil || strings.Contains(out, "secret") || !strings.HasPrefix(out, "cat: [[default] region = benign]\n") || strings.Count(out, "\n") != 3 {
		fail("a rule inside a credential store: %v\n%s\nwant $HOME/.aws/config readable, the rest of $HOME/.aws not", err, out)
	}

	// .git/config, the file it includes and a submodule's config without the checkout token,
	// and git still works on the repository.
	out, err = run(p, false, nil, nil, "/bin/sh", "-c", "git -c safe.directory='*' log --format=%s && git -c safe.directory='*' status --porcelain --untracked-files=no && cat .git/config .git/creds.inc .git/modules/sub/config")
	if err != nil || strings.Contains(out, "secret") || strings.Contains(strings.ToLower(out), "extraheader") ||
		!strings.Contains(out, "initial commit\n") || !strings.Contains(out, "[core]") || !strings.Contains(out, "url = https://git.invalid/o/r.git") {
		fail("git config: %v\n%s", err, out)
	}

	// A hidden .env that the host renames a new file over while the command runs.
	if err := renameOverCheck(run, p, victim, work); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// renameOverCheck runs the victim, which reads .env, waits for the go-ahead on stdin while the
// host renames a new .env over the hidden one, then reads .env and src.txt again.
func renameOverCheck(run func(*policy.Profile, bool, io.Reader, io.Writer, ...string) (string, error), p *policy.Profile, victim, work string) error {
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		_, err := run(p, false, inR, outW, victim, "cat=.env", "wait", "cat=.env", "cat=src.txt")
		outW.Close()
		done <- err
	}()
	defer inW.Close()
	defer inR.Close()
	rd := bufio.NewReader(outR)
	var seen strings.Builder
	for !strings.HasSuffix(seen.String(), "waiting\n") {
		line, err := rd.ReadString('\n')
		seen.WriteString(line)
		if err != nil {
			return fmt.Errorf("rename over .env: the victim stopped before waiting: %v\n%s\n%v", err, seen.String(), <-done)
		}
	}
	env := filepath.Join(work, ".env")
	if err := os.WriteFile(env+".new", []byte("NEWSECRET=1\n"), 0o644); err != nil {
		return err
	}
	if err := os.Rename(env+".new", env); err != nil {
		return err
	}
	inW.Write([]byte("go\n"))
	rest, _ := io.ReadAll(rd)
	seen.Write(rest)
	if err := <-done; err != nil {
		return fmt.Errorf("rename over .env: %v\n%s", err, seen.String())
	}
	out := seen.String()
	if strings.Contains(out, "SECRET") || !strings.Contains(out, "cat: [benign]\n") || strings.Count(out, "cat: ") != 3 {
		return fmt.Errorf("rename over .env: want .env unreadable before and after the host's rename, src.txt readable:\n%s", out)
	}
	if b, _ := os.ReadFile(env); !strings.Contains(string(b), "NEWSECRET") {
		return fmt.Errorf("rename over .env: the host's rename did not happen")
	}
	return nil
}
