package runview

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/sysprof/sysprof/audit"
	"github.com/sysprof/sysprof/report"
)

//go:embed assets
var assets embed.FS

var (
	pages = sync.OnceValue(func() *template.Template {
		return template.Must(template.ParseFS(assets, "assets/*.html.tmpl"))
	})
	css = sync.OnceValue(func() template.CSS { return template.CSS(mustRead("assets/style.css")) })
	js  = sync.OnceValue(func() template.JS { return template.JS(mustRead("assets/app.js")) })
)

func mustRead(name string) string {
	b, err := assets.ReadFile(name)
	if err != nil {
		panic("BUG: embedded asset " + name + ": " + err.Error())
	}
	return string(b)
}

// p is report.Printable: names from profiles, traces and reports are hostile input, and
// html/template escapes markup, not the bidi and control characters that make a name read as
// another.
var p = report.Printable

func ps(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = p(v)
	}
	return out
}

type nodeView struct {
	Exe              string
	Depth, Indent    int
	Denied, Changed  bool
	Children         string
	Denials          []Denial
	Held, Creds, DNS []string
	Network          []string
	Files            []Access
	Summary          string
}

// WriteHTML writes the run as one self-contained HTML page: the process tree, each binary
// with what it did, denials and held changes highlighted, filterable. Nothing in it loads
// anything (a Content-Security-Policy of default-src 'none' says so to the browser too).
func (r *Run) WriteHTML(w io.Writer, version string) error {
	var nodes []nodeView
	denied := 0
	r.Walk(func(n *Node) {
		v := nodeView{Exe: p(n.Exe), Depth: n.Depth(), Indent: 20 * n.Depth(), Denied: n.Denied(), Changed: n.Changed,
			Held: ps(n.Held), Creds: ps(n.Creds), DNS: ps(n.DNS), Network: ps(n.Network)}
		if v.Denied {
			denied++
		}
		var kids []string
		for _, c := range n.Children {
			kids = append(kids, p(baseName(c.Exe)))
		}
		v.Children = strings.Join(kids, ", ")
		for _, d := range n.Denials {
			d.What, d.Suggest, d.Kind = p(d.What), p(d.Suggest), p(d.Kind)
			v.Denials = append(v.Denials, d)
		}
		var parts []string
		for _, f := range n.Files {
			v.Files = append(v.Files, Access{Kind: f.Kind, Paths: ps(f.Paths)})
			parts = append(parts, strconv.Itoa(len(f.Paths))+" "+f.Kind)
		}
		if len(n.Network) > 0 {
			parts = append(parts, strconv.Itoa(len(n.Network))+" network")
		}
		v.Summary = "files and network: " + strings.Join(parts, ", ")
		nodes = append(nodes, v)
	})
	data := map[string]any{
		"Version": version, "Title": p(r.Title), "Command": p(strings.Join(r.Command, " ")), "Profile": p(r.Profile),
		"Nodes": nodes, "Denied": denied, "Notes": ps(r.Notes), "Missing": ps(r.Missing), "CSS": css(), "JS": js(),
	}
	if err := pages().ExecuteTemplate(w, "run.html.tmpl", data); err != nil {
		return fmt.Errorf("html: %w", err)
	}
	return nil
}

func baseName(s string) string {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[i+1:]
	}
	return s
}

var classColor = map[audit.Class]string{audit.Suspicious: "#b3261e", audit.Overbroad: "#c26a00", audit.Legitimate: "#1f7a3d"}

type rect struct {
	X, Y, W, H   int
	Color, Title string
}

type bar struct {
	Day   string
	Rects []rect
}

type label struct {
	X, Y int
	Text string
}

type chart struct {
	Width, Height int
	Bars          []bar
	Labels        []label
}

// timeline draws the occurrences per day as stacked bars (suspicious on top), inline SVG.
func timeline(days []audit.DaySplit) chart {
	const h, top, bottom, left, barW, gap = 160, 10, 20, 36, 14, 4
	c := chart{Height: h, Width: left + max(len(days), 1)*(barW+gap) + 10}
	peak := 1
	for _, d := range days {
		t := 0
		for _, n := range d.Counts {
			t += n
		}
		peak = max(peak, t)
	}
	scale := float64(h-top-bottom) / float64(peak)
	for i, d := range days {
		x := left + i*(barW+gap)
		y := h - bottom
		b := bar{Day: d.Day}
		for _, cl := range []audit.Class{audit.Legitimate, audit.Overbroad, audit.Suspicious} {
			n := d.Counts[cl]
			if n == 0 {
				continue
			}
			hh := max(1, int(float64(n)*scale+0.5))
			y -= hh
			b.Rects = append(b.Rects, rect{X: x, Y: y, W: barW, H: hh, Color: classColor[cl], Title: fmt.Sprintf("%s: %d %s", d.Day, n, cl)})
		}
		c.Bars = append(c.Bars, b)
		if i == 0 || i == len(days)-1 || i%7 == 0 {
			c.Labels = append(c.Labels, label{X: x - 4, Y: h - 5, Text: d.Day[5:]})
		}
	}
	c.Labels = append(c.Labels, label{X: 2, Y: top + 8, Text: strconv.Itoa(peak)}, label{X: 2, Y: h - bottom, Text: "0"})
	return c
}

type findingView struct {
	Class                               audit.Class
	What, By, Where, Seen, Reason, Todo string
}

type splitView struct {
	Class                 audit.Class
	Color, Percent        string
	Findings, Occurrences int
}

// WriteAuditHTML writes an audit as one self-contained HTML page: the summary, the split and
// its chart over time, and the findings (most urgent first), filterable by class and text.
func WriteAuditHTML(w io.Writer, res *audit.Result, version string) error {
	s := res.Split()
	occ := 0
	for _, n := range s.Occurrences {
		occ += n
	}
	var split []splitView
	for _, c := range audit.Classes {
		split = append(split, splitView{Class: c, Color: classColor[c], Findings: s.Findings[c], Occurrences: s.Occurrences[c], Percent: audit.Percent(s.Occurrences[c], occ)})
	}
	var fs []findingView
	for i := range res.Findings {
		f := &res.Findings[i]
		fs = append(fs, findingView{Class: f.Class, What: f.Describe(), By: f.Chain(), Where: f.Where(), Seen: f.Seen(), Reason: p(f.Reason), Todo: f.Todo()})
	}
	data := map[string]any{
		"Version": version, "Summary": res.Summary(), "Split": split, "Chart": timeline(res.Timeline()), "Findings": fs,
		"Skipped": ps(res.Skipped), "CSS": css(), "JS": js(),
		"Actions": map[string]string{"suspicious": audit.Suspicious.Action(), "overbroad": audit.Overbroad.Action(), "legitimate": audit.Legitimate.Action()},
	}
	if err := pages().ExecuteTemplate(w, "audit.html.tmpl", data); err != nil {
		return fmt.Errorf("html: %w", err)
	}
	return nil
}
