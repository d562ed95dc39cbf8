package runview

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/sysprof/sysprof/audit"
	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/report"
)

// chromium runs headless Chromium on a local file, offline (no background networking, no
// component updates, a fresh profile), with extra arguments (--dump-dom, --screenshot=...).
func chromium(t *testing.T, page string, args ...string) string {
	t.Helper()
	bin := testutil.RequireTool(t, "chromium")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	argv := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
		"--user-data-dir=" + t.TempDir(), "--window-size=1280,900"}, args...)
	cmd := exec.CommandContext(ctx, bin, append(argv, "file://"+page)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// screenshot saves a picture of the page for the test log: in $SYSPROF_SCREENSHOTS when set
// (kept), else in the test's temp directory.
func screenshot(t *testing.T, page, name string) {
	t.Helper()
	dir := os.Getenv("SYSPROF_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	shot := filepath.Join(dir, name)
	chromium(t, page, "--screenshot="+shot, "--hide-scrollbars")
	fi, err := os.Stat(shot)
	if err != nil || fi.Size() == 0 {
		t.Fatalf("no screenshot at %s: %v", shot, err)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, fi.Size())
}

// elements returns the elements of the DOM for which keep is true.
func elements(t *testing.T, dom string, keep func(*html.Node) bool) []*html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(dom))
	if err != nil {
		t.Fatalf("parse the DOM Chromium built: %v", err)
	}
	var out []*html.Node
	for n := range doc.Descendants() {
		if n.Type == html.ElementNode && keep(n) {
			out = append(out, n)
		}
	}
	return out
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, c string) bool {
	return slices.Contains(strings.Fields(attr(n, "class")), c)
}

// The run page in a real browser: the tree shows every binary of the known run, exactly the
// denied ones are marked, and the page's script ran (offline).
func TestRunPageInChromium(t *testing.T) {
	r, all, denied := knownRun()
	page := filepath.Join(t.TempDir(), "run.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteHTML(f, "test"); err != nil {
		t.Fatal(err)
	}
	f.Close()

	dom := chromium(t, page, "--dump-dom")
	if len(elements(t, dom, func(n *html.Node) bool { return n.Data == "body" && attr(n, "data-ready") == "true" })) != 1 {
		t.Errorf("the page's script did not run in Chromium (body has no data-ready)")
	}
	procs := elements(t, dom, func(n *html.Node) bool { return n.Data == "li" && hasClass(n, "proc") })
	var shown []string
	for _, n := range procs {
		exe := attr(n, "data-exe")
		shown = append(shown, exe)
		if hasClass(n, "denied") != denied[exe] {
			t.Errorf("%s: marked denied = %v, want %v", exe, hasClass(n, "denied"), denied[exe])
		}
	}
	slices.Sort(shown)
	want := slices.Clone(all)
	slices.Sort(want)
	if !slices.Equal(shown, want) {
		t.Errorf("the tree in the browser shows %q, want every binary of the run %q", shown, want)
	}
	// Depth: curl under dash under node under env.
	for _, n := range procs {
		if attr(n, "data-exe") == "/usr/bin/curl" && attr(n, "data-depth") != "3" {
			t.Errorf("curl at depth %s, want 3 (env > node > dash > curl)", attr(n, "data-depth"))
		}
	}
	screenshot(t, page, "runview-run.png")
}

// The audit page in a real browser: every finding is a row with its class, the chart has a
// bar per day.
func TestAuditPageInChromium(t *testing.T) {
	dir := t.TempDir()
	day := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	for i := range 12 {
		e := report.NewEnvelope(report.RunEnforce, "test")
		e.Host, e.Project, e.Step, e.Time = "ci-"+string(rune('a'+i%3)), "webapp", "lint", day.Add(time.Duration(i)*24*time.Hour)
		e.Report = report.New([]string{"npx", "markdownlint", "."}, "p.yaml", false)
		e.Report.Add(report.Denial{Kind: report.KindFile, What: "cache write", Path: "$HOME/.cache/markdownlint/x", Access: "write", Exe: "/usr/bin/node"})
		if i%4 == 0 {
			e.Report.Add(report.Denial{Kind: report.KindFile, What: "sdk read", Path: "$WORKDIR/node_modules/@aws-sdk/client-s3/index.js", Access: "read", Exe: "/usr/bin/node"})
		}
		if i == 7 {
			e.Report.Add(report.Denial{Kind: report.KindFile, What: "hook write", Path: "$WORKDIR/.git/hooks/pre-commit", Access: "write", Exe: hostile})
		}
		if _, err := e.SaveIn(dir); err != nil {
			t.Fatal(err)
		}
	}
	res, err := audit.Read([]string{dir}, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "audit.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteAuditHTML(f, res, "test"); err != nil {
		t.Fatal(err)
	}
	f.Close()

	dom := chromium(t, page, "--dump-dom")
	rows := elements(t, dom, func(n *html.Node) bool { return n.Data == "tr" && attr(n, "data-class") != "" })
	var classes []string
	for _, n := range rows {
		classes = append(classes, attr(n, "data-class"))
	}
	if want := []string{"suspicious", "overbroad", "legitimate"}; !slices.Equal(classes, want) {
		t.Errorf("finding rows in the browser: %q, want %q (suspicious first)", classes, want)
	}
	if bars := elements(t, dom, func(n *html.Node) bool { return n.Data == "g" && attr(n, "data-day") != "" }); len(bars) != 12 {
		t.Errorf("chart has %d day bars, want 12", len(bars))
	}
	screenshot(t, page, "runview-audit.png")
}
