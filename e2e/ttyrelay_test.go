package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
)

// relayProfile is a profile for the shell scripts of the terminal relay's tests, written out
// (not learned: what is tested is the terminal, not learn): sh, stty, sleep, cat and ls.
const relayProfile = `apiVersion: sysprof.dev/v1
kind: Profile
metadata:
  name: relay
  command: [sh]
syscalls:
  architectures: [x86_64, aarch64]
  allow:
%s
filesystem:
  read:
    - {path: /etc}
    - {path: /usr/lib}
    - {path: /usr/share}
    - {path: $WORKDIR}
    - {path: /proc/filesystems}
    - {path: /proc/mounts}
  write:
    - {path: /dev/tty}
  exec:
    - {path: /usr/bin/dash}
    - {path: /usr/bin/sh}
    - {path: /usr/bin/stty}
    - {path: /usr/bin/sleep}
    - {path: /usr/bin/tty}
    - {path: /usr/bin/cat}
    - {path: /usr/bin/ls}
    - {path: /usr/bin/printf}
`

var relaySyscalls = strings.Fields(`access arch_prctl brk chdir clock_gettime clock_nanosleep close dup dup2 dup3
execve exit exit_group faccessat faccessat2 fcntl fstat fstatat futex getcwd getdents64 getegid geteuid
getgid getpgrp getpid getppid getrandom getrlimit gettid getuid ioctl kill lseek lstat madvise mmap
mprotect munmap nanosleep newfstatat openat pipe pipe2 poll ppoll pread64 prlimit64 read readlink
readlinkat restart_syscall rseq rt_sigaction rt_sigprocmask rt_sigreturn rt_sigsuspend sched_yield
set_robust_list set_tid_address setpgid sigaltstack stat statfs statx sysinfo tgkill uname wait4
write writev clone clone3 vfork fchdir getxattr lgetxattr capget`)

