package enforcer

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/sysprof/sysprof/changeset"
	"github.com/sysprof/sysprof/paths"
)

// maskGitConfig returns a git config file without the entries that carry credentials, and
// what it took out (as "section.key", for the report). Everything else stays byte for byte, so
// git reads the same remotes, branches and settings:
//
//   - http.extraHeader (any URL subsection): actions/checkout keeps its token there;
//   - credential.helper (any subsection): an inline helper can print a password;
//   - the password, or a token-looking user name, of any URL (remote.*.url, url.*.insteadOf,
//     http.proxy, a [url "..."] subsection), so https://x:TOKEN@host/r becomes https://host/r.
//
// Continuation lines of a removed entry go with it.
func maskGitConfig(data []byte) ([]byte, []string) {
	var out bytes.Buffer
	var removed []string
	section := "" // lower case, with the subsection: `http "https://host/"` -> http
	dropping := false
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		s := string(line)
		if dropping {
			dropping = continues(s)
			continue
		}
		trim := strings.TrimSpace(s)
		if strings.HasPrefix(trim, "[") {
			if end := strings.IndexByte(trim, ']'); end > 0 {
				head := trim[1:end]
				name, _, _ := strings.Cut(head, " ")
				name, _, _ = strings.Cut(name, ".")
				section = strings.ToLower(strings.TrimSpace(name))
				masked, did := maskURLs(s[:strings.IndexByte(s, ']')+1])
				if did {
					removed = append(removed, section+" subsection URL")
				}
				out.WriteString(masked)
				s = s[strings.IndexByte(s, ']')+1:]
				trim = strings.TrimSpace(s)
				if trim == "" || trim[0] == '#' || trim[0] == ';' {
					out.WriteString(s)
					continue
				}
			}
		}
		key := strings.ToLower(trim[:len(trim)-len(strings.TrimLeft(trim, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-"))])
		if section == "http" && key == "extraheader" || section == "credential" && key == "helper" {
			removed = append(removed, section+"."+key)
			dropping = continues(s)
			continue
		}
		masked, did := maskURLs(s)
		if did {
			removed = append(removed, section+"."+key+" URL credentials")
		}
		out.WriteString(masked)
	}
	return out.Bytes(), removed
}

// continues reports a line that ends in a backslash (the value goes on on the next line).
func continues(s string) bool {
	return strings.HasSuffix(strings.TrimRight(s, "\r\n"), `\`)
}

// urlUserinfo matches the user[:password]@ of a URL.
var urlUserinfo = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)([^/\s"@]+)@`)
})

// maskURLs drops the credentials of URLs in s: a user with a password, or a user name that is
// itself a token (https://ghp_x@host). A plain user name (ssh://git@host) stays.
func maskURLs(s string) (string, bool) {
	did := false
	out := urlUserinfo().ReplaceAllStringFunc(s, func(m string) string {
		sub := urlUserinfo().FindStringSubmatch(m)
		user, _, hasPass := strings.Cut(sub[2], ":")
		if !hasPass && !tokenLike(user) {
			return m
		}
		did = true
		return sub[1]
	})
	return out, did
}

// tokenLike reports a URL user name that is a credential rather than an account name.
func tokenLike(user string) bool {
	return len(user) >= 20 || strings.ContainsAny(user, "_-") && len(user) >= 16
}

// gitConfigFiles returns the config files git reads for the repository whose work tree is
// workdir: .git/config, or for a linked worktree (.git is a file) its own config.worktree and
// the common directory's config; the other worktrees' config.worktree; every submodule's
// config below modules/ (nested ones too); and the files those include (include.path and
// includeIf.*.path, relative to the including file, ~ being home), recursively. Any of them
// may hold a checkout token.
func gitConfigFiles(workdir, home string) []string {
	dotgit := filepath.Join(workdir, ".git")
	st, err := os.Lstat(dotgit)
	if err != nil {
		return nil
	}
	var out []string
	common := dotgit
	if !st.IsDir() {
		gitdir, c, ok := paths.LinkedGitDirs(workdir)
		if !ok {
			return nil
		}
		out = append(out, filepath.Join(gitdir, "config.worktree"))
		common = c
	}
	out = append(out, filepath.Join(common, "config"))
	if wts, err := os.ReadDir(filepath.Join(common, "worktrees")); err == nil {
		for _, w := range wts {
			out = append(out, filepath.Join(common, "worktrees", w.Name(), "config.worktree"))
		}
	}
	out = append(out, submoduleConfigs(filepath.Join(common, "modules"))...)
	seen := map[string]bool{}
	var withIncludes []string
	var add func(f string, depth int)
	add = func(f string, depth int) {
		if seen[f] || depth > gitIncludeDepth {
			return
		}
		seen[f] = true
		withIncludes = append(withIncludes, f)
		data, err := os.ReadFile(f)
		if err != nil {
			return
		}
		for _, inc := range gitIncludes(data) {
			switch {
			case inc == "~" || strings.HasPrefix(inc, "~/"):
				if home == "" {
					continue
				}
				inc = filepath.Join(home, inc[1:])
			case strings.HasPrefix(inc, "~"):
				continue // another user's home: not this sandbox's
			case !filepath.IsAbs(inc):
				inc = filepath.Join(filepath.Dir(f), inc)
			}
			add(filepath.Clean(inc), depth+1)
		}
	}
	for _, f := range out {
		add(f, 0)
	}
	return withIncludes
}

// gitIncludeDepth is git's own limit on nested includes.
const gitIncludeDepth = 10

// submoduleDirMax bounds the directories submoduleConfigs looks at.
const submoduleDirMax = 10000

// submoduleConfigs returns the config files of the submodule git directories below modules
// (modules/<name>/, where a name may hold slashes, and their own modules/ for nested ones).
func submoduleConfigs(modules string) []string {
	var out []string
	n := 0
	filepath.WalkDir(modules, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if n++; n > submoduleDirMax {
			return filepath.SkipAll
		}
		if p == modules {
			return nil
		}
		if _, err := os.Lstat(filepath.Join(p, "HEAD")); err != nil {
			return nil // a directory of a name with slashes: go on below it
		}
		out = append(out, filepath.Join(p, "config"), filepath.Join(p, "config.worktree"))
		// A git directory: only its own modules/ holds more submodules.
		out = append(out, submoduleConfigs(filepath.Join(p, "modules"))...)
		return filepath.SkipDir
	})
	return out
}

// gitIncludes returns the path values of a git config's include and includeIf sections (the
// condition is not evaluated: any of them may apply), read by changeset's git config parser.
func gitIncludes(data []byte) []string {
	return changeset.GitConfigIncludes(data)
}
