package policy

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: bad input gets a *LoadError, never a panic, and whatever loads writes back and
// loads again to the same bytes. Run it with
//
//	go test ./policy -run '^$' -fuzz FuzzParse -fuzztime 60s -fuzzminimizetime 3s
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(goldenDir, "*.yaml"))
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("apiVersion: sysprof.dev/v1\nkind: Profile\nmetadata: {name: x}\n"))
	f.Add([]byte("a: &a [*a, *a]\n"))
	f.Add([]byte("apiVersion: sysprof.dev/v1\nkind: Profile\nmetadata: {}\nnetwork: {connect: [{endpoint: \"[::1/200]:1\", proto: tcp}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.yaml", data)
		if err != nil {
			if _, ok := err.(*LoadError); !ok {
				t.Fatalf("error %T is not a *LoadError: %v", err, err)
			}
			return
		}
		// Whatever loads must write and load back to the same bytes.
		out, err := Marshal(p)
		if err != nil {
			return // e.g. invalid UTF-8 slipped into a string; Marshal refused it
		}
		q, err := Parse("again.yaml", out)
		if err != nil {
			t.Fatalf("Marshal output does not load: %v\n%s", err, out)
		}
		out2, err := Marshal(q)
		if err != nil || string(out) != string(out2) {
			t.Fatalf("round trip not stable: %v\n%s\n---\n%s", err, out, out2)
		}
	})
}
