package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sysprof/sysprof/report"
)

// Options of Read.
type Options struct {
	// Since keeps the runs of the last Since before Now (0: all). Reports without a time are
	// kept.
	Since time.Duration
	Now   time.Time
	// Skip is told about each report that could not be read (one line naming it and why).
	Skip func(line string)
}

// maxReportSize bounds one report: a larger file is not a run report (or a hostile one).
const maxReportSize = 64 << 20

// Read reads run reports from files and directories (recursively: every *.json below them),
// folds their escapes and classifies them. A report that is malformed, truncated, of a newer
// version or too big is skipped, named in Result.Skipped and told to Skip; it is never fatal.
// Only a path that does not exist at all is an error.
func Read(args []string, o Options) (*Result, error) {
	var files []string
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		if !fi.IsDir() {
			files = append(files, a)
			continue
		}
		err = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				files = append(files, p) // reported when read
				return nil
			}
			if d.Type().IsRegular() && strings.HasSuffix(d.Name(), ".json") && !strings.HasPrefix(d.Name(), ".") {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
	}
	slices.Sort(files)
	files = slices.Compact(files)

	type parsed struct {
		run     Run
		escapes []Escape
		skip    string
		old     bool
	}
	out := make([]parsed, len(files))
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	cutoff := time.Time{}
	if o.Since > 0 {
		cutoff = o.Now.Add(-o.Since)
	}
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(files) {
					return
				}
				e, err := readOne(files[i])
				if err != nil {
					out[i].skip = files[i] + ": " + err.Error()
					continue
				}
				if !cutoff.IsZero() && !e.Time.IsZero() && e.Time.Before(cutoff) {
					out[i].old = true
					continue
				}
				out[i].escapes = Escapes(e)
				out[i].run = runOf(files[i], e, out[i].escapes)
			}
		}()
	}
	wg.Wait()

	f := NewFolder()
	var skipped []string
	for _, p := range out {
		switch {
		case p.skip != "":
			skipped = append(skipped, p.skip)
			if o.Skip != nil {
				o.Skip(p.skip)
			}
		case p.old:
		default:
			f.Add(p.run, p.escapes)
		}
	}
	res := f.Result()
	res.Skipped = skipped
	return res, nil
}

func readOne(path string) (*report.Envelope, error) {
	// Non-blocking: a FIFO planted among the reports must not hang the audit (it is then
	// refused as not a regular file).
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if fi.Size() > maxReportSize {
		return nil, fmt.Errorf("%d bytes: larger than any run report (%d)", fi.Size(), maxReportSize)
	}
	b := make([]byte, fi.Size())
	if _, err := fh.ReadAt(b, 0); err != nil {
		return nil, err
	}
	e, err := report.ParseEnvelope(b)
	if err != nil {
		if errors.Is(err, report.ErrFutureVersion) {
			return nil, fmt.Errorf("skipped: %w", err)
		}
		return nil, fmt.Errorf("skipped (malformed or truncated): %w", err)
	}
	return e, nil
}

// runOf is the Run of an envelope: its role as set, or guessed from the step, the command and
// the binaries its escapes name.
func runOf(path string, e *report.Envelope, escapes []Escape) Run {
	role := e.Role
	if role == "" {
		var exes []string
		for _, x := range escapes {
			exes = append(exes, x.Exe)
		}
		role = GuessRole(e.Step, e.Command, exes)
	}
	host := e.Host
	if host == "" {
		host = "(unknown host)"
	}
	project := e.Project
	if project == "" {
		project = "(unknown project)"
	}
	return Run{Source: path, Kind: e.Kind, Host: host, Project: project, Step: e.Step, Role: role, Time: e.Time, KnownHosts: e.ProfileHosts}
}
