package changeset

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
)

// maxGitConfig is the largest repository config read; a bigger one is not a config git
// writes, and is held.
const maxGitConfig = 1 << 20

// IsGitConfig reports whether host path p is a git directory's config (config or
// config.worktree directly in a directory whose name ends in .git, or in one below its
// modules/ or worktrees/), its info/attributes or its commondir: a change there may make git
// run a program (GitRepoFileRuns).
func IsGitConfig(p string) bool {
	base := filepath.Base(p)
	dir := filepath.Dir(filepath.Clean(p))
	if base == "attributes" && filepath.Base(dir) == "info" {
		dir = filepath.Dir(dir)
	} else if base != "config" && base != "config.worktree" && base != "commondir" {
		return false
	}
	comps := strings.Split(dir, "/")
	for i := len(comps) - 1; i >= 0; i-- {
		if strings.HasSuffix(comps[i], ".git") {
			// The git directory itself, or modules/NAME..., worktrees/NAME below it.
			rest := comps[i+1:]
			return len(rest) == 0 || len(rest) >= 2 && (rest[0] == "modules" || rest[0] == "worktrees")
		}
	}
	return false
}

// gitEntry is one variable of a git config file: section and key in lower case, the
// subsection as written (the deprecated [a.B] form lower-cased, as git does).
type gitEntry struct {
	section, sub, key, value string
	hasSub                   bool // [s "sub"], [s.sub]: sub may be empty ([s ""])
	hasValue                 bool // "key = value"; a bare "key" is boolean true
}

func (e gitEntry) name() string {
	if e.section == "" {
		return e.key // a variable before any section: git takes it so
	}
	if e.hasSub {
		return e.section + "." + e.sub + "." + e.key
	}
	return e.section + "." + e.key
}

// GitConfigRuns is the one decision on a change to a repository's git config (issue 23): the
// settings in newer that make git run a program (or read another config file, or reach a
// remote through a command), or that send the user's next push or fetch somewhere else, and
// that older does not have with the same value, each as "section.key = value". A config that
// cannot be read as one (binary, too big, a syntax git refuses) returns why, as a single
// entry: it is held like a code-running one. Removing a setting, and ordinary writes (a new
// remote, branches, submodule URLs, user.*), return nil.
//
// Redirects (gitRedirects): a pushurl, a url.<base>.insteadOf or pushInsteadOf, and a URL
// of a remote the config already had: the user's next `git push`, outside any sandbox and
// with the user's credentials, would carry the repository to the run's choice (issue 23's
// supply-chain round six). A new remote is not one: nothing uses it until the user names it.
// GitRepoFileRuns is the decision on a change to git directory file p (IsGitConfig): its
// config's by GitConfigRuns; info/attributes, which no git command writes and which picks the
// filter, diff and merge drivers git runs, by any change of its content; commondir, which
// makes git read the config and hooks of the directory it names, unless it names what `git
// worktree add` writes there (worktrees/NAME/commondir: the git directory above).
func GitRepoFileRuns(p string, older, newer []byte) []string {
	if filepath.Base(p) == "commondir" {
		if bytes.Equal(older, newer) || ordinaryCommonDir(p, newer) {
			return nil
		}
		return []string{fmt.Sprintf("commondir = %q (git reads the config and hooks of the directory it names)", strings.TrimSpace(string(newer)))}
	}
	if filepath.Base(p) == "attributes" {
		if bytes.Equal(older, newer) {
			return nil
		}
		return []string{"info/attributes changed (it picks the filter, diff and merge drivers git runs)"}
	}
	return GitConfigRuns(older, newer)
}

// GitDirOnTheWay reports whether host path p is a directory git goes through to a config
// (IsGitConfig) of its git directory: its info/, modules/ and worktrees/ and their entries.
func GitDirOnTheWay(p string) bool {
	return IsGitConfig(p+"/attributes") || IsGitConfig(p+"/config") || IsGitConfig(p+"/x/config")
}

// ordinaryCommonDir: commondir file p of a linked worktree's git directory (C/worktrees/NAME)
// names C.
func ordinaryCommonDir(p string, data []byte) bool {
	d := filepath.Dir(filepath.Clean(p))
	if filepath.Base(filepath.Dir(d)) != "worktrees" {
		return false
	}
	t := strings.TrimSpace(string(data))
	if t == "" || strings.ContainsAny(t, "\n\x00") {
		return false
	}
	if !filepath.IsAbs(t) {
		t = filepath.Join(d, t)
	}
	return filepath.Clean(t) == filepath.Dir(filepath.Dir(d))
}

