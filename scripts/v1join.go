//go:build ignore

// v1join measures what learn's start pays for the peak cgroups on a host whose pids and
// memory controllers are cgroup v1 hierarchies (issue 28): the forking thread joins a v1
// directory of its own, then goes back. Named by its tid, each join write-locks the kernel's
// cgroup_threadgroup_rwsem, whose first writer waits for an RCU grace period; "0" (the
// writing thread) skips that lock (kernrun.LimitGroup.Measure). The two ways in turns, as
// root:
//
//	go run scripts/v1join.go -rounds 20
//
// Each round joins and leaves a fresh directory under the pids hierarchy once each way, a
// sleep apart (so that every round's first writer finds the lock idle, as a learn does), and
// prints the median, minimum and maximum of the join write.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	rounds := flag.Int("rounds", 20, "rounds")
	pause := flag.Duration("pause", 300*time.Millisecond, "sleep before each join")
	flag.Parse()
	root, from, err := pidsHierarchy()
	if err != nil {
		fmt.Fprintln(os.Stderr, "v1join: a cgroup v1 pids hierarchy is needed:", err)
		os.Exit(1)
	}
	runtime.LockOSThread()
	dir := filepath.Join(root, fmt.Sprintf("sysprof-v1join-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "v1join:", err)
		os.Exit(1)
	}
	defer os.Remove(dir)
	tid := strconv.Itoa(unix.Gettid())
	ways := []struct{ name, who string }{{"tid", tid}, {"0", "0"}}
	took := map[string][]time.Duration{}
	for range *rounds {
		for _, w := range ways {
			time.Sleep(*pause)
			t0 := time.Now()
			if err := os.WriteFile(filepath.Join(dir, "tasks"), []byte(w.who), 0); err != nil {
				fmt.Fprintln(os.Stderr, "v1join: join:", err)
				os.Exit(1)
			}
			took[w.name] = append(took[w.name], time.Since(t0))
			if err := os.WriteFile(filepath.Join(from, "tasks"), []byte(w.who), 0); err != nil {
				fmt.Fprintln(os.Stderr, "v1join: leave:", err)
				os.Exit(1)
			}
		}
	}
	for _, w := range ways {
		d := took[w.name]
		slices.Sort(d)
		fmt.Printf("join by %-4s median %8.3f ms  min %8.3f  max %8.3f  (%d joins)\n", w.name,
			ms(d[len(d)/2]), ms(d[0]), ms(d[len(d)-1]), len(d))
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// pidsHierarchy returns the pids v1 mount and this thread's directory in it.
func pidsHierarchy() (root, from string, err error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if i := slices.Index(f, "-"); i > 0 && i+3 < len(f) && f[i+1] == "cgroup" && slices.Contains(strings.Split(f[i+3], ","), "pids") {
			root = f[4]
		}
	}
	if root == "" {
		return "", "", fmt.Errorf("no pids hierarchy in /proc/self/mountinfo")
	}
	c, err := os.ReadFile("/proc/thread-self/cgroup")
	if err != nil {
		return "", "", err
	}
	for _, line := range strings.Split(string(c), "\n") {
		p := strings.SplitN(line, ":", 3)
		if len(p) == 3 && slices.Contains(strings.Split(p[1], ","), "pids") {
			return root, filepath.Join(root, p[2]), nil
		}
	}
	return "", "", fmt.Errorf("no pids line in /proc/thread-self/cgroup")
}
