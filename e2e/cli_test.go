package e2e

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

// cliBox is a scratch box for the CLI contract tests: an empty work directory and HOME.
func cliBox(t *testing.T) *testutil.Box {
	t.Helper()
	return newBox(t, t.TempDir(), "cli", "user", "work", "")
}

// TestCLIExitStatus checks the exit statuses of DESIGN.md's CLI contract for learn and enforce.
func TestCLIExitStatus(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "sh")
	b := cliBox(t)
	prof := func(name string) string { return filepath.Join(b.Home, "profiles", name+".yaml") }

	t.Run("no-command", func(t *testing.T) {
		for _, args := range [][]string{{"learn"}, {"learn", "--"}, {"learn", "-p", prof("x")}, {"enforce", "-p", prof("x")}, {"drift", "-p", prof("x")}} {
			r := b.Sysprof(t, args...)
			testutil.MustCode(t, strings.Join(args, " "), r, 125)
			if !strings.Contains(strings.ToLower(r.Stderr), "usage") {
				t.Errorf("%s: want a usage message on stderr, got %s", strings.Join(args, " "), r)
			}
			if r.Stdout != "" {
				t.Errorf("%s: stdout must be empty, got %q", strings.Join(args, " "), r.Stdout)
			}
		}
	})

	t.Run("profile-unwritable", func(t *testing.T) {
		// The command would leave a marker: it must not run at all.
		marker := filepath.Join(b.Tmp, "ran")
		var p string
		if os.Geteuid() == 0 {
			// Root writes through permissions; a path below a regular file fails for anyone.
			file := filepath.Join(b.Tmp, "regular-file")
			testutil.WriteFile(t, file, "", 0o644)
			p = filepath.Join(file, "p.yaml")
		} else {
			dir := filepath.Join(b.Tmp, "read-only")
			if err := os.Mkdir(dir, 0o500); err != nil {
				t.Fatal(err)
			}
			p = filepath.Join(dir, "p.yaml")
		}
		r := b.Sysprof(t, "learn", "-p", p, "--", "sh", "-c", "touch "+marker)
		testutil.MustCode(t, "learn with an unwritable profile path", r, 125)
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("the command ran although the profile cannot be written")
		}
		if !strings.Contains(r.Stderr, p) && !strings.Contains(r.Stderr, filepath.Dir(p)) {
			t.Errorf("the error should name the path: %s", r)
		}
	})

	t.Run("not-found", func(t *testing.T) {
		for _, c := range []string{"no-such-command-sysprof-e2e", filepath.Join(b.Tmp, "missing")} {
			testutil.MustCode(t, "learn "+c, b.Sysprof(t, "learn", "-p", prof("nf"), "--", c), 127)
		}
	})

	t.Run("not-executable", func(t *testing.T) {
		script := filepath.Join(b.Work, "not-exec.sh")
		testutil.WriteFile(t, script, "#!/bin/sh\necho ran\n", 0o644)
		r := b.Sysprof(t, "learn", "-p", prof("ne"), "--", script)
		testutil.MustCode(t, "learn of a file without x bits", r, 126)
		if strings.Contains(r.Stdout, "ran") {
			t.Errorf("the script ran: %s", r)
		}
	})

	t.Run("command-status", func(t *testing.T) {
		p := prof("exit3")
		testutil.MustCode(t, "learn sh -c 'exit 3'", b.Sysprof(t, "learn", "-p", p, "--", "sh", "-c", "exit 3"), 3)
		if _, err := os.Stat(p); err != nil {
			t.Errorf("a command that fails is still learned: %v", err)
		}
		r := b.Sysprof(t, "enforce", "-p", p, "--report", filepath.Join(b.Tmp, "exit3.json"), "--", "sh", "-c", "exit 3")
		testutil.MustCode(t, "enforce sh -c 'exit 3'", r, 3)
		requireNoDenialsExit(t, "enforce sh -c 'exit 3'", filepath.Join(b.Tmp, "exit3.json"), r, 3)
	})

	t.Run("killed-by-signal", func(t *testing.T) {
		p := prof("sigterm")
		argv := []string{"sh", "-c", "kill -TERM $$"}
		testutil.MustCode(t, "learn of a command killed by SIGTERM", b.Sysprof(t, append([]string{"learn", "-p", p, "--"}, argv...)...), 143)
		r := b.Sysprof(t, append([]string{"enforce", "-p", p, "--report", filepath.Join(b.Tmp, "sigterm.json"), "--"}, argv...)...)
		testutil.MustCode(t, "enforce of a command killed by SIGTERM", r, 143)
		requireNoDenialsExit(t, "enforce of a command killed by SIGTERM", filepath.Join(b.Tmp, "sigterm.json"), r, 143)
	})

	t.Run("enforce-missing-profile", func(t *testing.T) {
		marker := filepath.Join(b.Tmp, "ran-unsandboxed")
		r := b.Sysprof(t, "enforce", "-p", filepath.Join(b.Home, "no-such.yaml"), "--", "sh", "-c", "touch "+marker)
		testutil.MustCode(t, "enforce with a missing profile", r, 125)
		if !strings.Contains(r.Stderr, "sysprof learn") {
			t.Errorf("want a hint to run `sysprof learn`, got %s", r)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("enforce without a profile ran the command")
		}
	})

	t.Run("enforce-not-found", func(t *testing.T) {
		p := prof("echo")
		testutil.MustCode(t, "learn echo", b.Sysprof(t, "learn", "-p", p, "--", "echo", "hi"), 0)
		testutil.MustCode(t, "enforce of a missing command", b.Sysprof(t, "enforce", "-p", p, "--", filepath.Join(b.Tmp, "missing")), 127)
		script := filepath.Join(b.Work, "not-exec-2.sh")
		testutil.WriteFile(t, script, "#!/bin/sh\necho ran\n", 0o644)
		testutil.MustCode(t, "enforce of a file without x bits", b.Sysprof(t, "enforce", "-p", p, "--", script), 126)
	})
}

