package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/spf13/cobra"

	"github.com/sysprof/sysprof/changeset"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

type changesOptions struct {
	streams
	Action string // list, diff, apply, drop
	Run    string // "" = the newest
	Paths  []string
	All    bool
	Format string
	// Interactive says whether to ask on the terminal; nil: when stdin is a terminal.
	Interactive func() bool
}

func init() {
	subcommands = append(subcommands, func(s streams) *cobra.Command { return newChangesCmd(s, runChanges) })
}

var changesFormats = []string{"table", "markdown", "json"}

func newChangesCmd(s streams, runF func(context.Context, *changesOptions) error) *cobra.Command {
	o := &changesOptions{streams: s, Action: "list"}
	cmd := &cobra.Command{
		Use:   "changes [diff|apply|drop] [RUN] [PATH...]",
		Short: "Review the changes enforced runs held back; apply or drop them",
		Long: `Under enforce, what a command writes to a staged directory goes into the run's changeset. What a
learned write rule covers is applied when the run ends; the rest is held here, never discarded:
  held       ordinary, but no rule covers it (a new file after git rebase, a source edit)
  dangerous  a protected path (hooks, CI config, shell rc, .sysprof, *.pth start-up hooks), a link
             leaving its tree, a special file, set-id bits or file capabilities, a new executable
             outside the learned outputs: critical, never applied by a mode or --all

  sysprof changes                     runs with held changes (and runs whose sysprof was killed)
  sysprof changes diff [RUN] [PATH…]  what each change does: a unified diff for text, size, hash and
                                      mode for the rest, class and reason, dangerous patterns in
                                      added content (a download piped to a shell, a new install
                                      script, a URL to a host the profile does not name, a secret)
  sysprof changes apply [RUN] PATH…   apply the named changes (a directory names what is below it,
                                      a dangerous change only by its own path)
  sysprof changes apply [RUN] --all   apply every held change; on a terminal, ask about each
                                      dangerous one (default no)
  sysprof changes drop [RUN]          discard the run's changes

RUN is a run id (or a unique prefix of one); the newest run by default. A change whose host side
changed since the run started is a conflict: it is never overwritten, and stays held. Set-id
bits and file capabilities never reach the host. Exit 0 (conflicts and refusals are listed and
stay held); 125 when sysprof failed (a path that holds no change, a run in use, an I/O error:
what was applied and what is left is said).`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return prepareChanges(cmd, o, args, runF)
		},
	}
	cmd.Flags().StringVar(&o.Format, "format", "table", "output: table, markdown or json")
	for _, sub := range []struct{ name, use, short string }{
		{"diff", "diff [RUN] [PATH...]", "Show what each held change does, dangerous patterns highlighted"},
		{"apply", "apply [RUN] [PATH...|--all]", "Apply held changes (dangerous ones only by path or an interactive yes)"},
		{"drop", "drop [RUN]", "Discard a run's held changes"},
	} {
		c := &cobra.Command{
			Use:   sub.use,
			Short: sub.short,
			Args:  cobra.ArbitraryArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				o.Action = sub.name
				return prepareChanges(cmd, o, args, runF)
			},
		}
		c.Flags().StringVar(&o.Format, "format", "table", "output: table, markdown or json")
		if sub.name == "apply" {
			c.Flags().BoolVar(&o.All, "all", false, "apply every held change (never a dangerous one unless named or answered yes)")
		}
		cmd.AddCommand(c)
	}
	return cmd
}

// prepareChanges checks the flags and splits RUN from the paths.
func prepareChanges(cmd *cobra.Command, o *changesOptions, args []string, runF func(context.Context, *changesOptions) error) error {
	if !slices.Contains(changesFormats, o.Format) {
		return withCode(exitSysprof, fmt.Errorf("--format %q: want one of %s", o.Format, strings.Join(changesFormats, ", ")))
	}
	if o.Action == "list" && len(args) > 0 {
		return withCode(exitSysprof, fmt.Errorf("unknown changes action %q: want diff, apply or drop", args[0]))
	}
	if len(args) > 0 && !strings.ContainsRune(args[0], '/') && args[0] != "." && args[0] != ".." {
		if _, err := changeset.Open(args[0]); err == nil {
			o.Run, args = args[0], args[1:]
		} else if o.Action == "drop" {
			return withCode(exitSysprof, err)
		}
	}
	if o.Action == "drop" && len(args) > 0 {
		return withCode(exitSysprof, fmt.Errorf("changes drop takes a RUN, not paths"))
	}
	for _, p := range args {
		abs, err := hostPath(p)
		if err != nil {
			return withCode(exitSysprof, err)
		}
		o.Paths = append(o.Paths, abs)
	}
	return runF(cmd.Context(), o)
}

