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
	"github.com/sysprof/sysprof/report"
)

// perBinaryRun is the command of TestPerBinaryEgressExactBinary: the tool (python3) fetches
// its index from the registry at $1 and runs its lifecycle script; then a process forked
// before its parent exec'd the tool connects. $2 is where the payloads connect: a closed port
// when learned (they stay dormant, their calls learned, nothing granted), the registry when
// enforced.
const perBinaryRun = `P=$1 X=$2
/usr/bin/python3 tool.py "$P" "$X"
sh -c '( sleep 1; printf "forked:"; curl -sS -m 10 http://127.0.0.1:'"$X"'/exfil-forked 2>/dev/null; echo " rc=$?" ) & exec /usr/bin/python3 -c "import time; time.sleep(3)"'
echo run: done
`

const perBinaryTool = `import subprocess, sys, urllib.request
print("tool:", urllib.request.urlopen("http://127.0.0.1:%s/index" % sys.argv[1], timeout=10).read().decode(), flush=True)
subprocess.run(["sh", "lifecycle.sh", sys.argv[2]])
`

// perBinaryLifecycle is the tool's lifecycle script (an npm postinstall, a git hook): it
// connects itself, and through a copy of the tool's own bytes.
const perBinaryLifecycle = `X=$1
mkdir -p out && cp "$(readlink -f /usr/bin/python3)" out/x
printf 'hook:'; curl -sS -m 10 http://127.0.0.1:$X/exfil-hook 2>/dev/null; echo " rc=$?"
printf 'copy:'; out/x -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$X/exfil-copy', timeout=10).read().decode())" 2>/dev/null; echo " rc=$?"
`

// TestPerBinaryEgressExactBinary (issue 23, red team 5): a network rule learned by a binary
// (`by: B`) passes for B's very file and the transport helpers it runs, not for whatever runs
// under B. Under the profile learned from the tool (python3 fetching from a loopback registry),
// a payload (a) forked before its parent exec'd the tool, (b) run as the tool's lifecycle
// script, (c) running a copy of the tool's bytes elsewhere connects to the registry: each is
// refused and on the record ("by /usr/bin/curl: the rule names /usr/bin/python3.N"), and the
// registry sees none of them, as root and as an ordinary user; the tool's own fetch passes.
func TestPerBinaryEgressExactBinary(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "setpriv", "curl")
	root, err := os.MkdirTemp("/var/cache", "sysprof-e2e-perbinary-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	b := newBox(t, root, "x", "dev", "work", "")
	testutil.WriteFile(t, filepath.Join(b.Work, "run.sh"), perBinaryRun, 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "tool.py"), perBinaryTool, 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "lifecycle.sh"), perBinaryLifecycle, 0o644)
	reg := testutil.Record(t, func(int) string { return "registry ok" })
	P := strconv.Itoa(reg.Port)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := testutil.Port(ln) // closed again: the payloads' connects are refused while learned
	ln.Close()
	profile := filepath.Join(root, "profile.yaml")
	// --accept-risky: the lifecycle script runs the copy it wrote (pending otherwise).
	r := b.Sysprof(t, "learn", "--accept-risky", "-p", profile, "--", "sh", "run.sh", P, strconv.Itoa(closed))
	if r.Code != 0 || !strings.Contains(r.Stdout, "tool: registry ok") || !strings.Contains(r.Stdout, "run: done") {
		t.Fatalf("learn: %s", r)
	}
	p := loadProfile(t, profile)
	python, err := filepath.EvalSymlinks("/usr/bin/python3") // the system one: nobody reaches no per-user install
	if err != nil {
		t.Fatal(err)
	}
	var by []string
	for _, e := range p.Network.Connect {
		if e.Endpoint == "127.0.0.1:"+P {
			by = append(by, e.By)
		}
	}
	if len(by) != 1 || by[0] != python {
		t.Fatalf("learn: the registry's rule names %q, want the tool alone (%s): %+v", by, python, p.Network.Connect)
	}
	_, before := reg.Received()
	openForNobody(t, root)
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			if as.wrap != nil {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
			}
			os.RemoveAll(filepath.Join(b.Work, "out"))
			rep := filepath.Join(root, as.name+".json")
			r := enforceAs(t, b, as.wrap, profile, rep, "sh", "run.sh", P, P)
			if !strings.Contains(r.Stdout, "tool: registry ok") || !strings.Contains(r.Stdout, "run: done") {
				t.Fatalf("the tool's own fetch did not pass: %s", r)
			}
			for _, k := range []string{"forked:", "hook:", "copy:"} {
				i := strings.Index(r.Stdout, k)
				if i < 0 {
					t.Errorf("%s no line: %s", k, r.Stdout)
					continue
				}
				line, _, _ := strings.Cut(r.Stdout[i:], "\n")
				if strings.Contains(line, "registry ok") || strings.HasSuffix(line, " rc=0") {
					t.Errorf("%s got through: %q", k, line)
				}
			}
			if _, got := reg.Received(); strings.Contains(got[len(before):], "exfil") {
				t.Errorf("the registry received a payload's request:\n%s", got[len(before):])
			}
			rp := testutil.ReadReport(t, rep)
			for _, c := range []struct{ attack, exe string }{{"forked", "/curl"}, {"hook", "/curl"}, {"copy", "/out/x"}} {
				if !slices.ContainsFunc(rp.Denials, func(d report.Denial) bool {
					return d.Kind == report.KindNetwork && d.Endpoint == "127.0.0.1:"+P && strings.HasSuffix(d.Exe, c.exe) &&
						strings.Contains(d.What, "(by "+d.Exe+": the rule names "+python+";")
				}) {
					var lines []string
					for _, d := range rp.Denials {
						lines = append(lines, "  "+testutil.DenialString(d))
					}
					t.Errorf("%s: no network denial by %s naming the rule's binary %s:\n%s\nstdout:\n%s", c.attack, c.exe, python, strings.Join(lines, "\n"), r.Stdout)
				}
			}
		})
	}
}
