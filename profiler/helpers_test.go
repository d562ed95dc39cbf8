package profiler_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/profiler"
	"github.com/sysprof/sysprof/trace"
)

// learn runs the command under the profiler with output going to the test log.
func learn(t *testing.T, ctx context.Context, opts profiler.Options) *trace.Trace {
	t.Helper()
	testutil.RequireRoot(t)
	if opts.Stdout == nil {
		opts.Stdout = testWriter{t}
	}
	if opts.Stderr == nil {
		opts.Stderr = testWriter{t}
	}
	if opts.Stdin == nil {
		opts.Stdin = strings.NewReader("")
	}
	tr, err := profiler.Run(ctx, opts)
	profiler.Settle() // the warm tests look at the helper a run leaves
	var le *profiler.LoadError
	if errors.As(err, &le) {
		testutil.RequireNoErr(t, "eBPF learn programs", err)
	}
	if err != nil {
		t.Fatalf("Run %q: %v", opts.Command, err)
	}
	if dir := os.Getenv("SYSPROF_TEST_DUMP"); dir != "" { // inspect a trace: SYSPROF_TEST_DUMP=/tmp
		b, _ := json.MarshalIndent(tr, "", "  ")
		os.WriteFile(filepath.Join(dir, t.Name()+".trace.json"), b, 0o644)
	}
	return tr
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Logf("%s", strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func findFile(tr *trace.Trace, exe, path, access string, ok bool) *trace.FileAccess {
	for i, f := range tr.Files {
		if f.Exe == exe && f.Path == path && f.Access == access && f.OK == ok {
			return &tr.Files[i]
		}
	}
	return nil
}

func filesOf(tr *trace.Trace, exe string) []string {
	var out []string
	for _, f := range tr.Files {
		if f.Exe == exe {
			s := f.Access + " " + f.Path
			if !f.OK {
				s += " (failed)"
			}
			out = append(out, s)
		}
	}
	return out
}

func syscallCount(tr *trace.Trace, exe, arch, name string) uint64 {
	for _, s := range tr.Syscalls {
		if s.Exe == exe && s.Arch == arch && s.Name == name {
			return s.Count
		}
	}
	return 0
}

func argValues(tr *trace.Trace, exe, kind string) []trace.ArgValue {
	var out []trace.ArgValue
	for _, a := range tr.Args {
		if a.Exe == exe && a.Kind == kind {
			out = append(out, a)
		}
	}
	return out
}

func processesOf(tr *trace.Trace, exe string) []trace.Process {
	var out []trace.Process
	for _, p := range tr.Processes {
		if p.Exe == exe {
			out = append(out, p)
		}
	}
	return out
}

func exes(tr *trace.Trace) []string {
	var out []string
	for _, p := range tr.Processes {
		if !slices.Contains(out, p.Exe) {
			out = append(out, p.Exe)
		}
	}
	return out
}

// dnsResponder answers every A question on addr:53 with answer.
func dnsResponder(t *testing.T, addr string, answer [4]byte) {
	t.Helper()
	c, err := net.ListenPacket("udp4", net.JoinHostPort(addr, "53"))
	if err != nil {
		t.Fatalf("DNS responder on %s:53: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			var m dnsmessage.Message
			if err := m.Unpack(buf[:n]); err != nil || len(m.Questions) == 0 {
				continue
			}
			m.Header.Response = true
			m.Header.Authoritative = true
			q := m.Questions[0]
			m.Answers = []dnsmessage.Resource{{
				Header: dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 60},
				Body:   &dnsmessage.AResource{A: answer},
			}}
			out, err := m.Pack()
			if err == nil {
				c.WriteTo(out, from)
			}
		}
	}()
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func withTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func itoa(n int) string { return strconv.Itoa(n) }