// hostPath makes p absolute with its directory's symlinks resolved, as a staged directory's
// changes name their paths.
func hostPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("path %s: %w", p, err)
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(dir, filepath.Base(abs))
	}
	return abs, nil
}

func (o *changesOptions) interactive() bool {
	if o.Interactive != nil {
		return o.Interactive()
	}
	f, ok := o.In.(*os.File)
	return ok && isTerminal(f)
}

func runChanges(ctx context.Context, o *changesOptions) error {
	switch o.Action {
	case "list":
		return changesList(o)
	case "diff":
		return changesDiff(o)
	case "apply":
		return changesApply(ctx, o)
	case "drop":
		return changesDrop(o)
	}
	return withCode(exitSysprof, fmt.Errorf("BUG: changes action %q", o.Action))
}

// p escapes a name for a human-facing output.
func p(s string) string { return report.Printable(s) }

func newTable(w io.Writer, format string) *tablewriter.Table {
	var r tw.Renderer = renderer.NewBlueprint()
	if format == "markdown" {
		r = renderer.NewMarkdown()
	}
	return tablewriter.NewTable(w,
		tablewriter.WithRenderer(r),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
	)
}

// appendFitted appends rows to t, fitted to the width of the terminal w is (report.Width,
// report.Fit) for a table; markdown's rows stay whole (a cell cannot hold a line break).
func appendFitted(t *tablewriter.Table, w io.Writer, format string, header []string, rows [][]string) error {
	width := report.Width(w)
	if format == "markdown" {
		width = 0
	}
	for _, row := range report.Fit(width, header, rows) {
		if err := t.Append(row); err != nil {
			return fmt.Errorf("table: %w", err)
		}
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// runEntry is one run as `changes` lists it.
type runEntry struct {
	ID         string                  `json:"id"`
	Started    time.Time               `json:"started"`
	State      string                  `json:"state"`
	Command    []string                `json:"command"`
	WorkDir    string                  `json:"workDir"`
	Profile    string                  `json:"profile,omitempty"`
	SysprofPID int                     `json:"sysprofPID"`
	Alive      bool                    `json:"alive"` // its sysprof process still exists
	Counts     map[changeset.Class]int `json:"counts"`
	Error      string                  `json:"error,omitempty"`
}

func changesList(o *changesOptions) error {
	runs, err := changeset.List()
	if err != nil {
		return withCode(exitSysprof, err)
	}
	var entries []runEntry
	for _, r := range runs {
		e := runEntry{ID: r.ID, Started: r.Started, State: r.State, Command: r.Command, WorkDir: r.WorkDir,
			Profile: r.Profile, SysprofPID: r.SysprofPID, Alive: r.Alive(), Counts: map[changeset.Class]int{}}
		cs, err := r.Scan()
		if err != nil {
			e.Error = err.Error()
		} else {
			e.Counts = changeset.Counts(cs)
		}
		entries = append(entries, e)
	}
	if o.Format == "json" {
		if entries == nil {
			entries = []runEntry{}
		}
		return writeJSON(o.Out, entries)
	}
	if len(entries) == 0 {
		fmt.Fprintln(o.Out, "no runs with held changes")
		return nil
	}
	t := newTable(o.Out, o.Format)
	header := []string{"RUN", "STARTED", "STATE", "COMMAND", "WORK DIR", "LEARNED", "HELD", "DANGEROUS"}
	t.Header(header)
	var rows [][]string
	for _, e := range entries {
		state := e.State
		switch {
		case e.State == changeset.StateInterrupted:
			state += fmt.Sprintf(" (sysprof %d died)", e.SysprofPID)
		case e.State == changeset.StateRunning && !e.Alive:
			state += fmt.Sprintf(" (sysprof %d died; its sandbox still holds the run)", e.SysprofPID)
		}
		if e.Error != "" {
			state += ": " + e.Error
		}
		rows = append(rows, []string{e.ID, e.Started.Local().Format("2006-01-02 15:04:05"), p(state), p(strings.Join(e.Command, " ")), p(e.WorkDir),
			fmt.Sprint(e.Counts[changeset.Learned]), fmt.Sprint(e.Counts[changeset.Held]), fmt.Sprint(e.Counts[changeset.Dangerous])})
	}
	if err := appendFitted(t, o.Out, o.Format, header, rows); err != nil {
		return err
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintln(o.Out, "`sysprof changes diff RUN` shows them; `sysprof changes apply RUN PATH...` or `drop RUN` decides.")
	return nil
}

// openRun opens o.Run and its changes, those at or below o.Paths when any are named.
func openRun(o *changesOptions) (*changeset.Run, []changeset.Change, error) {
	r, err := changeset.Open(o.Run)
	if err != nil {
		return nil, nil, withCode(exitSysprof, err)
	}
	cs, err := r.Scan()
	if err != nil {
		return nil, nil, withCode(exitSysprof, err)
	}
	if len(o.Paths) == 0 {
		return r, cs, nil
	}
	var out []changeset.Change
	for _, c := range cs {
		if slices.ContainsFunc(o.Paths, func(q string) bool { return paths.Within(c.Path, q) }) {
			out = append(out, c)
		}
	}
	return r, out, nil
}

// fileSide is one side of a file change: what a reviewer needs when no diff is shown.
type fileSide struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	text   string
	isText bool
}

// diffEntry is one change as `changes diff` shows it.
type diffEntry struct {
	changeset.Change
	Old        *fileSide   `json:"old,omitempty"`
	New        *fileSide   `json:"new,omitempty"`
	Diff       string      `json:"diff,omitempty"`
	Highlights []highlight `json:"highlights,omitempty"`
	fold       *diffFold   // text output only: ordinary changes folded (foldFlood)
}

// maxTextDiff: larger files are shown by size and hash.
const maxTextDiff = 1 << 20

// readBufs are the read buffers of readSide (a fresh 32 KiB one per file was most of the
// cost of diffing 10,000 small files).
var readBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

func readSide(f *os.File, err error) *fileSide {
	if err != nil {
		return nil
	}
	defer f.Close()
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	h := sha256.New()
	var data []byte
	var n int64
	for {
		m, err := f.Read(*bp)
		h.Write((*bp)[:m])
		if len(data) <= maxTextDiff {
			data = append(data, (*bp)[:m]...)
		}
		n += int64(m)
		if err == io.EOF || m == 0 && err == nil {
			break
		}
		if err != nil {
			return nil
		}
	}
	s := &fileSide{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}
	if n <= maxTextDiff && utf8.Valid(data) && !bytes.ContainsRune(data, 0) {
		s.text, s.isText = string(data), true
	}
	return s
}

func describe(r *changeset.Run, c changeset.Change, hosts []string) diffEntry {
	e := diffEntry{Change: c}
	if c.Type != changeset.TypeFile {
		return e
	}
	if c.HostExists && c.Op != changeset.OpCreate {
		e.Old = readSide(r.OpenOld(c))
	}
	if c.Op != changeset.OpDelete {
		e.New = readSide(r.OpenNew(c))
	}
	if e.New == nil || !e.New.isText || e.Old != nil && !e.Old.isText {
		return e
	}
	var oldLines []string
	if e.Old != nil {
		oldLines = splitLines(e.Old.text)
	}
	newLines := splitLines(e.New.text)
	oldName := "/dev/null"
	if e.Old != nil {
		oldName = "a" + c.Path
	}
	ops, ok := myers(oldLines, newLines, maxEdits)
	e.Diff = renderUnified(oldName, "b"+c.Path, oldLines, newLines, ops, ok)
	added := map[int]string{}
	if ok {
		for _, op := range ops {
			if op.kind == '+' {
				added[op.b+1] = op.line
			}
		}
	} else {
		for i, l := range newLines {
			added[i+1] = l
		}
	}
	e.Highlights = highlights(c.Path, e.Old == nil, added, hosts)
	return e
}

// describeAll describes each change, a few at a time (reading both sides of 10,000 files is
// mostly waiting for open and read).
func describeAll(r *changeset.Run, cs []changeset.Change, hosts []string) []diffEntry {
	entries := make([]diffEntry, len(cs))
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 2 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(cs) {
					return
				}
				entries[i] = describe(r, cs[i], hosts)
			}
		})
	}
	wg.Wait()
	r.Close()
	return entries
}

