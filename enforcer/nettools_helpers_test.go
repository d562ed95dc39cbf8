package enforcer

import (
	"os"
	"testing"

	"github.com/sysprof/sysprof/policy"
)

// toolProfile is the profile the network tests run a real tool under (curl, python3) in
// audit mode: syscalls are not what they test. read are its read rules, by default the
// system, /proc, /dev/urandom and the work tree; it writes /dev/null and runs /usr's programs.
// The test adds its network rules.
func toolProfile(name string, read ...string) *policy.Profile {
	if len(read) == 0 {
		read = []string{"/usr", "/etc", "/proc", "/dev/urandom", "$WORKDIR"}
	}
	p := &policy.Profile{APIVersion: policy.APIVersion, Kind: policy.Kind}
	p.Metadata.Name = name
	p.Syscalls.Architectures = []string{"x86_64"}
	p.Syscalls.Allow = []policy.Syscall{{Name: "read"}} // audit: syscalls are not what this tests
	p.Filesystem = policy.Filesystem{Read: rules(read...), Write: rules("/dev/null"), Exec: rules("/usr/bin", "/usr/lib")}
	return p
}

// asRootAndNobody runs check as root (in a temporary work directory) and, through the
// registered nobodyHelpers entry helper, as an ordinary user in a directory nobody can reach.
func asRootAndNobody(t *testing.T, helper string, check func(work string) error) {
	t.Helper()
	t.Run("root", func(t *testing.T) {
		if err := check(t.TempDir()); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("nobody", func(t *testing.T) {
		dir, err := os.MkdirTemp("", "sysprof-"+helper+"-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		os.Chmod(dir, 0o755)
		asNobodyEnv(t, helper, dir, dir, "HOME="+dir)
	})
}
