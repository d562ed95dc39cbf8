package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// The sixth red team (issue 23): what the kernel keeps per user rather than per process, which
// a user namespace does not separate by itself (the session keyring the command inherits, the
// per-user counts of inotify instances and fanotify groups, shared with the user's other
// programs), and a learned program taken over from a sibling (per-binary egress rules name a
// program: a process that can drive one reaches what only it may). The probe is
// testdata/redteam/rt.c.

// redteam6Attacks run under the learned profile widened by pipe2 (a child waits on a pipe):
// each refused and on the record, root and ordinary user. The first three take over a child
// running a learned program (/bin/sh); a profile that learned the call allows it (between the
// sandbox's own tasks: nothing outside is reachable, TestRedTeamBlockedAndRecorded). The last
// lifts the user namespace's inotify count again.
var redteam6Attacks = []redteamAttack{
	{action: "sibling=/bin/sh,ptrace", line: "sibling-ptrace: EPERM", syscall: "ptrace"},
	{action: "sibling=/bin/sh,vmwrite", line: "sibling-vmwrite: EPERM", syscall: "process_vm_writev"},
	{action: "sibling=/bin/sh,getfd", line: "sibling-getfd: EPERM", syscall: "pidfd_open"},
	{action: "write=/proc/sys/user/max_inotify_instances", line: "write: E", path: "/proc/sys/user/max_inotify_instances", unobservable: "file denials"},
}

// redteam6Calls are what the kernel-state attacks need: the probe's benign run learns none.
var redteam6Calls = []string{"pipe2", "keyctl", "inotify_init1", "fanotify_init"}

