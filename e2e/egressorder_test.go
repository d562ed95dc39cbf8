package e2e

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// connectExecRun connects to the registry at $2 from bash, writes its request, and execs the
// tool keeping the socket (fd 3), which reads the answer: five times, each racing the proxy's
// lookups of the socket's holders. $1 is the registry the tool's own fetch reaches.
const connectExecRun = `P=$1 X=$2
/usr/bin/python3 tool.py "$P"
for i in 1 2 3 4 5; do
bash -c 'trap "" PIPE; exec 3<>/dev/tcp/127.0.0.1/'"$X"' 2>/dev/null; printf "GET /exfil-exec HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" >&3 2>/dev/null; exec /usr/bin/python3 read3.py'
done
echo run: done
`

const connectExecTool = `import sys, urllib.request
print("tool:", urllib.request.urlopen("http://127.0.0.1:%s/index" % sys.argv[1], timeout=10).read().decode(), flush=True)
`

// connectExecRead is what the tool runs when exec'd with the socket: it prints what came back.
const connectExecRead = `import os
try:
    print("exec:", os.read(3, 4096).decode(errors="replace").replace("\r\n", " "), flush=True)
except OSError as e:
    print("exec: errno", e.errno, flush=True)
`

// TestPerBinaryConnectThenExec (issue 23): a rule learned by a binary does not pass for a
// process that connected and wrote its request and then exec'd the binary keeping the socket,
// however fast it execs: the holders the proxy finds at accept and after the first bytes may
// already run the binary, but the supervisor saw bash make the connect (every connect waits in
// it while a rule names a binary). Refused and on the record as bash's, root and ordinary
// user; the tool's own fetch passes.
func TestPerBinaryConnectThenExec(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "setpriv", "bash")
	root, err := os.MkdirTemp("/var/cache", "sysprof-e2e-connexec-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	b := newBox(t, root, "x", "dev", "work", "")
	testutil.WriteFile(t, filepath.Join(b.Work, "run.sh"), connectExecRun, 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "tool.py"), connectExecTool, 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "read3.py"), connectExecRead, 0o644)
	reg := testutil.Record(t, func(int) string { return "registry ok" })
	P := strconv.Itoa(reg.Port)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := testutil.Port(ln) // the attack's connects are refused while learned
	ln.Close()
	profile := filepath.Join(root, "profile.yaml")
	r := b.Sysprof(t, "learn", "-p", profile, "--", "sh", "run.sh", P, strconv.Itoa(closed))
	if r.Code != 0 || !strings.Contains(r.Stdout, "tool: registry ok") || !strings.Contains(r.Stdout, "run: done") {
		t.Fatalf("learn: %s", r)
	}
	python, err := filepath.EvalSymlinks("/usr/bin/python3")
	if err != nil {
		t.Fatal(err)
	}
	p := loadProfile(t, profile)
	if !slices.ContainsFunc(p.Network.Connect, func(e policy.Endpoint) bool { return e.Endpoint == "127.0.0.1:"+P && e.By == python }) {
		t.Fatalf("learn: no rule for the registry by %s: %+v", python, p.Network.Connect)
	}
	_, before := reg.Received()
	openForNobody(t, root)
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			if as.wrap != nil {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
			}
			rep := filepath.Join(root, as.name+".json")
			r := enforceAs(t, b, as.wrap, profile, rep, "sh", "run.sh", P, P)
			if !strings.Contains(r.Stdout, "tool: registry ok") || !strings.Contains(r.Stdout, "run: done") || strings.Count(r.Stdout, "exec:") != 5 {
				t.Fatalf("the tool's own fetch did not pass, or an attempt did not run: %s", r)
			}
			if strings.Contains(r.Stdout, "exec: HTTP") || strings.Contains(strings.SplitN(r.Stdout, "\n", 2)[1], "registry ok") {
				t.Errorf("an attempt got an answer:\n%s", r.Stdout)
			}
			if _, got := reg.Received(); strings.Contains(got[len(before):], "exfil") {
				t.Errorf("the registry received the attack's request:\n%s", got[len(before):])
			}
			rp := testutil.ReadReport(t, rep)
			if !slices.ContainsFunc(rp.Denials, func(d report.Denial) bool {
				return d.Kind == report.KindNetwork && d.Endpoint == "127.0.0.1:"+P && strings.HasSuffix(d.Exe, "/bash") &&
					strings.Contains(d.What, "(by "+d.Exe+": the rule names "+python+";")
			}) {
				var lines []string
				for _, d := range rp.Denials {
					lines = append(lines, "  "+testutil.DenialString(d))
				}
				t.Errorf("no network denial by bash naming the rule's binary %s:\n%s\nstdout:\n%s", python, strings.Join(lines, "\n"), r.Stdout)
			}
		})
	}
}

