package initstage

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The keeper stays while runs touch its escrow file, withdraws the file once nobody did for its
// linger, and leaves a file that names another keeper alone.
func TestKeepWithdrawsItsFile(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pid      int
		withdraw bool
	}{{"its own file", os.Getpid(), true}, {"another keeper's file", os.Getpid() + 1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "lock"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "v1-1")
			b, _ := json.Marshal(Kept{Pid: tc.pid, FD: 3})
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			// A run touches the file while the keeper lingers: it must not go then.
			done := make(chan int)
			go func() { done <- Keep([]string{dir, "v1-1", "300"}) }()
			time.Sleep(150 * time.Millisecond)
			now := time.Now()
			_ = os.Chtimes(path, now, now)
			if code := <-done; code != 0 {
				t.Fatalf("Keep: exit %d", code)
			}
			if !tc.withdraw {
				if _, err := os.Stat(path); err != nil {
					t.Errorf("another keeper's file was removed: %v", err)
				}
				return
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("the keeper left its file behind: %v", err)
			}
			if time.Since(now) < 300*time.Millisecond {
				t.Errorf("the keeper went %v after a run touched its file, before its linger", time.Since(now))
			}
		})
	}
}
