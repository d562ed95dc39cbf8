package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
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
	if got.APIVersion != "security-profiles-operator.x-k8s.io/v1" || got.Kind != "SeccompProfile" {
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

// spoSchema is the openAPIV3Schema of the v1 SeccompProfile in the CRD the operator ships.
func spoSchema(t *testing.T) *spec.Schema {
	t.Helper()
	var crd struct {
		Spec struct {
			Scope    string `yaml:"scope"`
			Versions []struct {
				Name   string `yaml:"name"`
				Schema struct {
					OpenAPIV3Schema map[string]any `yaml:"openAPIV3Schema"`
				} `yaml:"schema"`
			} `yaml:"versions"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(mustReadFile(t, testutil.Testdata("export", "spo-seccompprofile-crd-v1.0.0.yaml")), &crd); err != nil {
		t.Fatal(err)
	}
	if crd.Spec.Scope != "Cluster" {
		t.Fatalf("the CRD's scope is %q, the header's localhostProfile path assumes Cluster", crd.Spec.Scope)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != "v1" {
			continue
		}
		b, err := json.Marshal(v.Schema.OpenAPIV3Schema)
		if err != nil {
			t.Fatal(err)
		}
		var s spec.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		return &s
	}
	t.Fatal("the CRD has no v1 version")
	return nil
}

func mustReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// asAPIServer turns YAML-decoded data into what the API server's JSON decoder hands the
// validator: integers as int64, and a number an int64 cannot hold as float64.
func asAPIServer(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = asAPIServer(e)
		}
	case []any:
		for i, e := range x {
			x[i] = asAPIServer(e)
		}
	case int:
		return int64(x)
	case uint64:
		if x > math.MaxInt64 {
			return float64(x)
		}
		return int64(x)
	}
	return v
}

// unknownFields lists fields of v the schema does not declare (the API server would prune
// them: data lost without an error).
func unknownFields(s *spec.Schema, v any, path string) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		if len(s.Properties) == 0 {
			return nil // free-form (metadata)
		}
		for k, e := range x {
			p, ok := s.Properties[k]
			if !ok {
				out = append(out, path+"."+k)
				continue
			}
			out = append(out, unknownFields(&p, e, path+"."+k)...)
		}
	case []any:
		if s.Items != nil && s.Items.Schema != nil {
			for i, e := range x {
				out = append(out, unknownFields(s.Items.Schema, e, fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	}
	return out
}

// validateSPO validates an spo export with kube-openapi's validator, the one the API server
// runs on a custom resource, against the CRD's schema.
func validateSPO(t *testing.T, schema *spec.Schema, doc []byte) []string {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal(doc, &obj); err != nil {
		t.Fatal(err)
	}
	data := asAPIServer(obj)
	var errs []string
	for _, e := range validate.NewSchemaValidator(schema, nil, "", strfmt.Default).Validate(data).Errors {
		errs = append(errs, e.Error())
	}
	return append(errs, unknownFields(schema, data, "")...)
}

// The spo export of every fixture passes the operator's CRD validation as the API server
// runs it; a value above int64 (what the export wrote before, for a clone mask) is rejected
// by the same check, so the check is not vacuous.
func TestSPOValidatesAgainstTheCRD(t *testing.T) {
	schema := spoSchema(t)
	for _, name := range []string{"cargo-build.yaml", "rules.yaml"} {
		p := loadFixture(t, name)
		p.Syscalls.Args = append(p.Syscalls.Args, policy.ArgRule{Syscall: "mmap", Arg: 3, Flags: []string{"0x1"}})
		p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: "mmap"})
		var buf bytes.Buffer
		if err := Write(&buf, p, "spo", Options{}); err != nil {
			t.Fatal(err)
		}
		if errs := validateSPO(t, schema, buf.Bytes()); len(errs) > 0 {
			t.Errorf("%s: the spo export fails the CRD's validation:\n%s", name, strings.Join(errs, "\n"))
		}
		bad := strings.Replace(buf.String(), "defaultAction: SCMP_ACT_ERRNO", "defaultAction: SCMP_ACT_ERRNO\n  bogus: 1", 1)
		bad = regexp.MustCompile(`value: [0-9]+`).ReplaceAllString(bad, "value: 18446744073709551615")
		bad += "\n"
		if errs := validateSPO(t, schema, []byte(bad)); !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, "int64") }) ||
			!slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, "bogus") }) {
			t.Errorf("%s: a value above int64 and an unknown field pass the validation: %q", name, errs)
		}
	}
}