func changesDiff(o *changesOptions) error {
	r, cs, err := openRun(o)
	if err != nil {
		return err
	}
	var hosts []string
	if prof := r.Profile; prof != "" {
		if !filepath.IsAbs(prof) {
			prof = filepath.Join(r.WorkDir, prof)
		}
		if pp, err := policy.Load(prof); err == nil {
			hosts = profileHosts(pp)
		}
	}
	entries := describeAll(r, cs, hosts)
	switch o.Format {
	case "json":
		return writeJSON(o.Out, struct {
			Run     runHeader   `json:"run"`
			Changes []diffEntry `json:"changes"`
		}{header(r), entries})
	case "markdown":
		return diffMarkdown(o.Out, r, entries)
	}
	return diffText(o.Out, r, foldFlood(entries, len(o.Paths) == 0))
}

// maxShownPerDir is how many ordinary changes of one directory `changes diff` shows in full
// when no path is named: a run that made a million files (the changeset's file limit stops it
// at writeFiles) must leave a review a person can read. Dangerous changes and those with a
// highlight are always shown; the rest of a directory is one line naming how to list it.
const maxShownPerDir = 50

// diffFold stands for the ordinary changes of one directory past maxShownPerDir.
type diffFold struct {
	dir   string
	count int
	bytes int64
}

