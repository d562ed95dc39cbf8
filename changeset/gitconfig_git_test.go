package changeset

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// TestGitConfigParseMatchesGit: parseGitConfig reads what git itself reads (git config -f
// FILE --list), and refuses what git refuses: headers, quoting, escapes, comments,
// continuations, names.
func TestGitConfigParseMatchesGit(t *testing.T) {
	testutil.RequireTools(t, os.Getenv("PATH"), "git")
	ins := []string{
		"[core] fsmonitor = x\n",
		"[core]\n\tpager = \"a  b\" c\t d ; x\n",
		"[a.B]\n\tk = v\n",
		"[a \"Sub \\\"q\\\" \\\\ x\"]\n\tK = v\n",
		"[alias]\n\tx = \"!sh -c 'echo \\\"hi\\\"'\"\n",
		"[core]\n\tk = a\\\n  b\n",
		"[core]\n\tflag\n\tk=\n",
		"[includeIf \"gitdir:~/w/\"]\n\tpath = x.inc\n",
		"\xef\xbb\xbf[core]\n\tk = v\n",
		"[core]\r\n\tk = v\r\n",
		"[core]\n\tk = \"a#b\" # c\n",
		"[Sec.sub \"x\"]\n\tk = v\n",
		"[core]\n\tk v\n",
		"[core]\n\tk = \\q\n",
		"[core]\n\t1k = v\n",
		"[core]\n\tk_x = v\n",
		"[core ]\n\tk = v\n",
		"[ core]\n\tk = v\n",
		"[core] # c\n\tk = v\n",
		"[core]k=v\n",
		"[core] x y\n",
		"[core]\n\tk = v\\",
		"[core]\n\tk = \"v\n",
		"[core \"a\"b]\n\tk = v\n",
		"[core]\n\tk = a;b\n",
		"[core]\n\tk = \"\" x\n",
		"[core]\n\tk =    \"  a\"  \n",
		"k = v\n",
		"; c\n# d\n[core]\n  ; e\n\tk = v\n",
		"[core]\n\tk = a\\tb\\nc\\bd\n",
		"[core]\n\tk = a \\\n\tb\n",
		"[core \"\"]\n\tk = v\n",
		"[co-re]\n\tk = v\n",
		"[core]\n\t-k = v\n",
	}
	for _, in := range ins {
		f := filepath.Join(t.TempDir(), "c")
		if err := os.WriteFile(f, []byte(in), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("git", "config", "-f", f, "--list").Output()
		es, perr := parseGitConfig([]byte(in))
		var mine []string
		for _, e := range es {
			if !e.hasValue {
				mine = append(mine, e.name())
			} else {
				mine = append(mine, e.name()+"="+e.value)
			}
		}
		got := strings.Join(mine, "\n")
		want := strings.TrimRight(string(out), "\n")
		if (err != nil) != (perr != nil) || err == nil && got != want {
			t.Errorf("%q:\n git (%v): %q\n mine (%v): %q", in, err, want, perr, got)
		}
	}
}
