package enforcer

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
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

// gitConfigFiles returns the config files of the repository whose work tree is workdir:
// .git/config, or for a linked worktree (.git is a file) its own config.worktree and the common
// directory's config.
func gitConfigFiles(workdir string) []string {
	dotgit := filepath.Join(workdir, ".git")
	st, err := os.Lstat(dotgit)
	if err != nil {
		return nil
	}
	if st.IsDir() {
		return []string{filepath.Join(dotgit, "config")}
	}
	b, err := os.ReadFile(dotgit)
	if err != nil {
		return nil
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return nil
	}
	gitdir = strings.TrimSpace(gitdir)
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(workdir, gitdir)
	}
	out := []string{filepath.Join(gitdir, "config.worktree")}
	common := gitdir
	if c, err := os.ReadFile(filepath.Join(gitdir, "commondir")); err == nil {
		common = strings.TrimSpace(string(c))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitdir, common)
		}
	}
	return append(out, filepath.Join(filepath.Clean(common), "config"))
}