// TestRedTeam6KernelStateOfTheUser runs, as root and as an ordinary user, the probe under its
// learned profile widened by redteam6Calls (as a profile that learned them: a tool that watches
// files, one that reads its own keys), started from a host session keyring holding a secret
// (plantkey: the login's Kerberos ticket, an ecryptfs or NFS key):
//   - the host session keyring is not the command's, nor can it join it by name (sesskey:
//     ENOKEY; no record: nothing of the host's is there to refuse);
//   - it holds at most a quarter of the user's inotify instances and fanotify groups (the rest
//     stays with the user's editor and desktop), and the host's limits are unchanged after;
//   - taking over a sibling running a learned program is refused and recorded.
func TestRedTeam6KernelStateOfTheUser(t *testing.T) {
	b, root, profile := redteamBox(t)
	p := loadProfile(t, profile)
	for _, n := range redteam6Calls {
		if slices.ContainsFunc(p.Syscalls.Allow, func(s policy.Syscall) bool { return s.Name == n }) {
			t.Fatalf("the probe's benign run learned %s: the rows no longer test what they should", n)
		}
		p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: n})
	}
	wide := filepath.Join(root, "wide6.yaml")
	if err := policy.Save(wide, p); err != nil {
		t.Fatal(err)
	}
	hostCount := func(name string) int {
		data, err := os.ReadFile("/proc/sys/user/" + name)
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	inotifyMax, fanotifyMax := hostCount("max_inotify_instances"), hostCount("max_fanotify_groups")
	const ask = 200 // more than any host's default (128)
	if inotifyMax >= ask || fanotifyMax >= ask {
		t.Fatalf("this host allows %d inotify instances and %d fanotify groups per user: the probe asks for %d", inotifyMax, fanotifyMax, ask)
	}
	// plantkey execs sysprof as the user: the suite's build lies in a directory only root may
	// search (setpriv itself execs before its capabilities go).
	data, err := os.ReadFile(testutil.SysprofBin)
	if err != nil {
		t.Fatal(err)
	}
	sysprof := filepath.Join(root, "sysprof")
	testutil.WriteFile(t, sysprof, string(data), 0o755)
	counted := regexp.MustCompile(`(?m)^(inotifyn|fanotifyn): (\d+) of \d+, then (\w+)$`)
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			if as.wrap != nil {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
			}
			const secret = "HOST-SESSION-SECRET"
			rep := filepath.Join(root, as.name+"-rt6.json")
			argv := append(slicesClone(as.wrap), filepath.Join(b.Work, "rt"), "plantkey=sysprof-rt6,"+secret, "then",
				sysprof, "enforce", "-p", wide, "--report", rep, "--", "./rt", "benign", "sesskey=sysprof-rt6", "joinkey=sysprof-rt6", "sesskey=sysprof-rt6",
				"inotifyn="+strconv.Itoa(ask), "fanotifyn="+strconv.Itoa(ask))
			for _, a := range redteam6Attacks {
				argv = append(argv, a.action)
			}
			r := runPerturbed(t, b, perturbation{name: "redteam6", stdout: "pipe", stdin: "null"}, append(argv, "benign"))
			if !strings.HasPrefix(r.Stdout, "plantkey: ok\n") || !strings.HasSuffix(r.Stdout, "benign: ok\n") {
				t.Fatalf("the host key was not planted, or the run did not reach its end: %s", r)
			}
			// Twice: in the run's own keyring, then in the one joined by the host keyring's name
			// (keyring names are the user namespace's own: a new, empty one).
			if strings.Contains(r.Stdout, secret) || strings.Count(r.Stdout, "\nsesskey: ENOKEY\n") != 2 {
				t.Errorf("the command reached the host's session keyring (want sesskey: ENOKEY):\n%s", r.Stdout)
			}
			got := map[string][]string{}
			for _, m := range counted.FindAllStringSubmatch(r.Stdout, -1) {
				got[m[1]] = m[2:]
			}
			for name, limit := range map[string]int{"inotifyn": inotifyMax, "fanotifyn": fanotifyMax} {
				c := got[name]
				if c == nil {
					t.Errorf("%s: no count in the probe's output:\n%s", name, r.Stdout)
					continue
				}
				made, _ := strconv.Atoi(c[0])
				if made == 0 || made > limit/4 || c[1] != "EMFILE" {
					t.Errorf("%s: the run made %d of the user's %d, then %s: want at most a quarter, then EMFILE", name, made, limit, c[1])
				}
			}
			if hostCount("max_inotify_instances") != inotifyMax || hostCount("max_fanotify_groups") != fanotifyMax {
				t.Errorf("the host's per-user limits changed: the run set its counts outside its own user namespace")
			}
			checkAttacks(t, b, r, testutil.ReadReport(t, rep), redteam6Attacks, as.wrap != nil)
		})
	}
}

// TestRedTeam6ParsedProfileCache: enforce keeps what it parsed of a profile in a cache (root's
// /var/cache/sysprof/profiles, a user's $XDG_CACHE_HOME/sysprof/profiles) and trusts an entry
// that names its key and checksum, all of which the command can compute: a planted entry would
// be the next run's profile, wider than the one reviewed. Under a profile that writes the
// directory holding that cache (root: /var/cache/sysprof, which a root-idmap command writes as
// root on disk; an ordinary user: $HOME/.cache), the command's write there is refused and on
// the record, and nothing reaches the cache.
func TestRedTeam6ParsedProfileCache(t *testing.T) {
	b, root, profile := redteamBox(t)
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			cacheRule, planted := "/var/cache/sysprof", "/var/cache/sysprof/profiles/planted"
			if as.wrap != nil {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
				cacheRule, planted = "$HOME/.cache", filepath.Join(b.Home, ".cache", "sysprof", "profiles", "planted")
			}
			t.Cleanup(func() { os.Remove(planted) })
			p := loadProfile(t, profile)
			p.Filesystem.Write = append(p.Filesystem.Write, policy.PathRule{Path: cacheRule})
			wide := filepath.Join(root, as.name+"-cache.yaml")
			if err := policy.Save(wide, p); err != nil {
				t.Fatal(err)
			}
			attack := []redteamAttack{{action: "put=" + planted, line: "put: E", path: planted, unobservable: "file denials"}}
			rep := filepath.Join(root, as.name+"-cache.json")
			r := enforceAs(t, b, as.wrap, wide, rep, "./rt", "benign", attack[0].action, "benign")
			if !strings.HasSuffix(r.Stdout, "benign: ok\n") {
				t.Fatalf("the run did not reach its end: %s", r)
			}
			if _, err := os.Lstat(planted); err == nil {
				t.Errorf("the command planted %s in enforce's cache of parsed profiles", planted)
			}
			checkAttacks(t, b, r, testutil.ReadReport(t, rep), attack, as.wrap != nil)
		})
	}
}

