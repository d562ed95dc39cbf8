package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

// TestDevServerLearnEnforcePublished: a dev server learned and stopped with Ctrl-C (SIGINT,
// its normal end) gives a complete profile with its loopback listener; enforced, the server
// listens in the sandbox's network namespace and a GET from the host reaches it through the
// published port, which stderr names.
func TestDevServerLearnEnforcePublished(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "nsenter")
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		testutil.RequireNoErr(t, "python3 (apt-get install python3) serves the directory", err)
	}
	bin, err := sysprofBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := newProjectDir(t, "version: 1\n")
	writeFile(t, filepath.Join(dir, "hello.txt"), "hello\n")
	port := testutil.ServerPort(t)
	prof := filepath.Join(dir, "serve.yaml")
	argv := []string{"/usr/bin/python3", "-m", "http.server", "--bind", "127.0.0.1", strconv.Itoa(port)}
	url := fmt.Sprintf("http://127.0.0.1:%d/hello.txt", port)

	// serve runs sysprof args, GETs url once it answers, then stops it with SIGINT.
	serve := func(args ...string) (got string, stderr string) {
		t.Helper()
		cmd := exec.Command(bin, append(args, argv...)...)
		url := fmt.Sprintf("http://127.0.0.1:%s/hello.txt", argv[len(argv)-1])
		cmd.Dir = dir
		var errb strings.Builder
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && got == ""; time.Sleep(100 * time.Millisecond) {
			select {
			case err := <-done:
				t.Fatalf("sysprof %s ended before serving: %v\n%s", args[0], err, errb.String())
			default:
			}
			resp, err := http.Get(url)
			if err != nil {
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got = fmt.Sprintf("%d %s", resp.StatusCode, b)
		}
		cmd.Process.Signal(syscall.SIGINT)
		<-done
		return got, errb.String()
	}

	if got, stderr := serve("learn", "-p", prof, "--"); got != "200 hello\n" {
		t.Fatalf("learn: GET %s: %q\n%s", url, got, stderr)
	}
	p, err := policy.Load(prof)
	if err != nil {
		t.Fatal(err)
	}
	if p.Metadata.Incomplete {
		t.Errorf("the profile is incomplete after Ctrl-C, the server's normal end: %q", p.Metadata.IncompleteReasons)
	}
	want := fmt.Sprintf("127.0.0.1:%d", port)
	found := false
	for _, e := range p.Network.Bind {
		found = found || e.Endpoint == want
	}
	if !found {
		t.Fatalf("the listener %s is not learned: bind %+v", want, p.Network.Bind)
	}
	got, stderr := serve("enforce", "-p", prof, "--")
	if got != "200 hello\n" {
		t.Fatalf("enforce: GET %s from the host: %q\n%s", url, got, stderr)
	}
	if !strings.Contains(stderr, "published "+want+" → sandbox") {
		t.Errorf("enforce does not say the listener is published:\n%s", stderr)
	}

	// Another port: --publish adds the listener the profile did not learn.
	other := strconv.Itoa(testutil.ServerPort(t))
	argv[len(argv)-1] = other
	if got, stderr := serve("enforce", "-p", prof, "--publish", other, "--"); got != "200 hello\n" || !strings.Contains(stderr, "published 127.0.0.1:"+other+" → sandbox") {
		t.Errorf("enforce --publish %s: GET: %q\n%s", other, got, stderr)
	}
}
