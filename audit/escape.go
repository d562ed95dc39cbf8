package audit

import (
	"fmt"
	"strings"
	"time"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// Kinds of escape.
const (
	KindFile    = "file"
	KindNetwork = "network"
	KindSyscall = "syscall"
	KindBinary  = "binary" // a binary whose content is not what its profile hashed
	KindOther   = "other"  // a drift change of another section (architectures, env, hostRoot)
)

// Escape is one thing a run needed beyond its profile: a denial (enforced or audited), a
// changed binary, or a widening drift change. It is what Fold groups into findings.
type Escape struct {
	Kind   string `json:"kind"`
	Access string `json:"access,omitempty"` // read, write, create, delete, exec, list; connect, send, bind
	// Target is what was reached: a path, an endpoint (host:port, ADDR:port, unix:PATH) or a
	// syscall name.
	Target string `json:"target"`
	Host   string `json:"host,omitempty"`  // the DNS name behind a network endpoint, when known
	Proto  string `json:"proto,omitempty"` // tcp, udp, ...
	// What is the report's own wording ("$HOME/.ssh/id_rsa read"), Change the profile change
	// that would allow it ("filesystem.read: + $HOME/.ssh").
	What    string   `json:"what"`
	Change  string   `json:"change,omitempty"`
	Exe     string   `json:"exe"`
	Parents []string `json:"parents,omitempty"`
	Risk    policy.Risk
	RiskWhy string `json:"riskWhy,omitempty"`
	Count   int    `json:"count"`
	// Dangerous: the run's changeset held it as dangerous (changeset.Classify's verdict).
	Dangerous bool `json:"dangerous,omitempty"`
}

// Run is what Fold needs of one run report besides its escapes.
type Run struct {
	Source     string // the file
	Kind       string // report.Run*
	Host       string
	Project    string
	Step       string
	Role       string // the role in force (set, or guessed by GuessRole)
	Time       time.Time
	KnownHosts []string // the profile's named endpoints
}

// Escapes lists the escapes of one run report.
func Escapes(e *report.Envelope) []Escape {
	var out []Escape
	if e.Report != nil {
		for i := range e.Report.Denials {
			out = append(out, fromDenial(&e.Report.Denials[i]))
		}
		// A held change is an escape like a denial: the write the run attempted outside what
		// was learned. A dangerous one has no rule to suggest and is kept all the same.
		if ch := e.Report.Changes; ch != nil {
			for _, h := range ch.Held {
				if h.State == report.ChangeStripped || h.Class == "learned" {
					continue
				}
				d, ok := h.Denial(e.Report.Finished)
				if !ok {
					d = report.Denial{Kind: report.KindFile, Path: h.Path, Access: "write", Exe: "(changeset)", Count: 1,
						What: fmt.Sprintf("%s %s (%s: %s)", h.Path, h.Op, h.Class, h.Reason), Suggest: "none: " + h.Reason, Risk: h.Risk}
				}
				esc := fromDenial(&d)
				esc.Dangerous = h.Class == "dangerous"
				out = append(out, esc)
			}
		}
		for _, b := range e.Report.ChangedBinaries {
			out = append(out, Escape{Kind: KindBinary, Access: "changed", Target: b.Path, Exe: b.Path, Count: 1,
				What:   "binary changed: " + b.Path + " (sha256 " + short(b.Learned) + " → " + short(b.Now) + ")",
				Change: "re-learn (the profile's binaries: sha256)", Risk: policy.RiskHigh, RiskWhy: "binary content changed since learn"})
		}
	}
	for _, c := range e.Drift {
		if c.Widens {
			out = append(out, fromChange(c))
		}
	}
	return out
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// fileAccess maps a profile section to the access it grants.
var sectionAccess = map[string]string{
	policy.SectionRead: "read", policy.SectionWrite: "write", policy.SectionExec: "exec", policy.SectionList: "list",
	policy.SectionConnect: "connect", policy.SectionSend: "send", policy.SectionBind: "bind",
}

func fromDenial(d *report.Denial) Escape {
	e := Escape{Access: d.Access, What: d.What, Change: d.Suggest, Exe: d.Exe, Parents: d.Parents,
		Risk: d.Risk, Count: max(d.Count, 1), Host: d.Host, Proto: d.Proto}
	g, hasGrant := d.Suggested()
	switch d.Kind {
	case report.KindFile:
		// The change's path is portable ($WORKDIR/..., $HOME/...): the same escape on two
		// machines folds into one finding. The denial's own path may be the host's.
		e.Kind, e.Target = KindFile, d.Path
		if hasGrant && sectionAccess[g.Section] != "" && g.Item != "" {
			e.Target = g.Item
		}
		if e.Access == "" && hasGrant {
			e.Access = sectionAccess[g.Section]
		}
	case report.KindNetwork:
		e.Kind, e.Target = KindNetwork, d.Endpoint
		if e.Target == "" && hasGrant {
			e.Target = g.Item
		}
		if hasGrant {
			e.Access = sectionAccess[g.Section]
		}
		if e.Access == "" {
			e.Access = "connect"
		}
	default:
		e.Kind, e.Target = KindSyscall, d.Syscall
		if e.Target == "" {
			e.Target, _, _ = strings.Cut(d.What, "(")
		}
	}
	if e.Target == "" {
		e.Target = d.What
	}
	return e
}

func fromChange(c policy.Change) Escape {
	e := Escape{What: string(c.Kind) + " " + c.Section + ": " + c.Item, Change: c.Section + ": + " + c.Item,
		Exe: c.By, Risk: c.Risk, RiskWhy: c.Reason, Count: 1, Access: sectionAccess[c.Section], Target: c.Item}
	switch c.Section {
	case policy.SectionRead, policy.SectionWrite, policy.SectionExec, policy.SectionList:
		e.Kind = KindFile
	case policy.SectionHidden:
		// A credential store the command now touches ("PATH: ACCESS by EXE"): a secret read.
		e.Kind = KindFile
		path, rest, _ := strings.Cut(c.Item, ": ")
		access, by, _ := strings.Cut(rest, " by ")
		e.Target, e.Access = path, access
		if e.Exe == "" {
			e.Exe = by
		}
		e.Change = ""
	case policy.SectionConnect, policy.SectionSend, policy.SectionBind:
		e.Kind = KindNetwork
		// Item is "PROTO ENDPOINT" or "ENDPOINT PROTO": the endpoint is the word with a ':'.
		for _, w := range strings.Fields(c.Item) {
			if strings.Contains(w, ":") {
				e.Target = w
			} else {
				e.Proto = w
			}
		}
	case policy.SectionSyscalls:
		e.Kind = KindSyscall
	case policy.SectionArgs:
		e.Kind = KindSyscall
		e.Target, _, _ = strings.Cut(c.Item, " ")
	case policy.SectionBinaries:
		e.Target, _, _ = strings.Cut(c.Item, " ")
		if c.Kind == policy.Added {
			// A binary the profile never ran: an exec by the one that started it (By).
			e.Kind, e.Access = KindFile, "exec"
			break
		}
		e.Kind, e.Access, e.Exe = KindBinary, "changed", e.Target
	default:
		e.Kind = KindOther
	}
	return e
}
