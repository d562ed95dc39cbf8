package enforcer

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

func (o runOut) fileDenial(path, access string) *report.Denial {
	if o.rep == nil {
		return nil
	}
	for i := range o.rep.Denials {
		if d := &o.rep.Denials[i]; d.Kind == report.KindFile && d.Path == path && d.Access == access {
			return d
		}
	}
	return nil
}

func TestFileDenialsObservedAsRoot(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFSFixture(t)
	for _, tc := range []struct {
		name, action, line string
		path, access       string
		suggest            string
	}{
		{"write read-only source tree", "write=" + filepath.Join(f.work, "src.txt"), "write: EROFS",
			filepath.Join(f.work, "src.txt"), "write", "filesystem.write: + $WORKDIR/src.txt"},
		{"create outside the writable set (relative path)", "write=new.txt", "write: EROFS",
			filepath.Join(f.work, "new.txt"), "create", "filesystem.write: + $WORKDIR/new.txt"},
		{"read hidden credential", "read=" + f.secret, "read: ENOENT",
			f.secret, "read", "filesystem.read: + $HOME/.ssh/id_ed25519"},
		{"exec a binary never run", "exec=/usr/bin/true", "exec: EACCES",
			"/usr/bin/true", "exec", "filesystem.exec: + /usr/bin/true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := f.run(t, f.profile, false, tc.action, "write=out/ok.txt", "ok")
			if o.err != nil || o.code != 0 {
				t.Fatalf("run: %s", o)
			}
			if !strings.Contains(o.stdout, tc.line+"\n") {
				t.Errorf("want %q:\n%s", tc.line, o)
			}
			if tc.access != "exec" && !strings.HasSuffix(o.stdout, "write: ok\nok\n") {
				t.Errorf("benign work in the same run failed:\n%s", o)
			}
			d := o.fileDenial(tc.path, tc.access)
			if d == nil {
				t.Fatalf("no file denial for %s %s:\n%s", tc.path, tc.access, o)
			}
			if d.Suggest != tc.suggest || !strings.HasSuffix(d.Exe, "/escape") || d.First.IsZero() || d.Count < 1 {
				t.Errorf("denial %+v, want suggestion %q by the victim", *d, tc.suggest)
			}
			if len(o.rep.Denials) != 1 {
				t.Errorf("want exactly this denial:\n%s", o)
			}
			for _, u := range o.rep.Unobservable {
				if strings.HasPrefix(u, "file denials (Landlock") {
					t.Errorf("file denials still listed as unobservable: %v", o.rep.Unobservable)
				}
			}
			if strings.Contains(o.stdout, "sysprof") {
				t.Errorf("sysprof's output in the command's stdout:\n%s", o.stdout)
			}
		})
	}
}

func TestFileBenignRunPrintsNothing(t *testing.T) {
	testutil.RequireRoot(t)
	withoutSecretEnv(t)
	f := newFSFixture(t)
	o := f.run(t, f.profile, false, "read=src.txt", "write=out/ok.txt", "ok")
	if o.err != nil || o.code != 0 || o.stdout != "read: ok\nwrite: ok\nok\n" {
		t.Fatalf("run: %s", o)
	}
	var table bytes.Buffer
	if err := o.rep.WriteTable(&table); err != nil || table.Len() != 0 || len(o.rep.Denials) != 0 {
		t.Errorf("a run without denials printed:\n%s\n%s", table.String(), o)
	}
}

// A denial in a child names the victim as its parent, even when the child is gone by the time
// the event is read.
func TestFileDenialInChildNamesParent(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFSFixture(t)
	o := f.run(t, f.profile, false, "fork", "write="+filepath.Join(f.work, "src.txt"))
	if o.err != nil || o.code != 0 {
		t.Fatalf("run: %s", o)
	}
	d := o.fileDenial(filepath.Join(f.work, "src.txt"), "write")
	if d == nil || len(d.Parents) == 0 || !strings.HasSuffix(d.Parents[0], "/escape") {
		t.Errorf("want the victim as the parent: %+v\n%s", d, o)
	}
}

// guard.c has room for 16 hidden prefixes: a read under the 17th hidden directory and beyond
// is on the record too (the guard compares coarser prefixes and checks the path itself).
func TestFileDenialsBeyondSixteenHidden(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFSFixture(t)
	p := *f.profile
	p.Filesystem.Hidden = slices.Clone(p.Filesystem.Hidden)
	var args, secrets []string
	for i := range 24 {
		dir := filepath.Join(f.home, fmt.Sprintf(".cred%02d", i))
		secret := filepath.Join(dir, "key")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(secret, []byte("secret\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		p.Filesystem.Hidden = append(p.Filesystem.Hidden, policy.PathRule{Path: fmt.Sprintf("$HOME/.cred%02d", i)})
		args = append(args, "read="+secret)
		secrets = append(secrets, secret)
	}
	o := f.run(t, &p, false, append(args, "ok")...)
	if o.err != nil || o.code != 0 || strings.Count(o.stdout, "read: ENOENT\n") != len(secrets) {
		t.Fatalf("run (want every read to find an empty directory): %s", o)
	}
	for _, s := range secrets {
		if d := o.fileDenial(s, "read"); d == nil {
			t.Errorf("no denial for the read of %s (%d hidden directories):\n%s", s, len(secrets), o)
		}
	}
}

// withoutSecretEnv unsets, for the test, the variables enforce would remove from a command's
// environment (policy.SecretEnv): a run then has nothing to say about them (a CI machine's
// AWS_CA_BUNDLE would otherwise print its "environment (not a denial)" line).
func withoutSecretEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		if policy.SecretEnv(name, value) != "" {
			t.Setenv(name, "") // restored after the test
			os.Unsetenv(name)
		}
	}
}