// foldFlood keeps, per directory, the first maxShownPerDir ordinary changes and folds the
// rest (in place of the first one folded); with fold false it keeps everything.
func foldFlood(entries []diffEntry, fold bool) []diffEntry {
	if !fold {
		return entries
	}
	shown := map[string]int{}
	folds := map[string]*diffFold{}
	var out []diffEntry
	for _, e := range entries {
		dir := filepath.Dir(e.Path)
		if e.Class == changeset.Dangerous || len(e.Highlights) > 0 || shown[dir] < maxShownPerDir {
			if e.Class != changeset.Dangerous && len(e.Highlights) == 0 {
				shown[dir]++
			}
			out = append(out, e)
			continue
		}
		f := folds[dir]
		if f == nil {
			f = &diffFold{dir: dir}
			folds[dir] = f
			out = append(out, diffEntry{fold: f})
		}
		f.count++
		if e.New != nil {
			f.bytes += e.New.Size
		}
	}
	return out
}

type runHeader struct {
	ID      string    `json:"id"`
	Started time.Time `json:"started"`
	State   string    `json:"state"`
	Command []string  `json:"command"`
	WorkDir string    `json:"workDir"`
}

func header(r *changeset.Run) runHeader {
	return runHeader{r.ID, r.Started, r.State, r.Command, r.WorkDir}
}

func summaryLine(e diffEntry) string {
	s := fmt.Sprintf("%s %s %s: %s", strings.ToUpper(string(e.Class)), e.Op, p(e.Path), p(e.Reason))
	if e.Grant != nil {
		s += fmt.Sprintf(" [to learn it: %s]", p(e.Grant.String()))
	}
	return s
}

func sideLine(e diffEntry) string {
	var parts []string
	switch {
	case e.Op == changeset.OpSymlink:
		parts = append(parts, "-> "+p(e.Target))
	case e.Op == changeset.OpHardlink:
		parts = append(parts, "hard link to "+p(e.Target))
	}
	if len(e.Names) > 0 && e.LinksOutside == 0 {
		parts = append(parts, "applies only together with "+strings.Join(report.PrintableAll(e.Names), ", "))
	}
	mode := fmt.Sprintf("mode %04o", e.Mode)
	if e.HostExists && e.HostMode != e.Mode && e.Op != changeset.OpDelete && e.Op != changeset.OpRmdir {
		mode = fmt.Sprintf("mode %04o -> %04o", e.HostMode, e.Mode)
	}
	parts = append(parts, e.Type, mode)
	if e.Old != nil {
		parts = append(parts, fmt.Sprintf("old %d bytes sha256:%s", e.Old.Size, e.Old.SHA256[:16]))
	}
	if e.New != nil {
		parts = append(parts, fmt.Sprintf("new %d bytes sha256:%s", e.New.Size, e.New.SHA256[:16]))
	}
	return strings.Join(parts, ", ")
}

