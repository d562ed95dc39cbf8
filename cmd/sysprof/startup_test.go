package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Every sysprof process, the enforce init stage included, runs every package's init: sysprof's
// own packages must build their tables on first use, not at start. The numbers are the
// runtime's own count (GODEBUG=inittrace=1), not a timing.
func TestOwnPackageInitsAllocateLittle(t *testing.T) {
	bin, err := sysprofBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--help")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("sysprof --help: %v\n%s", err, stderr.String())
	}
	// init github.com/sysprof/sysprof/policy @3.0 ms, 0.11 ms clock, 84720 bytes, 157 allocs
	line := regexp.MustCompile(`^init (\S+) @.* clock, (\d+) bytes, \d+ allocs$`)
	const limit = 16 << 10
	seen := 0
	for _, l := range strings.Split(stderr.String(), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil || m[1] != "main" && !strings.HasPrefix(m[1], "github.com/sysprof/sysprof/") {
			continue
		}
		seen++
		if n, _ := strconv.Atoi(m[2]); n > limit {
			t.Errorf("package %s allocates %d bytes at init (limit %d): build its tables on first use (sync.OnceValue)", m[1], n, limit)
		}
	}
	if seen == 0 {
		t.Fatalf("no init trace of sysprof's packages in:\n%s", stderr.String())
	}
}