func GitConfigRuns(older, newer []byte) []string {
	nw, err := parseGitConfig(newer)
	if err != nil {
		return []string{"not readable as a git config (" + err.Error() + ")"}
	}
	old, _ := parseGitConfig(older) // a broken old file: every code-running entry is new
	had := map[string]bool{}
	remotes := map[string]bool{} // the remotes older has a URL for
	for _, e := range old {
		had[e.name()+"\x00"+e.value] = true
		if e.section == "remote" && e.key == "url" {
			remotes[e.sub] = true
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, e := range nw {
		k := e.name() + "\x00" + e.value
		if !gitRuns(e) && !gitRedirects(e, remotes) || had[k] || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, fmt.Sprintf("%s = %q", e.name(), e.value))
	}
	return out
}

// GitConfigIncludes returns the path values of a git config's include and includeIf
// sections, in order (the condition is not evaluated: any of them may apply); none when git
// could not read the file either.
func GitConfigIncludes(data []byte) []string {
	es, _ := parseGitConfig(data)
	var out []string
	for _, e := range es {
		if (e.section == "include" || e.section == "includeif") && e.key == "path" && e.value != "" {
			out = append(out, e.value)
		}
	}
	return out
}

// gitBool reports whether v is one of git's boolean spellings.
func gitBool(e gitEntry) bool {
	if !e.hasValue {
		return true
	}
	switch strings.ToLower(strings.TrimSpace(e.value)) {
	case "", "true", "false", "yes", "no", "on", "off", "1", "0":
		return true
	}
	return false
}

// gitRuns reports whether entry e makes git run a program (git-config(1)), read other
// config, or allow the ext:: transport.
func gitRuns(e gitEntry) bool {
	v := strings.TrimSpace(e.value)
	if strings.HasPrefix(strings.ToLower(v), "ext::") {
		return true // a remote URL, pushurl or submodule URL that is a command
	}
	s, k := e.section, e.key
	switch s {
	case "core":
		switch k {
		case "fsmonitor":
			return !gitBool(e) // true/false is the built-in daemon
		case "hookspath", "pager", "editor", "sshcommand", "askpass", "gitproxy", "alternaterefscommand":
			return true
		}
	case "sequence":
		return k == "editor"
	case "diff":
		return !e.hasSub && k == "external" || e.hasSub && (k == "textconv" || k == "command")
	case "merge":
		return e.hasSub && k == "driver"
	case "filter":
		return k == "clean" || k == "smudge" || k == "process"
	case "credential":
		return k == "helper"
	case "alias":
		return strings.HasPrefix(v, "!")
	case "include":
		return k == "path"
	case "includeif":
		return k == "path"
	case "gpg":
		return k == "program" || k == "defaultkeycommand"
	case "uploadpack":
		return k == "packobjectshook"
	case "remote":
		return k == "uploadpack" || k == "receivepack" || k == "vcs"
	case "url":
		return strings.HasPrefix(strings.ToLower(e.sub), "ext::")
	case "protocol":
		return k == "allow" && (!e.hasSub || strings.EqualFold(e.sub, "ext"))
	case "pager":
		return !gitBool(e)
	case "web":
		return k == "browser"
	case "browser", "man", "difftool", "mergetool", "guitool":
		return k == "cmd" || k == "path"
	case "instaweb", "sendemail":
		return true
	case "submodule":
		return k == "update" && strings.HasPrefix(v, "!")
	case "interactive":
		return k == "difffilter"
	case "tar":
		return k == "command"
	case "trailer":
		return k == "command" || k == "cmd"
	case "hook":
		return k == "command"
	}
	return false
}

// gitRedirects reports whether entry e sends where git pushes or fetches elsewhere: a
// pushurl, a url.<base>.insteadOf or pushInsteadOf, or a URL of a remote in remotes (one the
// config had before: a changed or second URL, which push uses too).
func gitRedirects(e gitEntry, remotes map[string]bool) bool {
	switch e.section {
	case "remote":
		return e.key == "pushurl" || e.key == "url" && remotes[e.sub]
	case "url":
		return e.key == "insteadof" || e.key == "pushinsteadof"
	}
	return false
}

// parseGitConfig reads a git config file as git does: [section], [section "sub"] (escapes
// \" and \\), the deprecated [section.sub], a variable after the header on the same line,
// names case-insensitive, values with quotes, escapes, # and ; comments and backslash-newline
// continuations.
func parseGitConfig(data []byte) ([]gitEntry, error) {
	if len(data) > maxGitConfig {
		return nil, fmt.Errorf("larger than %d bytes", maxGitConfig)
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, fmt.Errorf("a NUL byte")
	}
	p := gitParser{b: data, line: 1}
	p.b = bytes.TrimPrefix(p.b, []byte("\xef\xbb\xbf"))
	var out []gitEntry
	section, sub, hasSub := "", "", false
	for {
		p.skipSpace()
		c, ok := p.peek()
		if !ok {
			return out, nil
		}
		switch {
		case c == '\n':
			p.next()
		case c == '#' || c == ';':
			p.skipLine()
		case c == '[':
			p.next()
			var err error
			if section, sub, hasSub, err = p.header(); err != nil {
				return nil, err
			}
		case isAlpha(c):
			e, err := p.variable()
			if err != nil {
				return nil, err
			}
			e.section, e.sub, e.hasSub = section, sub, hasSub
			out = append(out, e)
		default:
			return nil, fmt.Errorf("line %d: unexpected %q", p.line, c)
		}
	}
}

type gitParser struct {
	b    []byte
	i    int
	line int
}

func (p *gitParser) peek() (byte, bool) {
	if p.i >= len(p.b) {
		return 0, false
	}
	return p.b[p.i], true
}

func (p *gitParser) next() byte {
	c := p.b[p.i]
	p.i++
	if c == '\n' {
		p.line++
	}
	return c
}

func (p *gitParser) skipSpace() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *gitParser) skipLine() {
	for p.i < len(p.b) && p.b[p.i] != '\n' {
		p.i++
	}
}