func diffText(w io.Writer, r *changeset.Run, entries []diffEntry) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "run %s: %s in %s, started %s (%s)\n", r.ID, p(strings.Join(r.Command, " ")), p(r.WorkDir), r.Started.Local().Format(time.RFC3339), r.State)
	if len(entries) == 0 {
		fmt.Fprintln(bw, "no changes")
	}
	for _, e := range entries {
		if f := e.fold; f != nil {
			fmt.Fprintf(bw, "\n=== ... %d more ordinary change(s) in %s (%d bytes new): `sysprof changes diff %s %s` lists them\n", f.count, p(f.dir), f.bytes, r.ID, p(f.dir))
			continue
		}
		fmt.Fprintf(bw, "\n=== %s\n    %s\n", summaryLine(e), sideLine(e))
		for _, h := range e.Highlights {
			if h.Line > 0 {
				fmt.Fprintf(bw, "!!! line %d: %s: %s\n", h.Line, h.What, p(h.Text))
			} else {
				fmt.Fprintf(bw, "!!! %s\n", h.What)
			}
		}
		if e.Diff != "" {
			for _, l := range splitLines(e.Diff) {
				fmt.Fprintln(bw, p(l))
			}
		}
	}
	return bw.Flush()
}

func diffMarkdown(w io.Writer, r *changeset.Run, entries []diffEntry) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "## Changes of run %s\n\n%s in %s, started %s (%s)\n", report.MarkdownCode(r.ID), report.MarkdownCode(strings.Join(r.Command, " ")), report.MarkdownCode(r.WorkDir), r.Started.UTC().Format(time.RFC3339), r.State)
	if len(entries) == 0 {
		fmt.Fprintln(bw, "\nno changes")
	}
	for _, e := range entries {
		// The reason and the side line carry names the command chose (a symlink's target): in
		// code spans, so no markdown in a name (a comment opener, a link, emphasis) renders.
		fmt.Fprintf(bw, "\n### %s %s %s\n\n%s\n\n%s\n", e.Class, e.Op, report.MarkdownCode(e.Path), report.MarkdownCode(e.Reason), report.MarkdownCode(sideLine(e)))
		if e.Grant != nil {
			fmt.Fprintf(bw, "\nto learn it: %s\n", report.MarkdownCode(e.Grant.String()))
		}
		for _, h := range e.Highlights {
			if h.Line > 0 {
				fmt.Fprintf(bw, "\n> **%s** (line %d): %s\n", h.What, h.Line, report.MarkdownCode(h.Text))
			} else {
				fmt.Fprintf(bw, "\n> **%s**\n", h.What)
			}
		}
		if e.Diff != "" {
			fence := report.MarkdownFence(e.Diff, 3)
			fmt.Fprintf(bw, "\n%sdiff\n", fence)
			for _, l := range splitLines(e.Diff) {
				fmt.Fprintln(bw, p(l))
			}
			fmt.Fprintln(bw, fence)
		}
	}
	return bw.Flush()
}

// applyOutput is what `changes apply --format json` prints.
type applyOutput struct {
	Run     string `json:"run"`
	Removed bool   `json:"removed"` // nothing was left: the run is gone
	changeset.Result
}

func changesApply(ctx context.Context, o *changesOptions) error {
	r, cs, err := openRun(o)
	if err != nil {
		return err
	}
	if len(o.Paths) == 0 && !o.All && !o.interactive() {
		return withCode(exitSysprof, fmt.Errorf("changes apply: name the PATHs to apply, or --all (every held change; a dangerous one only by its path): stdin is not a terminal, so there is nobody to ask"))
	}
	var unmatched []string
	for _, q := range o.Paths {
		if !slices.ContainsFunc(cs, func(c changeset.Change) bool { return paths.Within(c.Path, q) }) {
			unmatched = append(unmatched, q)
		}
	}
	if len(unmatched) > 0 {
		return withCode(exitSysprof, fmt.Errorf("run %s holds no change at or below %s: `sysprof changes diff %s` lists them", r.ID, p(strings.Join(unmatched, ", ")), r.ID))
	}
	only := slices.Clone(o.Paths)
	mode := changeset.ApplyNone
	if o.All {
		mode = changeset.ApplyAll
	}
	if o.interactive() {
		// Ask about what neither --all nor a path selects: dangerous changes always (default
		// no), the rest when nothing was named (default yes).
		in := bufio.NewReader(o.In)
		for _, c := range cs {
			named := slices.Contains(o.Paths, c.Path) ||
				c.Class != changeset.Dangerous && (o.All || slices.ContainsFunc(o.Paths, func(q string) bool { return paths.Within(c.Path, q) }))
			if named || c.Class == changeset.Learned && len(o.Paths) == 0 && o.All {
				continue
			}
			if len(o.Paths) > 0 && c.Class != changeset.Dangerous {
				continue // a path was named: only dangerous ones below it are asked about
			}
			if c.Op == changeset.OpMkdir && !c.HostExists {
				continue // a new directory comes with what is applied below it
			}
			yes, err := askApply(ctx, in, o.Err, c)
			if errors.Is(err, errQuit) {
				break
			}
			if err != nil {
				return withCode(exitSysprof, err)
			}
			if yes {
				only = append(only, c.Path)
			}
		}
	}
	res, err := r.Apply(mode, only)
	if err != nil {
		return withCode(exitSysprof, err)
	}
	out := applyOutput{Run: r.ID, Result: res}
	left, err := r.Scan()
	if err == nil && len(left) == 0 && r.State != changeset.StateRunning {
		out.Removed = r.Drop() == nil
	}
	if err := printApply(o, out); err != nil {
		return err
	}
	// Conflicts and refusals are said above and stay held; the exit status is the CLI
	// contract's (0), sysprof's own failure 125.
	if len(res.Errors) > 0 {
		return withCode(exitSysprof, fmt.Errorf("changes apply: %s", report.Printable(strings.Join(res.Errors, "; "))))
	}
	return nil
}

