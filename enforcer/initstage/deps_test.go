package initstage

import (
	"os/exec"
	"strings"
	"testing"
)

// The init stage program starts in every enforce run: it must stay a small program. What it
// links decides its start (its packages' initialisation, its size), so no package of the
// proxy, the guard, the profile format or the CLI may reach it.
func TestProgramStaysSmall(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/sysprof/sysprof/cmd/sysprof-init").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	heavy := []string{"net/http", "crypto/tls", "github.com/cilium/ebpf", "go.yaml.in/yaml", "github.com/spf13/",
		"github.com/olekukonko/", "github.com/elastic/go-seccomp-bpf", "github.com/sysprof/sysprof/enforcer\n",
		"github.com/sysprof/sysprof/policy", "github.com/sysprof/sysprof/netproxy\n", "github.com/sysprof/sysprof/seccomp",
		"debug/elf"}
	deps := string(out) + "\n"
	for _, h := range heavy {
		if strings.Contains(deps, h) {
			t.Errorf("cmd/sysprof-init links %s: the init stage's start pays for it in every run", strings.TrimSpace(h))
		}
	}
}