// requireNoDenialsExit is requireNoDenials for a command that exits with code on purpose.
func requireNoDenialsExit(t *testing.T, what, path string, r testutil.Result, code int) {
	t.Helper()
	rep := testutil.ReadReport(t, path)
	for _, d := range rep.Denials {
		t.Errorf("%s: denial: %s by %s: suggest %q", what, d.What, d.Exe, d.Suggest)
	}
	if rep.ExitCode != code {
		t.Errorf("%s: report says exit %d, want %d", what, rep.ExitCode, code)
	}
	if t.Failed() {
		t.Fatalf("%s: %s", what, r)
	}
}

// TestCLIStdoutIsTheCommands: sysprof's own output (summary, warnings, denial table) goes to
// stderr only; stdout is exactly the command's.
func TestCLIStdoutIsTheCommands(t *testing.T) {
	testutil.RequireRoot(t)
	b := cliBox(t)
	p := filepath.Join(b.Home, "echo.yaml")
	r := b.Sysprof(t, "learn", "-p", p, "--", "echo", "hi")
	testutil.MustCode(t, "learn echo hi", r, 0)
	if r.Stdout != "hi\n" {
		t.Errorf("learn -- echo hi: stdout = %q, want %q", r.Stdout, "hi\n")
	}
	if r.Stderr == "" {
		t.Errorf("learn -- echo hi: want the learn summary on stderr")
	}
	rep := filepath.Join(b.Tmp, "echo.json")
	r = b.Sysprof(t, "enforce", "-p", p, "--report", rep, "--", "echo", "hi")
	testutil.MustCode(t, "enforce echo hi", r, 0)
	testutil.RequireNoDenials(t, "enforce echo hi", rep, r)
	if r.Stdout != "hi\n" {
		t.Errorf("enforce -- echo hi: stdout = %q, want %q", r.Stdout, "hi\n")
	}
	// Denials are reported on stderr, never on stdout: sh is a binary the profile never ran.
	r = b.Sysprof(t, "enforce", "-p", p, "--", "sh", "-c", "echo hi")
	if r.Code == 0 || r.Stdout != "" || r.Stderr == "" {
		t.Errorf("enforce of a binary the profile never ran: want a failure, nothing on stdout and the reason on stderr, got %s", r)
	}
}

