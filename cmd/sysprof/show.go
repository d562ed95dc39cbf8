package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/sysprof/sysprof/enforcer"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/sandbox"
)

// dockerDefaultAllowsX86_64 is how many x86_64 syscalls Docker's default seccomp profile allows
// without extra capabilities (counted from moby/profiles seccomp/default.json, commit cd3bed8).
const dockerDefaultAllowsX86_64 = 308

func init() {
	subcommands = append(subcommands, func(s streams) *cobra.Command { return newShowCmd(s, runShow) })
}

type showOptions struct {
	streams
	Profile string
	Explain bool
	Picture pictureOptions
}

func newShowCmd(s streams, runF func(context.Context, *showOptions) error) *cobra.Command {
	o := &showOptions{streams: s}
	cmd := &cobra.Command{
		Use:   "show [-p FILE] [--tree] [--html FILE [--report R] [--trace T]]",
		Short: "Print a readable summary of a profile",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := resolveProfileFlag(cmd, o.Profile)
			if err != nil {
				return err
			}
			o.Profile = p
			return runF(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVarP(&o.Profile, "profile", "p", "", "profile file (default: the only file in .sysprof/)")
	cmd.Flags().BoolVar(&o.Explain, "explain", false, "also print the behaviour-equivalence families and why each syscall they added is allowed")
	addPictureFlags(cmd.Flags(), &o.Picture)
	return cmd
}

func runShow(_ context.Context, o *showOptions) error {
	p, err := policy.Load(o.Profile)
	if err != nil {
		return err
	}
	if o.Picture.wanted() {
		return showPicture(o.streams, o.Profile, p, o.Picture)
	}
	writeShow(o.Out, o.Profile, p)
	if o.Explain {
		writeFamilies(o.Out, p)
	}
	return nil
}

func writeShow(w io.Writer, path string, p *policy.Profile) {
	m := p.Metadata
	fmt.Fprintf(w, "profile   %s\ncommand   %s\nruns      %d", report.Printable(path), report.Printable(strings.Join(m.Command, " ")), m.Runs)
	if m.Incomplete {
		fmt.Fprintf(w, "  INCOMPLETE: %s", report.Printable(strings.Join(m.IncompleteReasons, "; ")))
	}
	fmt.Fprintln(w)

	n := len(p.Syscalls.Allow)
	archs := strings.Join(p.Syscalls.Architectures, ", ")
	if len(m.LearnedOn) > 0 {
		// The names are that machine's; enforce elsewhere maps them (policy.ArchEquivalents).
		archs += "; learned on " + strings.Join(m.LearnedOn, ", ")
	}
	fmt.Fprintf(w, "\nsyscalls  %d allowed (%s), %d fewer than Docker's default profile allows on x86_64\n",
		n, archs, dockerDefaultAllowsX86_64-n)
	for _, r := range p.Syscalls.Args {
		fmt.Fprintf(w, "  %s\n", report.Printable(describeArgRule(r)))
	}
	// What enforce applies, not only what the file lists: an empty section is the base only.
	wd, _ := os.Getwd()
	fs := enforcer.EffectiveFilesystem(policy.WithoutPending(p).Filesystem, enforcer.HostEnv(wd))
	section(w, "writable", fs.Write)
	fmt.Fprintln(w, "  (exactly: a file, glob or missing directory stages its directory: only these are applied, the rest is held for `sysprof changes`;")
	fmt.Fprintln(w, "   no exec rule in a writable directory: mounted noexec)")
	fmt.Fprintf(w, "  protected, read-only inside any writable tree unless named above: %s\n", strings.Join(paths.ProtectedPaths(), ", "))
	section(w, "executable", fs.Exec)
	if len(fs.Exec) == 0 {
		fmt.Fprintln(w, "  (only the command itself)")
	}
	fmt.Fprintln(w, "  (the work tree and $HOME are noexec but for these and the toolchain roots: nothing else there runs through ld.so, LD_PRELOAD or dlopen)")
	section(w, "hidden", fs.Hidden)
	if extra := len(fs.Hidden) - len(p.Filesystem.Hidden); extra > 0 {
		fmt.Fprintf(w, "  (%d of them credential stores every profile hides)\n", extra)
	}
	if pending := policy.Pending(p); len(pending) > 0 {
		fmt.Fprintf(w, "\npending   %d (learned but not accepted: enforce denies them until `sysprof refine` accepts them)\n", len(pending))
		for _, c := range pending {
			fmt.Fprintf(w, "  %s: %s\n", c.Section, report.Printable(c.Item))
		}
	}
	fmt.Fprintf(w, "\nreadable  %d paths, and the base every program needs: %s", len(p.Filesystem.Read), strings.Join(enforcer.BaseRead, ", "))
	if fs.PrivateTmp {
		fmt.Fprint(w, "; private /tmp")
	}
	fmt.Fprintln(w, "\n          read-only root: everything else is neither readable nor writable")

	fmt.Fprintf(w, "\nuid       %s\n", uidModel(p))
	for _, l := range enforcer.ShowLayers(p) {
		fmt.Fprintf(w, "\n%-9s %s\n", l.Name, l.Text)
	}

	net := p.Network
	if len(net.Connect)+len(net.Send)+len(net.Bind) == 0 {
		fmt.Fprintln(w, "\nnetwork   none (private network namespace, loopback only)")
	} else {
		fmt.Fprintln(w, "\nnetwork   own namespace; out only through sysprof's DNS stub and proxy (by name: SNI/Host checked; per binary)")
		for _, l := range []struct {
			op  string
			eps []policy.Endpoint
		}{{"connect", net.Connect}, {"send", net.Send}, {"bind", net.Bind}} {
			for _, e := range l.eps {
				by := ""
				if l.op == "connect" && !strings.HasPrefix(e.Endpoint, "unix:") {
					by = "  (any binary)"
					if e.By != "" && e.By != "any" {
						by = "  (only " + report.Printable(e.By) + "'s own file and its transport helpers"
						if held := enforcer.RuleBinaryWrites(p, e.By); held != "" {
							by += "; " + held
						}
						by += ")"
					}
				}
				fmt.Fprintf(w, "  %-8s %s %s%s\n", l.op, report.Printable(e.Endpoint), report.Printable(e.Proto), by)
			}
		}
	}
	writeShowCredentials(w, p)
	writeShowEnv(w, p, os.Environ())
}

// writeShowCredentials lists each credentials rule and where its real value comes from,
// never the value.
func writeShowCredentials(w io.Writer, p *policy.Profile) {
	if len(p.Credentials) == 0 {
		return
	}
	fmt.Fprintln(w, "\ncredentials  the command holds a per-run stand-in; the proxy presents the real value to these hosts only")
	for _, c := range p.Credentials {
		from := "the variable " + c.Env + " of sysprof's environment"
		if c.Env == "" {
			from = "entry " + shown(c.Key) + " of " + shown(c.File) + " (shown inside with the stand-in)"
		}
		by := ""
		if c.By != "" && c.By != "any" {
			by = ", only for " + shown(c.By)
		}
		fmt.Fprintf(w, "  %s to %s (%s%s)\n    real value from %s\n", shown(c.How), strings.Join(c.Hosts, ", "), riskWord(c), by, from)
	}
}

// riskWord rates a rule as diff does (policy.CredentialRisk), worst host first.
func riskWord(c policy.Credential) string {
	worst := policy.RiskNone
	for _, h := range c.Hosts {
		if r, _ := policy.CredentialRisk(c, h); r > worst {
			worst = r
		}
	}
	return worst.String()
}

// shown quotes s when it holds anything but printable characters (a name that could
// rewrite the terminal line).
func shown(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) || unicode.Is(unicode.Bidi_Control, r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// writeShowEnv says which environment variables the command does not get: the secret-looking
// ones of env (this shell's), except those the profile passes.
func writeShowEnv(w io.Writer, p *policy.Profile, env []string) {
	fmt.Fprintln(w, "\nenvironment  secret-looking variables are removed (*_TOKEN, *SECRET*, *PASSWORD*, *_API_KEY, AWS_*, key-like *_KEY, token values)")
	if len(p.Env.Pass) > 0 {
		fmt.Fprintf(w, "  passed:  %s\n", report.Printable(strings.Join(p.Env.Pass, ", ")))
	}
	if _, removed := policy.ScrubEnv(env, p.Env.Pass); len(removed) > 0 {
		fmt.Fprintf(w, "  removed from this shell's: %s (pass one with env: {pass: [NAME]})\n", report.Printable(strings.Join(removed, ", ")))
	}
}

// uidModel says who the command runs as on the host (sandbox.ChooseIdentity's cases).
func uidModel(p *policy.Profile) string {
	if p.HostRoot {
		return "as root: real host root (hostRoot: true; capabilities dropped, no user namespace); under sudo too; as an ordinary user: that user"
	}
	return fmt.Sprintf("as root: uid 0 only inside a user namespace, host uid %d with no capabilities (root's files its own through idmapped mounts; in an ordinary user's work tree on a mount that cannot be idmapped, that user); under sudo: the invoking user in a work tree of theirs (in root's, as root); as an ordinary user: that user", sandbox.RootUID)
}

func section(w io.Writer, title string, rules []policy.PathRule) {
	fmt.Fprintf(w, "\n%-9s %d\n", title, len(rules))
	for _, r := range rules {
		fmt.Fprintf(w, "  %s\n", report.Printable(r.Path))
	}
}

func describeArgRule(r policy.ArgRule) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s arg%d", r.Syscall, r.Arg)
	if r.Name != "" {
		fmt.Fprintf(&b, " (%s)", r.Name)
	}
	if r.Mask != "" {
		fmt.Fprintf(&b, " & %s", r.Mask)
	}
	switch {
	case len(r.Values) > 0:
		fmt.Fprintf(&b, " in {%s}", strings.Join(r.Values, ", "))
	case len(r.Flags) > 0:
		fmt.Fprintf(&b, " may set only {%s}", strings.Join(r.Flags, ", "))
	}
	if len(r.Deny) > 0 {
		fmt.Fprintf(&b, " never {%s}", strings.Join(r.Deny, ", "))
	}
	if r.Errno != "" {
		fmt.Fprintf(&b, " else %s", r.Errno)
	}
	return b.String()
}