// askApply asks whether to apply one change; dangerous ones default to no.
func askApply(ctx context.Context, in *bufio.Reader, w io.Writer, c changeset.Change) (bool, error) {
	def := "Y/n"
	if c.Class == changeset.Dangerous {
		def = "y/N"
	}
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		fmt.Fprintf(w, "%s\napply? [%s/q] ", summaryLine(diffEntry{Change: c}), def)
		line, err := in.ReadString('\n')
		if err != nil && line == "" {
			if err == io.EOF {
				fmt.Fprintln(w)
				return false, errQuit
			}
			return false, fmt.Errorf("read answer: %w", err)
		}
		switch a := strings.ToLower(strings.TrimSpace(line)); {
		case a == "":
			return c.Class != changeset.Dangerous, nil
		case a[0] == 'y':
			return true, nil
		case a[0] == 'n':
			return false, nil
		case a[0] == 'q':
			return false, errQuit
		}
		fmt.Fprintln(w, "  answer y, n or q")
	}
}

func printApply(o *changesOptions, out applyOutput) error {
	res := out.Result
	switch o.Format {
	case "json":
		for _, l := range []*[]changeset.Change{&out.Applied, &out.Held, &out.Conflicts, &out.Refused} {
			if *l == nil {
				*l = []changeset.Change{}
			}
		}
		return writeJSON(o.Out, out)
	}
	t := newTable(o.Out, o.Format)
	header := []string{"RESULT", "CLASS", "OP", "PATH", "WHY"}
	t.Header(header)
	var rows [][]string
	for _, x := range []struct {
		what string
		cs   []changeset.Change
	}{{"applied", res.Applied}, {"conflict", res.Conflicts}, {"refused", res.Refused}} {
		for _, c := range x.cs {
			why := c.Reason
			if x.what == "applied" {
				why = c.Stripped
			}
			rows = append(rows, []string{x.what, string(c.Class), string(c.Op), p(c.Path), p(why)})
		}
	}
	if err := appendFitted(t, o.Out, o.Format, header, rows); err != nil {
		return err
	}
	if len(rows) > 0 {
		if err := t.Render(); err != nil {
			return err
		}
	}
	for _, e := range res.Errors {
		fmt.Fprintf(o.Out, "error: %s\n", p(e))
	}
	counts := changeset.Counts(res.Held)
	fmt.Fprintf(o.Out, "run %s: %d applied, %d conflict(s), %d refused; %d held (%d dangerous)", out.Run, len(res.Applied), len(res.Conflicts), len(res.Refused),
		len(res.Held)+len(res.Conflicts)+len(res.Refused), counts[changeset.Dangerous])
	if out.Removed {
		fmt.Fprint(o.Out, "; nothing left: run removed")
	}
	fmt.Fprintln(o.Out)
	return nil
}

func changesDrop(o *changesOptions) error {
	r, cs, err := openRun(o)
	if err != nil {
		return err
	}
	if err := r.Drop(); err != nil {
		return withCode(exitSysprof, err)
	}
	if o.Format == "json" {
		return writeJSON(o.Out, struct {
			Run     string                  `json:"run"`
			Dropped map[changeset.Class]int `json:"dropped"`
		}{r.ID, changeset.Counts(cs)})
	}
	fmt.Fprintf(o.Out, "run %s dropped: %d change(s) discarded\n", r.ID, len(cs))
	return nil
}
