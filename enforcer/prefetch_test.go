package enforcer

import (
	"fmt"
	"net"
	"os"
	"slices"
	"testing"
	"time"
)

// Compile hides the host's sockets from a scan PrefetchSockets started while the profile
// loaded, but never from an old one: a socket bound since a stale scan is still found. And a
// prefetched scan serves one compile only.
func TestPrefetchedSocketScanIsFreshAndTakenOnce(t *testing.T) {
	PrefetchSockets()
	for deadline := time.Now().Add(10 * time.Second); ; {
		prefetch.Lock()
		done := len(prefetch.scan) == 1
		prefetch.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the prefetched scan did not finish")
		}
		time.Sleep(time.Millisecond)
	}
	sock := fmt.Sprintf("/tmp/sysprof-prefetch-test-%d.sock", os.Getpid())
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	prefetch.Lock()
	prefetch.started = time.Now().Add(-2 * prefetchFresh)
	prefetch.Unlock()
	if sc := takeSocketScan(); !slices.Contains(sc.dirs["/tmp"], sock) {
		t.Errorf("a stale prefetched scan was used: %s, bound after it, is not in %v", sock, sc.dirs["/tmp"])
	}
	prefetch.Lock()
	left := prefetch.scan
	prefetch.Unlock()
	if left != nil {
		t.Error("the prefetched scan is still there for another compile")
	}
}
