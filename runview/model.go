package runview

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/trace"
)

// Run is the picture of one run (or of a profile): a process tree whose nodes say what each
// binary did.
type Run struct {
	Title   string
	Command []string
	Profile string
	Roots   []*Node
	// Notes are what the page should say about the run (audit mode, degraded layers).
	Notes []string
	// Missing says what this picture cannot show, given its sources.
	Missing []string

	byExe map[string]*Node
}

// Node is one binary in the tree (every run of the same binary under the same parent folds
// into one node).
type Node struct {
	Exe      string
	SHA256   string
	Changed  bool // content differs from what the profile hashed
	Children []*Node
	Files    []Access // by kind: read, write, exec, list
	Network  []string // "connect registry.example.com:443 tcp"
	DNS      []string // names looked up or connected to by name
	Denials  []Denial
	Held     []string
	Creds    []string // credentials it used: credential stores read, secret variables passed
	parent   *Node
}

// Access is the paths of one kind of file access.
type Access struct {
	Kind  string
	Paths []string
}

// Denial is one refused (or, in audit mode, reported) operation of a node.
type Denial struct {
	Kind, What, Suggest, Risk string
	Count                     int
	Allowed                   bool
}

// Denied reports whether anything of the node was denied.
func (n *Node) Denied() bool { return len(n.Denials) > 0 }

// Depth is the node's depth in the tree (0 for a root).
func (n *Node) Depth() int {
	d := 0
	for p := n.parent; p != nil; p = p.parent {
		d++
	}
	return d
}

// Walk visits the nodes in tree order (pre-order, children sorted by name).
func (r *Run) Walk(visit func(*Node)) {
	var walk func([]*Node)
	walk = func(ns []*Node) {
		for _, n := range ns {
			visit(n)
			walk(n.Children)
		}
	}
	walk(r.Roots)
}

// Nodes is the tree in Walk order.
func (r *Run) Nodes() []*Node {
	var out []*Node
	r.Walk(func(n *Node) { out = append(out, n) })
	return out
}

func newRun(title string) *Run { return &Run{Title: title, byExe: map[string]*Node{}} }

// node returns the node of exe, made under parent when new ("" parent: a root). A binary seen
// under two parents stays under the first.
func (r *Run) node(exe, parent string) *Node {
	if n := r.byExe[exe]; n != nil {
		return n
	}
	n := &Node{Exe: exe}
	r.byExe[exe] = n
	if parent != "" && parent != exe {
		p := r.byExe[parent]
		if p == nil {
			p = r.node(parent, "")
		}
		// Never under a descendant of its own (a cycle in by: chains).
		for a := p; a != nil; a = a.parent {
			if a == n {
				p = nil
				break
			}
		}
		if p != nil {
			n.parent = p
			p.Children = append(p.Children, n)
			return n
		}
	}
	r.Roots = append(r.Roots, n)
	return n
}

// FromProfile is the picture of what a profile allows, binary by binary: the tree from each
// binary's by: (the binary that ran it), and each allowance under the binary that first needed
// it. A profile keeps one parent per binary and no per-run counts.
func FromProfile(path string, p *policy.Profile) *Run {
	r := newRun("profile " + path)
	r.Command, r.Profile = p.Metadata.Command, path
	// Parents before children: a binary whose by: is another binary's path hangs under it.
	bins := slices.Clone(p.Binaries)
	known := map[string]bool{}
	for _, b := range bins {
		known[b.Path] = true
	}
	for _, b := range bins {
		if b.By == "" || b.By == b.Path || !known[b.By] {
			n := r.node(b.Path, "")
			n.SHA256 = b.SHA256
		}
	}
	for range len(bins) { // each pass hangs one more level
		for _, b := range bins {
			if _, done := r.byExe[b.Path]; done || !(r.byExe[b.By] != nil) {
				continue
			}
			r.node(b.Path, b.By).SHA256 = b.SHA256
		}
	}
	for _, b := range bins {
		if r.byExe[b.Path] == nil {
			r.node(b.Path, "").SHA256 = b.SHA256
		}
	}
	owner := func(by string) *Node {
		if by == "" || by == "any" || r.byExe[by] == nil {
			if len(r.Roots) > 0 && (by == "" || by == "any") {
				return r.Roots[0]
			}
			if by == "" {
				return r.node("(the command)", "")
			}
			return r.node(by, "")
		}
		return r.byExe[by]
	}
	for _, s := range []struct {
		kind  string
		rules []policy.PathRule
	}{{"read", p.Filesystem.Read}, {"write", p.Filesystem.Write}, {"exec", p.Filesystem.Exec}, {"list", p.Filesystem.List}} {
		for _, rule := range s.rules {
			n := owner(rule.By)
			n.addFile(s.kind, rule.Path)
			if s.kind == "read" && paths.CredentialStore(rule.Path) != "" {
				n.Creds = append(n.Creds, "reads credential store "+rule.Path)
			}
		}
	}
	for _, s := range []struct {
		op  string
		eps []policy.Endpoint
	}{{"connect", p.Network.Connect}, {"send", p.Network.Send}, {"bind", p.Network.Bind}} {
		for _, e := range s.eps {
			n := owner(e.By)
			n.Network = append(n.Network, strings.TrimSpace(s.op+" "+e.Endpoint+" "+e.Proto))
			if a, err := policy.ParseEndpoint(e.Endpoint); err == nil && a.Host != "" {
				n.DNS = appendNew(n.DNS, a.Host)
			}
		}
	}
	if len(p.Env.Pass) > 0 && len(r.Roots) > 0 {
		r.Roots[0].Creds = append(r.Roots[0].Creds, "secret environment variables passed: "+strings.Join(p.Env.Pass, ", "))
	}
	r.Missing = append(r.Missing, "a profile keeps one parent per binary (its by:) and no counts: a learn trace (--trace) has the full tree")
	r.sort()
	return r
}