func writeRelayProfile(t *testing.T, dir string) string {
	t.Helper()
	var allow strings.Builder
	for _, s := range relaySyscalls {
		allow.WriteString("    - {name: " + s + "}\n")
	}
	p := filepath.Join(dir, "relay.yaml")
	if err := os.WriteFile(p, []byte(strings.Replace(relayProfile, "%s\n", allow.String(), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// ttySession is a command started on a pty of the test's as its controlling terminal and
// foreground, as a shell starts it.
type ttySession struct {
	t    *testing.T
	ptm  *os.File
	pts  *os.File
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

func startAtTTY(t *testing.T, b *testutil.Box, uid int, rows, cols uint16, argv ...string) *ttySession {
	t.Helper()
	ptm, pts := testutil.OpenPTY(t)
	if err := unix.IoctlSetWinsize(int(pts.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		t.Fatal(err)
	}
	cmd, _ := b.Command(t, argv...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if uid != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}
	}
	s := &ttySession{t: t, ptm: ptm, pts: pts, cmd: cmd, done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The child has the terminal end: the master reads EIO once the child's session is gone
	// (termios and size ioctls on the master act on the terminal end).
	pts.Close()
	go func() {
		defer close(s.done)
		buf := make([]byte, 4096)
		for {
			n, err := ptm.Read(buf)
			s.mu.Lock()
			s.out.Write(buf[:n])
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return s
}

func (s *ttySession) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// waitFor waits until the terminal shows want.
func (s *ttySession) waitFor(want string) {
	s.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(s.output(), want) {
		if time.Now().After(deadline) {
			s.t.Fatalf("the terminal never showed %q:\n%q", want, s.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *ttySession) typeIn(text string) {
	s.t.Helper()
	if _, err := s.ptm.WriteString(text); err != nil {
		s.t.Fatal(err)
	}
}

// wait returns the exit status and everything the terminal showed.
func (s *ttySession) wait() (int, string) {
	s.t.Helper()
	err := s.cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	} else if err != nil {
		s.t.Fatal(err)
	}
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.t.Fatalf("the terminal stayed open after the command ended:\n%q", s.output())
	}
	return code, s.output()
}

// TestTerminalRelay (issues 23 and 24): enforced at a terminal, the command has a pty of
// sysprof's as its controlling terminal: a /dev/tty prompt is answered, the window size is
// the user's and follows a resize, Ctrl-C ends the command (not sysprof's terminal handling:
// the user's terminal gets its modes back), the exit status is the command's; and what it
// prints goes through the filter: OSC 52 (whole or split across writes) is dropped and the
// report says so. As root and as an ordinary user.
func TestTerminalRelay(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "sh", "stty", "sleep", "bash", "tty")
	for _, who := range []struct {
		name string
		uid  int
	}{{"root", 0}, {"ordinary-user", 65534}} {
		t.Run(who.name, func(t *testing.T) {
			root := t.TempDir()
			b := newBox(t, root, "x", "alice", "work", "")
			profile := writeRelayProfile(t, root)
			bin := testutil.SysprofBin
			if who.uid != 0 { // the build's directory is root's alone
				bin = filepath.Join(root, "sysprof")
				data, err := os.ReadFile(testutil.SysprofBin)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(bin, data, 0o755); err != nil {
					t.Fatal(err)
				}
				openForNobody(t, root)
			}
			enforce := func(report string, script string) []string {
				return []string{bin, "enforce", "-p", profile, "--report", report, "--", "sh", "-c", script}
			}
			t.Run("prompt", func(t *testing.T) {
				s := startAtTTY(t, b, who.uid, 24, 80, enforce(filepath.Join(root, "r1.json"), `echo ask; read x </dev/tty; echo "got $x"`)...)
				s.waitFor("ask")
				s.typeIn("hello\r")
				code, out := s.wait()
				if code != 0 || !strings.Contains(out, "got hello") {
					t.Errorf("the /dev/tty prompt was not answered: exit %d\n%q", code, out)
				}
			})
			t.Run("reopen-by-name", func(t *testing.T) {
				// The command's terminal is its own, by name too (node and libuv reopen it): as
				// root the command is a host uid of its own, to whom a pty of root's is closed.
				s := startAtTTY(t, b, who.uid, 24, 80, enforce(filepath.Join(root, "r0.json"), `echo x >> "$(tty)" && echo reopened`)...)
				code, out := s.wait()
				if code != 0 || !strings.Contains(out, "reopened") {
					t.Errorf("the command could not reopen its terminal by name: exit %d\n%q", code, out)
				}
			})
			t.Run("osc52", func(t *testing.T) {
				rep := filepath.Join(root, "r2.json")
				s := startAtTTY(t, b, who.uid, 24, 80, enforce(rep, `printf 'a\033]52;c;cm0gLXJmIH4K\007b\n'; printf '\033]5'; sleep 0.3; printf '2;c;c3BsaXQK\007'; sleep 0.3; printf '\033[31mred\033[0m\n'`)...)
				code, out := s.wait()
				if code != 0 || !strings.Contains(out, "ab") || !strings.Contains(out, "\x1b[31mred\x1b[0m") {
					t.Errorf("the text or its colours did not pass: exit %d\n%q", code, out)
				}
				for _, bad := range []string{"52;", "cm0gLXJmIH4K", "c3BsaXQK"} {
					if strings.Contains(out, bad) {
						t.Errorf("OSC 52 reached the terminal (%q):\n%q", bad, out)
					}
				}
				notes := strings.Join(testutil.ReadReport(t, rep).Notes, "\n")
				if !strings.Contains(notes, "clipboard (OSC 52): dropped (2)") {
					t.Errorf("the report does not record both OSC 52 writes:\n%s", notes)
				}
			})
			t.Run("window-size", func(t *testing.T) {
				s := startAtTTY(t, b, who.uid, 33, 101, enforce(filepath.Join(root, "r3.json"), `stty size; read x </dev/tty; stty size`)...)
				s.waitFor("33 101")
				if err := unix.IoctlSetWinsize(int(s.ptm.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 120}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(200 * time.Millisecond) // SIGWINCH reaches sysprof, which passes the size on
				s.typeIn("\r")
				code, out := s.wait()
				if code != 0 || !strings.Contains(out, "40 120") {
					t.Errorf("the resize did not reach the command: exit %d\n%q", code, out)
				}
			})
			t.Run("ctrl-c", func(t *testing.T) {
				s := startAtTTY(t, b, who.uid, 24, 80, enforce(filepath.Join(root, "r4.json"), `echo ready; sleep 30; echo survived`)...)
				before, err := unix.IoctlGetTermios(int(s.ptm.Fd()), unix.TCGETS)
				if err != nil {
					t.Fatal(err)
				}
				s.waitFor("ready")
				time.Sleep(100 * time.Millisecond)
				s.typeIn("\x03")
				code, out := s.wait()
				if code != 130 || strings.Contains(out, "survived") {
					t.Errorf("Ctrl-C did not end the command: exit %d (want 130)\n%q", code, out)
				}
				after, err := unix.IoctlGetTermios(int(s.ptm.Fd()), unix.TCGETS)
				if err != nil {
					t.Fatal(err)
				}
				if *after != *before {
					t.Errorf("the terminal's modes were not restored:\nbefore %+v\nafter  %+v", before, after)
				}
			})
			t.Run("job-control", func(t *testing.T) {
				// A shell with job control: Ctrl-Z stops the run, fg resumes it.
				s := startAtTTY(t, b, who.uid, 24, 80, "bash", "--norc", "--noprofile", "-i")
				// What it prints ($((...))) is not in the line the terminal echoes.
				script := `echo begun-$((1+1)); sleep 2; echo done-$((2+2))`
				line := strings.Join(enforce(filepath.Join(root, "r6.json"), "SCRIPT"), " ")
				s.typeIn(strings.Replace(line, "SCRIPT", "'"+script+"'", 1) + "\r")
				s.waitFor("begun-2")
				s.typeIn("\x1a")
				s.waitFor("Stopped")
				if strings.Contains(s.output(), "done-4") {
					t.Fatalf("the command went on after Ctrl-Z:\n%q", s.output())
				}
				s.typeIn("fg\r")
				s.waitFor("done-4")
				// The shell's prompt again: keys typed before it are the relay's, the command's.
				deadline := time.Now().Add(30 * time.Second)
				for {
					out := s.output()
					if rest := out[strings.LastIndex(out, "done-4"):]; strings.Contains(rest, "# ") || strings.Contains(rest, "$ ") {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("no prompt after the run:\n%q", out)
					}
					time.Sleep(20 * time.Millisecond)
				}
				s.typeIn("exit\r")
				if code, out := s.wait(); code != 0 {
					t.Errorf("the shell: exit %d\n%q", code, out)
				}
			})
			t.Run("exit-status", func(t *testing.T) {
				s := startAtTTY(t, b, who.uid, 24, 80, enforce(filepath.Join(root, "r5.json"), `tty; exit 3`)...)
				code, out := s.wait()
				if code != 3 {
					t.Errorf("exit %d, want 3\n%q", code, out)
				}
			})
		})
	}
}

// TestTerminalRelayOutputUnchanged: what ordinary tools print at a terminal (colours, cursor
// movement, the alternate screen, bracketed paste, ls --color) reaches the user's terminal
// byte for byte as unsandboxed.
func TestTerminalRelayOutputUnchanged(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "sh", "ls")
	root := t.TempDir()
	b := newBox(t, root, "x", "alice", "work", "")
	b.Extra = append(b.Extra, "TERM=xterm-256color")
	profile := writeRelayProfile(t, root)
	b.Sh(t, "mkdir -p sub && touch a.txt b.sh && chmod +x b.sh")
	script := `printf '\033[?1049h\033[H\033[2J\033[1;32mgreen\033[0m\033[5;10Hat\033[?2004h\033[?25l\033[?25h\033[?2004l\033[?1049l'; ls --color=always -F; printf '\033]8;;https://example.test/\033\\link\033]8;;\033\\\n'`
	plain := startAtTTY(t, b, 0, 24, 80, "sh", "-c", script)
	_, want := plain.wait()
	s := startAtTTY(t, b, 0, 24, 80, testutil.SysprofBin, "enforce", "-p", profile, "--", "sh", "-c", script)
	code, got := s.wait()
	if code != 0 || got != want {
		t.Errorf("enforced at a terminal (exit %d) printed\n%q\nunsandboxed\n%q", code, got, want)
	}
}

// TestTerminalRelayPager: git log -p pages with less at the relay's pty (the alternate screen,
// the keypad, less's prompt; q read from the terminal) byte for byte as unsandboxed.
func TestTerminalRelayPager(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "git", "less")
	root := t.TempDir()
	b := newBox(t, root, "x", "alice", "work", "")
	gitRepo(t, b)
	b.Sh(t, `for i in $(seq 40); do echo "line $i" >>notes.txt; done; git commit -qam more`)
	b.Extra = append(b.Extra, "TERM=xterm", "GIT_PAGER=less", "LESS=R", "LESSHISTFILE=-")
	shipped, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "profiles", "git.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(root, "git-less.yaml")
	withLess := strings.Replace(string(shipped), "  exec:\n", "  exec:\n    - {path: /usr/bin/less}\n", 1)
	if err := os.WriteFile(profile, []byte(withLess), 0o644); err != nil {
		t.Fatal(err)
	}
	page := func(argv ...string) (int, string) {
		s := startAtTTY(t, b, 0, 10, 80, argv...)
		s.waitFor(":\x1b[K") // less's prompt
		s.typeIn("q")
		return s.wait()
	}
	_, want := page("git", "log", "-p")
	code, got := page(testutil.SysprofBin, "enforce", "-p", profile, "--", "git", "log", "-p")
	if code != 0 || got != want {
		t.Errorf("enforced at a terminal (exit %d) printed\n%q\nunsandboxed\n%q", code, got, want)
	}
}

// TestTerminalRelaySteps: a step of sysprof.yaml enforced at a terminal gets the relay too (its
// /dev/tty prompt answered, its OSC 52 dropped and in the step's report).
func TestTerminalRelaySteps(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "sh")
	root := t.TempDir()
	b := newBox(t, root, "x", "alice", "work", "")
	profile := writeRelayProfile(t, root)
	testutil.WriteFile(t, filepath.Join(b.Work, "sysprof.yaml"), `version: 1
steps:
  - name: ask
    command: [sh, -c, 'echo ask; read x </dev/tty; echo "got $x"; printf "\033]52;c;eA==\007"']
    profile: `+profile+"\n", 0o644)
	rep := filepath.Join(root, "r.json")
	s := startAtTTY(t, b, 0, 24, 80, testutil.SysprofBin, "enforce", "--step", "ask", "--report", rep)
	s.waitFor("\nask")
	s.typeIn("yes\r")
	code, out := s.wait()
	if code != 0 || !strings.Contains(out, "got yes") || strings.Contains(out, "\x1b]52") {
		t.Errorf("the step at a terminal: exit %d\n%q", code, out)
	}
	if notes := strings.Join(testutil.ReadReport(t, rep+".ask.json").Notes, "\n"); !strings.Contains(notes, "clipboard (OSC 52): dropped (1)") {
		t.Errorf("the step's report does not record the OSC 52 write:\n%s", notes)
	}
}
