package export

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// verifyDropIn runs systemd-analyze verify on a oneshot unit with conf as its drop-in and
// returns what it said about the drop-in.
func verifyDropIn(t *testing.T, conf []byte) string {
	t.Helper()
	dir := t.TempDir()
	unit := filepath.Join(dir, "sysprof-export-test.service")
	if err := os.WriteFile(unit, []byte("[Unit]\nDescription=export test\n[Service]\nType=oneshot\nExecStart=/bin/true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(unit+".d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(unit+".d", "sysprof.conf"), conf, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("systemd-analyze", "verify", "--man=no", unit)
	cmd.Env = append(os.Environ(), "SYSTEMD_UNIT_PATH="+dir+":")
	out, err := cmd.CombinedOutput()
	var mine []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "sysprof.conf") {
			mine = append(mine, l)
		}
	}
	if err != nil && len(mine) == 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	return strings.Join(mine, "\n")
}

func TestSystemdVerify(t *testing.T) {
	testutil.RequireTool(t, "systemd-analyze")
	p := loadFixture(t, "cargo-build.yaml")
	_, env := fakeHost(t)
	var conf bytes.Buffer
	if err := Write(&conf, p, "systemd", Options{Env: env}); err != nil {
		t.Fatal(err)
	}
	if msg := verifyDropIn(t, conf.Bytes()); msg != "" {
		t.Errorf("systemd-analyze verify complains about the drop-in:\n%s\n%s", msg, conf.String())
	}
	// The check is not vacuous: a misspelt key and an unknown syscall are reported.
	bad := append(conf.Bytes(), "ProtectSystm=strict\nSystemCallFilter=no_such_call\n"...)
	msg := verifyDropIn(t, bad)
	if !strings.Contains(msg, "ProtectSystm") || !strings.Contains(msg, "no_such_call") {
		t.Errorf("systemd-analyze verify did not read the drop-in (no complaint about planted errors): %q", msg)
	}
}

func TestSystemdNoNetwork(t *testing.T) {
	p := loadFixture(t, "rules.yaml")
	var buf bytes.Buffer
	if err := Write(&buf, p, "systemd", Options{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"PrivateNetwork=yes\n", "SystemCallArchitectures=x86-64\n", "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX\n", "RestrictNamespaces=yes\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	for _, not := range []string{"IPAddress", "clone3"} {
		if strings.Contains(strings.SplitN(out, "[Service]", 2)[1], not) {
			t.Errorf("a profile without network or with clone3 → ENOSYS should not set %s:\n%s", not, out)
		}
	}
}