// TestRedTeam6ProfileRewritesItself: the profile a run enforces lies in a directory the profile
// writes ($HOME/.cache, a tool's cache where a user keeps it), and so do the run reports
// (SYSPROF_REPORTS_DIR): the command rewrites the profile so that its next run is enforced
// under a profile of its choosing, and adds a report of its own to the record. The file is protected for the run
// as a protected path is: the write is refused and recorded, or held in the run's changeset as
// dangerous by the profile's path; the file on the host is unchanged (root and ordinary user).
func TestRedTeam6ProfileRewritesItself(t *testing.T) {
	b, root, profile := redteamBox(t)
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			if as.wrap != nil {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
			}
			p := loadProfile(t, profile)
			p.Filesystem.Write = append(p.Filesystem.Write, policy.PathRule{Path: "$HOME/.cache"})
			self := filepath.Join(b.Home, ".cache", as.name+"-self.yaml")
			if err := policy.Save(self, p); err != nil {
				t.Fatal(err)
			}
			if as.wrap != nil {
				chownTree(t, filepath.Dir(self), 65534)
			}
			before, err := os.ReadFile(self)
			if err != nil {
				t.Fatal(err)
			}
			// The run reports (the record `sysprof audit` reads) in the same directory.
			reports := filepath.Join(b.Home, ".cache", as.name+"-reports")
			forged := filepath.Join(reports, "forged.json")
			rep := filepath.Join(root, as.name+"-self.json")
			argv := append(slicesClone(as.wrap), testutil.SysprofBin, "enforce", "-p", self, "--report", rep, "--",
				"./rt", "benign", "write="+self, "put="+forged, "benign")
			r := runPerturbed(t, b, perturbation{name: "redteam6", stdout: "pipe", stdin: "null", env: []string{"SYSPROF_REPORTS_DIR=" + reports}}, argv)
			if !strings.HasSuffix(r.Stdout, "benign: ok\n") {
				t.Fatalf("the run did not reach its end: %s", r)
			}
			if after, _ := os.ReadFile(self); string(after) != string(before) {
				t.Errorf("the command rewrote the profile it runs under (%s): its next run is enforced under the command's own", self)
			}
			if _, err := os.Lstat(forged); err == nil {
				t.Errorf("the command wrote a run report of its own among sysprof's (%s)", forged)
			}
			// $HOME/.cache is bound (each a read-only cover in it: refused, a file denial) or
			// staged (the write held dangerous), as its protected paths decide.
			rp := testutil.ReadReport(t, rep)
			for _, a := range []redteamAttack{
				{action: "write=" + self, line: "write: E", path: self, unobservable: "file denials"},
				{action: "put=" + forged, line: "put: E", path: forged + "|" + reports, unobservable: "file denials"},
			} {
				target := strings.Split(a.path, "|")[0]
				if rp.Changes != nil && slices.ContainsFunc(rp.Changes.Held, func(c report.Change) bool {
					return c.Path == target && c.Class == "dangerous"
				}) {
					continue
				}
				checkAttacks(t, b, r, rp, []redteamAttack{a}, as.wrap != nil)
			}
		})
	}
}