// TestCLILearnInterrupted: Ctrl-C on learn is forwarded to the command and what was seen is
// saved; a command that exits by it ended normally (a dev server's end): not incomplete.
func TestCLILearnInterrupted(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "sh")
	testutil.RequireTools(t, hostPath, "sleep")
	b := cliBox(t)
	p := filepath.Join(b.Home, "sleep.yaml")
	argv := []string{testutil.SysprofBin, "learn", "-p", p, "--", "sh", "-c", "echo ready; exec sleep 60"}
	cmd, ctx := b.Command(t, argv...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	ready := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(out)
		once := false
		for sc.Scan() {
			stdout.WriteString(sc.Text() + "\n")
			if sc.Text() == "ready" && !once {
				once = true
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the command did not start under learn: %s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	err = cmd.Wait()
	r := testutil.Finish(t, ctx, cmd, err, stdout.String(), stderr.String())
	if r.Code != 130 {
		t.Errorf("learn interrupted by SIGINT: want exit 130 (the command killed by the forwarded SIGINT), got %s", r)
	}
	prof, lerr := policy.Load(p)
	if lerr != nil {
		t.Fatalf("interrupted learn saved no profile: %v\n%s", lerr, r)
	}
	if prof.Metadata.Incomplete {
		t.Errorf("learn ended with Ctrl-C: want complete (the command exited by the signal), got %+v\n%s", prof.Metadata, r)
	}
	if len(prof.Syscalls.Allow) == 0 {
		t.Errorf("interrupted learn saved no syscalls")
	}
}

// TestCLIDiff: diff exits 1 when NEW widens OLD and 0 when it only narrows (or is equal).
func TestCLIDiff(t *testing.T) {
	testutil.RequireRoot(t) // the base profile is learned
	b := cliBox(t)
	narrow := filepath.Join(b.Home, "narrow.yaml")
	testutil.MustCode(t, "learn echo", b.Sysprof(t, "learn", "-p", narrow, "--", "echo", "hi"), 0)
	p := loadProfile(t, narrow)
	wide := policy.Clone(p)
	wide.Syscalls.Allow = append(wide.Syscalls.Allow, policy.Syscall{Name: "ptrace"})
	widePath := filepath.Join(b.Home, "wide.yaml")
	if err := policy.Save(widePath, wide); err != nil {
		t.Fatal(err)
	}

	r := b.Sysprof(t, "diff", narrow, widePath)
	testutil.MustCode(t, "diff OLD WIDER", r, 1)
	if !strings.Contains(r.Stdout, "ptrace") {
		t.Errorf("diff OLD WIDER: the table should name ptrace: %s", r)
	}
	r = b.Sysprof(t, "diff", narrow, widePath, "--format", "json")
	testutil.MustCode(t, "diff --format json OLD WIDER", r, 1)
	d := parseDiff(t, r.Stdout)
	w := widening(d.Changes)
	if !d.Widens || len(w) != 1 || w[0].Item != "ptrace" || w[0].Risk != policy.RiskCritical {
		t.Errorf("diff --format json OLD WIDER: want one critical widening (ptrace), got\n%s", changesString(d.Changes))
	}
	r = b.Sysprof(t, "diff", widePath, narrow, "--format", "json")
	testutil.MustCode(t, "diff WIDER OLD (narrowing)", r, 0)
	if d := parseDiff(t, r.Stdout); d.Widens || len(d.Changes) != 1 || d.Changes[0].Widens {
		t.Errorf("diff WIDER OLD: want one narrowing change, got\n%s", changesString(d.Changes))
	}
	testutil.MustCode(t, "diff OLD OLD", b.Sysprof(t, "diff", narrow, narrow), 0)
	testutil.MustCode(t, "diff with a missing file", b.Sysprof(t, "diff", narrow, filepath.Join(b.Home, "missing.yaml")), 125)
}

// TestCLIDoctor: this host (root, BTF, cgroup2, Landlock) supports learning and enforcing.
func TestCLIDoctor(t *testing.T) {
	testutil.RequireRoot(t)
	r := cliBox(t).Sysprof(t, "doctor")
	testutil.MustCode(t, "doctor", r, 0)
	if !strings.Contains(r.Stdout, "landlock") {
		t.Errorf("doctor should list the landlock check: %s", r)
	}
}
