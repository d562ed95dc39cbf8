package enforcer

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

func init() { nobodyHelpers["publish"] = func(_, work string) error { return publishCheck(work) } }

// A dev server's loopback listener (a learned network.bind) is published to the host at the
// same address and port, and the run says so: a GET from the host reaches
// `python3 -m http.server` inside the sandbox's network namespace. Root and ordinary user.
func TestPublishLearnedListener(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "python3")
	testutil.RequireTool(t, "nsenter")
	t.Run("root", func(t *testing.T) {
		work := t.TempDir()
		if err := publishCheck(work); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("nobody", func(t *testing.T) {
		dir, err := os.MkdirTemp("", "sysprof-publish-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		os.Chmod(dir, 0o755)
		work := filepath.Join(dir, "work")
		if err := os.Mkdir(work, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chown(work, 65534, 65534)
		asNobodyEnv(t, "publish", dir, work, "HOME="+work)
	})
}

// publishCheck serves work with python3's http.server under a profile that binds a free
// loopback port, and GETs a file of it from here.
func publishCheck(work string) error {
	if err := os.WriteFile(filepath.Join(work, "hello.txt"), []byte("hello from the sandbox\n"), 0o644); err != nil {
		return err
	}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	p := toolProfile("publish")
	p.Network.Bind = []policy.Endpoint{{Endpoint: fmt.Sprintf("127.0.0.1:%d", port), Proto: "tcp"}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		_, _, err := Run(ctx, Options{Profile: p, Audit: true, Dir: work,
			Command: []string{"/usr/bin/python3", "-m", "http.server", "--bind", "127.0.0.1", strconv.Itoa(port)},
			Stdout:  io.Discard, Stderr: &stderr})
		done <- err
	}()
	url := fmt.Sprintf("http://127.0.0.1:%d/hello.txt", port)
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		select {
		case err := <-done:
			return fmt.Errorf("the server's run ended: %v; stderr:\n%s", err, stderr.String())
		default:
		}
		resp, err := http.Get(url)
		if err != nil {
			last = err.Error()
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "hello from the sandbox\n" {
			return fmt.Errorf("GET %s: %d %q", url, resp.StatusCode, b)
		}
		if want := fmt.Sprintf("published 127.0.0.1:%d → sandbox", port); !strings.Contains(stderr.String(), want) {
			return fmt.Errorf("stderr does not say %q:\n%s", want, stderr.String())
		}
		cancel()
		<-done
		return nil
	}
	cancel()
	<-done
	return fmt.Errorf("GET %s from the host never succeeded (last: %s); stderr:\n%s", url, last, stderr.String())
}

// syncBuffer is a strings.Builder safe for the run's writes and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Which learned binds are published, and where: loopback ones as learned, a wildcard on the
// host's loopback only ([::], dual-stack, on both 127.0.0.1 and [::1]); no other address, no
// ephemeral port, no UDP.
func TestPublishedListeners(t *testing.T) {
	n := policy.Network{Bind: []policy.Endpoint{
		{Endpoint: "[::]:5173", Proto: "tcp"},
		{Endpoint: "0.0.0.0:8000", Proto: "tcp"},
		{Endpoint: "127.0.0.1:3000"},
		{Endpoint: "[::1]:4000", Proto: "tcp"},
		{Endpoint: "10.0.0.1:80", Proto: "tcp"},
		{Endpoint: "127.0.0.1:0", Proto: "tcp"},
		{Endpoint: "127.0.0.1:9000", Proto: "udp"},
	}}
	var got []string
	for _, a := range publishedListeners(n) {
		got = append(got, a.String())
	}
	if want := "127.0.0.1:3000 127.0.0.1:5173 127.0.0.1:8000 [::1]:4000 [::1]:5173"; strings.Join(got, " ") != want {
		t.Errorf("published %q, want %q", strings.Join(got, " "), want)
	}
}