// helperRun: git's own fetch ($1: the registry), then the attack (helperAttack) against $2.
const helperRun = `P=$1 X=$2
git ls-remote "http://127.0.0.1:$P/legit" >/dev/null 2>&1; echo "legit rc=$?"
sh attack.sh "$X"
echo run: done
`

// helperAttack: a subshell forked before its parent execs git execs git's HTTP helper, whose
// parent then runs git (its /proc ancestry is git's), and sends it a "list" for $1.
const helperAttack = `X=$1
( sleep 1; exec /usr/lib/git-core/git-remote-http origin "http://127.0.0.1:$X/exfil-helper" <list.txt >/dev/null 2>&1 ) &
exec /usr/bin/git -c 'alias.w=!sleep 3' w
`

// TestPerBinaryHelperForkedBeforeExec (issue 23): under a rule naming git (`by: /usr/bin/git`,
// written by hand: learn names the helper that connected), git's HTTP helper run by git passes
// as root, where execorder.c tells the proxy which file ran the process that connected; one
// forked before its parent exec'd git is refused and on the record, though /proc shows git as
// its parent. As an ordinary user the order of execs is not seen: both are refused, and the
// refusal says a helper passes only where it is seen.
func TestPerBinaryHelperForkedBeforeExec(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "setpriv", "git")
	if _, err := os.Stat("/usr/lib/git-core/git-remote-http"); err != nil {
		testutil.RequireNoErr(t, "git's HTTP helper", err)
	}
	root, err := os.MkdirTemp("/var/cache", "sysprof-e2e-helperorder-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	b := newBox(t, root, "x", "dev", "work", "")
	testutil.WriteFile(t, filepath.Join(b.Work, "run.sh"), helperRun, 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "attack.sh"), helperAttack, 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "list.txt"), "list\n\n", 0o644)
	reg := testutil.Record(t, func(int) string { return "registry ok" })
	P := strconv.Itoa(reg.Port)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := testutil.Port(ln)
	ln.Close()
	profile := filepath.Join(root, "profile.yaml")
	r := b.Sysprof(t, "learn", "-p", profile, "--", "sh", "run.sh", P, strconv.Itoa(closed))
	if r.Code != 0 || !strings.Contains(r.Stdout, "run: done") {
		t.Fatalf("learn: %s", r)
	}
	p := loadProfile(t, profile)
	named := false
	for i, e := range p.Network.Connect {
		if e.Endpoint == "127.0.0.1:"+P {
			p.Network.Connect[i].By, named = "/usr/bin/git", true
		}
	}
	if !named {
		t.Fatalf("learn: no rule for the registry: %+v", p.Network.Connect)
	}
	if err := policy.Save(profile, p); err != nil {
		t.Fatal(err)
	}
	openForNobody(t, root)
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			if as.wrap != nil {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
			}
			_, before := reg.Received()
			rep := filepath.Join(root, as.name+".json")
			r := enforceAs(t, b, as.wrap, profile, rep, "sh", "run.sh", P, P)
			if !strings.Contains(r.Stdout, "run: done") {
				t.Fatalf("the run did not finish: %s", r)
			}
			_, got := reg.Received()
			got = got[len(before):]
			if strings.Contains(got, "exfil") {
				t.Errorf("the registry received the forked helper's request:\n%s", got)
			}
			rp := testutil.ReadReport(t, rep)
			var lines []string
			for _, d := range rp.Denials {
				lines = append(lines, "  "+testutil.DenialString(d))
			}
			helperDenials := 0
			for _, d := range rp.Denials {
				if d.Kind == report.KindNetwork && d.Endpoint == "127.0.0.1:"+P && strings.HasSuffix(d.Exe, "/git-remote-http") &&
					strings.Contains(d.What, "the rule names /usr/bin/git;") {
					helperDenials += d.Count
				}
			}
			if as.wrap == nil { // root: git's own helper passes, the forked one does not
				if !strings.Contains(got, "/legit/info/refs") || helperDenials != 1 {
					t.Errorf("root: git's helper reached the registry %v (want true), helper refusals %d (want 1, the forked one):\n%s\nregistry:\n%s",
						strings.Contains(got, "/legit/info/refs"), helperDenials, strings.Join(lines, "\n"), got)
				}
				return
			}
			if helperDenials != 2 || !slices.ContainsFunc(rp.Denials, func(d report.Denial) bool { return strings.Contains(d.What, "only where the order of execs is seen") }) {
				t.Errorf("ordinary user: helper refusals %d (want 2, saying why):\n%s", helperDenials, strings.Join(lines, "\n"))
			}
		})
	}
}

