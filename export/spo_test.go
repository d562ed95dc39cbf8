package export

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/policy"
	"go.yaml.in/yaml/v3"
)

func TestSPO(t *testing.T) {
	p := loadFixture(t, "cargo-build.yaml")
	var buf bytes.Buffer
	if err := Write(&buf, p, "spo", Options{Name: "Cargo Build (release)"}); err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(&buf)
	dec.KnownFields(true)
	var got spoProfile
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("spo export does not decode: %v", err)
	}
	if got.APIVersion != "security-profiles-operator.x-k8s.io/v1beta1" || got.Kind != "SeccompProfile" {
		t.Errorf("apiVersion/kind: %s %s", got.APIVersion, got.Kind)
	}
	if got.Metadata.Name != "cargo-build-release" {
		t.Errorf("metadata.name %q, want the DNS-1123 label cargo-build-release", got.Metadata.Name)
	}
	if got.Spec.DefaultAction != "SCMP_ACT_ERRNO" || !slices.Equal(got.Spec.Architectures, []string{"SCMP_ARCH_AARCH64", "SCMP_ARCH_X86_64"}) {
		t.Errorf("spec: %+v", got.Spec)
	}
	// The syscall rules are the oci format's, entry for entry.
	oci := exportOCI(t, p)
	if len(oci.Syscalls) != len(got.Spec.Syscalls) {
		t.Fatalf("spo has %d syscall entries, oci %d", len(got.Spec.Syscalls), len(oci.Syscalls))
	}
	for i, s := range got.Spec.Syscalls {
		o := oci.Syscalls[i]
		if !slices.Equal(s.Names, o.Names) || s.Action != string(o.Action) || len(s.Args) != len(o.Args) {
			t.Errorf("entry %d: spo %+v, oci %+v", i, s, o)
		}
	}
}

func TestNotesIncomplete(t *testing.T) {
	p := loadFixture(t, "rules.yaml")
	p.Metadata.Incomplete = true
	p.Metadata.IncompleteReasons = []string{"lost 3 events"}
	for _, f := range []string{"oci", "spo", "systemd"} {
		notes, err := Notes(p, f, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(notes) == 0 || !strings.Contains(notes[0], "incomplete") || !strings.Contains(notes[0], "lost 3 events") {
			t.Errorf("%s: first note should say the profile is incomplete: %q", f, notes)
		}
	}
}

// An architecture the enforcer does not know is left out with a note, as enforce drops it.
func TestUnknownArchitecture(t *testing.T) {
	p := &policy.Profile{Syscalls: policy.Syscalls{Architectures: []string{"mips", "x86_64"}, Allow: []policy.Syscall{{Name: "read"}}}}
	for _, f := range []string{"oci", "spo"} {
		notes, err := Notes(p, f, Options{})
		if err != nil || !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "mips (unknown)") }) {
			t.Errorf("%s: an unknown architecture: %v, notes %q", f, err, notes)
		}
	}
	if err := Write(&bytes.Buffer{}, p, "systemd", Options{}); err == nil || !strings.Contains(err.Error(), "mips") {
		t.Errorf("systemd: an unknown architecture gave %v", err)
	}
}