func (n *Node) addFile(kind, path string) {
	for i := range n.Files {
		if n.Files[i].Kind == kind {
			n.Files[i].Paths = appendNew(n.Files[i].Paths, path)
			return
		}
	}
	n.Files = append(n.Files, Access{Kind: kind, Paths: []string{path}})
}

func appendNew(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// AddReport marks what an enforce report says: every denial under its binary (hung under its
// parent chain when the binary is new), and the binaries whose content changed.
func (r *Run) AddReport(rep *report.Report) {
	if rep.Audit {
		r.Notes = append(r.Notes, "audit mode: nothing was blocked; the marked operations would have been denied")
	}
	for _, l := range rep.Degraded() {
		r.Notes = append(r.Notes, "layer "+l.Name+" was not applied (degraded): "+l.Detail)
	}
	if len(r.Command) == 0 {
		r.Command = rep.Command
	}
	for _, d := range rep.Denials {
		// Parents run from the parent up to the sandbox root: hang the chain root-first.
		parent := ""
		for i := len(d.Parents) - 1; i >= 0; i-- {
			r.node(d.Parents[i], parent)
			parent = d.Parents[i]
		}
		n := r.node(d.Exe, parent)
		n.Denials = append(n.Denials, Denial{Kind: string(d.Kind), What: d.What, Suggest: d.Suggest, Risk: d.Risk.String(), Count: d.Count, Allowed: d.Allowed})
		if d.Kind == report.KindFile && paths.CredentialStore(d.Path) != "" {
			n.Creds = append(n.Creds, "tried credential store "+d.Path)
		}
	}
	if ch := rep.Changes; ch != nil && len(r.Roots) > 0 {
		// The changeset is the run's, not one binary's: its held changes hang on the root.
		for _, h := range ch.Held {
			if h.State != report.ChangeStripped && h.Class != "learned" {
				r.Roots[0].Held = append(r.Roots[0].Held, h.Class+": "+h.Op+" "+h.Path+" ("+h.Reason+")")
			}
		}
	}
	for _, u := range rep.CredentialUses {
		n := r.node(u.Binary, "")
		n.Creds = append(n.Creds, fmt.Sprintf("used %s: %s %s%s → %d", u.Credential, u.Method, u.Host, u.Path, u.Status))
	}
	for _, b := range rep.ChangedBinaries {
		n := r.node(b.Path, "")
		n.Changed = true
	}
	r.Missing = appendNew(r.Missing, "an enforce report names the binaries that were denied something and their parents; allowed work is the profile's, not counted per run")
	r.sort()
}

// FromTrace is the picture of a learn run: its real process tree and, per binary, the files,
// endpoints and DNS answers it was seen using.
func FromTrace(tr *trace.Trace) *Run {
	r := newRun("learn trace of " + strings.Join(tr.Command, " "))
	r.Command = tr.Command
	byID := map[int]trace.Process{}
	for _, p := range tr.Processes {
		byID[p.ID] = p
	}
	for _, p := range tr.Processes {
		parent := ""
		if pp, ok := byID[p.Parent]; ok {
			parent = pp.Exe
		}
		if parent != "" && r.byExe[parent] == nil {
			r.node(parent, "")
		}
		n := r.node(p.Exe, parent)
		n.SHA256 = p.SHA256
	}
	for _, f := range tr.Files {
		if f.OK {
			r.node(f.Exe, "").addFile(f.Access, f.Path)
		}
	}
	for _, a := range tr.Network {
		n := r.node(a.Exe, "")
		ep := a.Path
		if ep == "" {
			ep = a.Addr + ":" + strconv.Itoa(a.Port)
		}
		if a.Host != "" {
			ep = a.Host + " (" + ep + ")"
			n.DNS = appendNew(n.DNS, a.Host)
		}
		n.Network = append(n.Network, strings.TrimSpace(a.Op+" "+ep+" "+a.Proto))
	}
	if tr.Incomplete {
		r.Notes = append(r.Notes, "the trace is incomplete: "+strings.Join(tr.Reasons, "; "))
	}
	r.sort()
	return r
}

func (r *Run) sort() {
	byName := func(a, b *Node) int { return strings.Compare(a.Exe, b.Exe) }
	slices.SortFunc(r.Roots, byName)
	r.Walk(func(n *Node) {
		slices.SortFunc(n.Children, byName)
		for i := range n.Files {
			slices.Sort(n.Files[i].Paths)
		}
		order := map[string]int{"exec": 0, "write": 1, "create": 2, "delete": 3, "read": 4, "list": 5, "metadata": 6}
		slices.SortFunc(n.Files, func(a, b Access) int { return order[a.Kind] - order[b.Kind] })
		slices.Sort(n.Network)
		slices.Sort(n.DNS)
	})
}
