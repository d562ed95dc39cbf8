package runview

import (
	"fmt"
	"io"
	"strings"
)

// WriteTree draws the process tree for a terminal, one binary a line, with what it did in
// brief and its denials under it. Names are escaped.
func (r *Run) WriteTree(w io.Writer) {
	var draw func(n *Node, prefix string, last, root bool)
	draw = func(n *Node, prefix string, last, root bool) {
		branch, more := "├── ", "│   "
		if last {
			branch, more = "└── ", "    "
		}
		if root {
			branch, more = "", ""
		}
		var facts []string
		for _, f := range n.Files {
			facts = append(facts, fmt.Sprintf("%d %s", len(f.Paths), f.Kind))
		}
		if len(n.Network) > 0 {
			facts = append(facts, fmt.Sprintf("%d network", len(n.Network)))
		}
		if n.Changed {
			facts = append(facts, "BINARY CHANGED")
		}
		line := prefix + branch + p(n.Exe)
		if len(facts) > 0 {
			line += "  (" + strings.Join(facts, ", ") + ")"
		}
		if n.Denied() {
			line += fmt.Sprintf("  [%d DENIED]", len(n.Denials))
		}
		fmt.Fprintln(w, line)
		for _, d := range n.Denials {
			verb := "denied"
			if d.Allowed {
				verb = "would be denied"
			}
			fmt.Fprintf(w, "%s%s  ! %s %s: %s\n", prefix, more, verb, p(d.Kind), p(d.What))
		}
		for _, h := range n.Held {
			fmt.Fprintf(w, "%s%s  ~ held: %s\n", prefix, more, p(h))
		}
		for i, c := range n.Children {
			draw(c, prefix+more, i == len(n.Children)-1, false)
		}
	}
	for _, n := range r.Roots {
		draw(n, "", true, true)
	}
}