// rewriteRun: the tool (a copy of python3 in the work tree) fetches from $1, then curl's bytes
// are written over bin/$3 in place (the same inode) and run from there against $2.
const rewriteRun = `P=$1 X=$2 T=$3
bin/tool fetch.py "$P"
cat /usr/bin/curl > "bin/$T" 2>/dev/null; echo "rewrite rc=$?"
printf 'rewritten:'; "bin/$T" -sS -m 10 "http://127.0.0.1:$X/exfil-rewrite" 2>/dev/null; echo " rc=$?"
echo run: done
`

// TestPerBinaryRuleBinaryRewritten (issue 23): a rule's binary that lies in a writable path
// (here $WORKDIR/bin, granted as a directory) keeps its identity when rewritten in place, so a
// command could write its own program over it and borrow the rule: enforce binds it read-only
// over itself (the write fails, the rule's binary stays the tool), says so, and the registry
// sees no request of the rewritten file; root and ordinary user.
func TestPerBinaryRuleBinaryRewritten(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "setpriv", "curl")
	root, err := os.MkdirTemp("/var/cache", "sysprof-e2e-rewrite-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	b := newBox(t, root, "x", "dev", "work", "")
	python, err := filepath.EvalSymlinks("/usr/bin/python3")
	if err != nil {
		t.Fatal(err)
	}
	tool := filepath.Join(b.Work, "bin", "tool")
	fresh := func() {
		body, err := os.ReadFile(python)
		if err != nil {
			t.Fatal(err)
		}
		testutil.WriteFile(t, tool, string(body), 0o755)
	}
	fresh()
	testutil.WriteFile(t, filepath.Join(b.Work, "run.sh"), rewriteRun, 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "fetch.py"), connectExecTool, 0o644)
	reg := testutil.Record(t, func(int) string { return "registry ok" })
	P := strconv.Itoa(reg.Port)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := testutil.Port(ln)
	ln.Close()
	profile := filepath.Join(root, "profile.yaml")
	// Learned against another file (bin/other), so that the profile names no write of the tool.
	r := b.Sysprof(t, "learn", "--accept-risky", "-p", profile, "--", "sh", "run.sh", P, strconv.Itoa(closed), "other")
	if r.Code != 0 || !strings.Contains(r.Stdout, "tool: registry ok") || !strings.Contains(r.Stdout, "run: done") {
		t.Fatalf("learn: %s", r)
	}
	p := loadProfile(t, profile)
	if !slices.ContainsFunc(p.Network.Connect, func(e policy.Endpoint) bool { return e.Endpoint == "127.0.0.1:"+P && e.By == "$WORKDIR/bin/tool" }) {
		t.Fatalf("learn: no rule for the registry by $WORKDIR/bin/tool: %+v", p.Network.Connect)
	}
	p.Filesystem.Write = append(p.Filesystem.Write, policy.PathRule{Path: "$WORKDIR/bin"}) // the directory: the tool lies in it
	if err := policy.Save(profile, p); err != nil {
		t.Fatal(err)
	}
	openForNobody(t, root)
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			fresh()
			if as.wrap != nil {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
			}
			_, before := reg.Received()
			rep := filepath.Join(root, as.name+".json")
			r := enforceAs(t, b, as.wrap, profile, rep, "sh", "run.sh", P, P, "tool")
			if !strings.Contains(r.Stdout, "tool: registry ok") || !strings.Contains(r.Stdout, "run: done") {
				t.Fatalf("the tool's own fetch did not pass: %s", r)
			}
			if _, got := reg.Received(); strings.Contains(got[len(before):], "exfil") {
				t.Errorf("the registry received the rewritten file's request:\n%s\nstdout:\n%s", got[len(before):], r.Stdout)
			}
			if strings.Contains(r.Stdout, "rewrite rc=0") {
				t.Errorf("the tool was rewritten in place:\n%s", r.Stdout)
			}
			rp := testutil.ReadReport(t, rep)
			if !slices.ContainsFunc(rp.Notes, func(n string) bool { return strings.Contains(n, "by "+tool+": bound read-only") }) {
				t.Errorf("no note says the tool is bound read-only: %q", rp.Notes)
			}
		})
	}
}