func isAlpha(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func isKeyChar(c byte) bool { return isAlpha(c) || c >= '0' && c <= '9' || c == '-' }

// header reads a section header after its '['.
func (p *gitParser) header() (section, sub string, hasSub bool, err error) {
	start := p.i
	for p.i < len(p.b) && (isKeyChar(p.b[p.i]) || p.b[p.i] == '.') {
		p.i++
	}
	name := string(p.b[start:p.i])
	if name == "" {
		return "", "", false, fmt.Errorf("line %d: a section header without a name", p.line)
	}
	c, ok := p.peek()
	switch {
	case ok && c == ']':
		p.next()
		// [section.sub]: deprecated, the subsection lower-cased.
		s, rest, dotted := strings.Cut(name, ".")
		return strings.ToLower(s), strings.ToLower(rest), dotted, nil
	case ok && (c == ' ' || c == '\t'):
		p.skipSpace()
		if c, ok := p.peek(); !ok || c != '"' {
			return "", "", false, fmt.Errorf("line %d: a subsection must be quoted", p.line)
		}
		p.next()
		var b strings.Builder
		for {
			c, ok := p.peek()
			if !ok || c == '\n' {
				return "", "", false, fmt.Errorf("line %d: an unterminated subsection", p.line)
			}
			p.next()
			if c == '"' {
				break
			}
			if c == '\\' {
				if c, ok = p.peek(); !ok || c == '\n' {
					return "", "", false, fmt.Errorf("line %d: an unterminated subsection", p.line)
				}
				p.next()
			}
			b.WriteByte(c)
		}
		if c, ok := p.peek(); !ok || c != ']' {
			return "", "", false, fmt.Errorf("line %d: a section header not closed by ]", p.line)
		}
		p.next()
		// [diff.x "y"] is git's diff.x.y.*: the driver "x.y".
		if s, rest, dotted := strings.Cut(name, "."); dotted {
			return strings.ToLower(s), strings.ToLower(rest) + "." + b.String(), true, nil
		}
		return strings.ToLower(name), b.String(), true, nil
	}
	return "", "", false, fmt.Errorf("line %d: a bad section header", p.line)
}

// variable reads "name [= value]" up to the end of its (continued) line.
func (p *gitParser) variable() (gitEntry, error) {
	start := p.i
	for p.i < len(p.b) && isKeyChar(p.b[p.i]) {
		p.i++
	}
	e := gitEntry{key: strings.ToLower(string(p.b[start:p.i]))}
	p.skipSpace()
	c, ok := p.peek()
	if !ok || c == '\n' || c == '#' || c == ';' {
		p.skipLine()
		return e, nil
	}
	if c != '=' {
		return e, fmt.Errorf("line %d: %q after the name %s", p.line, c, e.key)
	}
	p.next()
	e.hasValue = true
	var b strings.Builder
	quoted := false
	pending := 0 // spaces seen outside quotes: kept only between parts of the value
	for {
		c, ok := p.peek()
		if !ok || c == '\n' {
			if quoted {
				return e, fmt.Errorf("line %d: an unterminated quote", p.line)
			}
			break
		}
		p.next()
		if !quoted && (c == '#' || c == ';') {
			p.skipLine()
			break
		}
		if !quoted && (c == ' ' || c == '\t' || c == '\r') {
			if b.Len() > 0 {
				pending++
			}
			continue
		}
		for ; pending > 0; pending-- {
			b.WriteByte(' ')
		}
		switch c {
		case '"':
			quoted = !quoted
		case '\\':
			d, ok := p.peek()
			if !ok {
				continue // git ends the value there
			}
			p.next()
			switch d {
			case '\n': // continuation
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'b':
				b.WriteByte('\b')
			case '\\', '"':
				b.WriteByte(d)
			default:
				return e, fmt.Errorf("line %d: a bad escape \\%c", p.line, d)
			}
		default:
			b.WriteByte(c)
		}
	}
	e.value = b.String()
	return e, nil
}
