// Package mountinfo is the one parser of proc(5) /proc/PID/mountinfo, shared by the sandbox's
// init stage (mount ids, read-only flags) and hostcheck (filesystem types). It imports only the
// standard library, and a line costs one string (the scanner's text) and no other allocation
// unless a path has escapes: the init stage reads the table twice per run.
package mountinfo

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Entry is one line: "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue".
type Entry struct {
	ID, Parent int
	Root       string // root of the mount within its filesystem
	MountPoint string
	ReadOnly   bool // the mount or its superblock is read-only
	FSType     string
	Source     string
}

// Read parses /proc/self/mountinfo.
func Read() ([]Entry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	defer f.Close()
	return Parse(f)
}

// Parse reads mountinfo lines from r; a malformed line is an error (the format is the kernel's,
// so a line this cannot read means the parser is wrong, not the line).
func Parse(r io.Reader) ([]Entry, error) {
	var out []Entry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		e, ok := parseLine(sc.Text())
		if !ok {
			return nil, fmt.Errorf("parse mountinfo: malformed line %q", sc.Text())
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	return out, nil
}

// parseLine splits one line: six fields, optional fields up to a lone "-", then the filesystem
// type, the source and the superblock options.
func parseLine(line string) (Entry, bool) {
	var f [6]string
	rest := line
	for i := range f {
		if f[i], rest = field(rest); f[i] == "" {
			return Entry{}, false
		}
	}
	var e Entry
	var err1, err2 error
	e.ID, err1 = strconv.Atoi(f[0])
	e.Parent, err2 = strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return Entry{}, false
	}
	for {
		var opt string
		if opt, rest = field(rest); opt == "" {
			return Entry{}, false // no separator
		}
		if opt == "-" {
			break
		}
	}
	var superOpts string
	e.FSType, rest = field(rest)
	e.Source, rest = field(rest)
	superOpts, _ = field(rest)
	if superOpts == "" {
		return Entry{}, false
	}
	e.Root = Unescape(f[3])
	e.MountPoint = Unescape(f[4])
	e.Source = Unescape(e.Source)
	e.ReadOnly = hasOption(f[5], "ro") || hasOption(superOpts, "ro")
	return e, true
}

// field cuts the first space-separated field off s ("" when there is none).
func field(s string) (string, string) {
	s = strings.TrimLeft(s, " \t")
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

// hasOption reports whether the comma-separated list opts has opt.
func hasOption(opts, opt string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == opt {
			return true
		}
	}
	return false
}

// Unescape undoes the octal escapes the kernel writes in mountinfo paths (\040 space, \011 tab,
// \012 newline, \134 backslash); anything else, such as a backslash not followed by three octal
// digits of a byte, stays as it is.
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1], '3') && isOctal(s[i+2], '7') && isOctal(s[i+3], '7') {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c, hi byte) bool { return c >= '0' && c <= hi }
