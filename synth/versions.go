package synth

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// Version-pinned paths: a toolchain's files carry its version in their names (gcc-12,
// python3.11, /usr/lib/gcc/x86_64-linux-gnu/12/cc1, ~/.pyenv/versions/3.11.7), and the next
// distribution release moves them (gcc-14, python3.13, /usr/libexec/gcc/.../14/cc1). Unless
// Options.Exact, the version becomes a glob in read, list and exec rules; the enforcer grants
// what the glob matches on the host, so a portable profile names the same binaries there and
// nothing else. Write rules keep their versions: they are the tool's own outputs.

// Built on first use: package inits cost every sysprof process (the enforce init stage too).
var (
	// python3.11 (a binary, a lib directory); not python3.11-config or libpython3.11.so.
	pythonVersion = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(python[23])\.[0-9]+$`) })
	// gcc-12, g++-12, x86_64-linux-gnu-gcc-12, cpp-12, lto-dump-12, gcc-ar-12, clang-16.
	toolVersion = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(.*(?:gcc|g\+\+|cpp|gfortran|lto-dump|clang|clang\+\+|lld|llvm-[a-z]+)(?:-[a-z]+)?)-[0-9]+$`)
	})
	versionNum = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]+(\.[0-9]+)*$`) })
)

// versionless returns p with its toolchain versions as globs, or p.
func versionless(p string) string {
	c := strings.Split(p, "/")
	for i, x := range c {
		switch {
		case pythonVersion().MatchString(x):
			c[i] = pythonVersion().ReplaceAllString(x, "$1.*")
		case toolVersion().MatchString(x):
			c[i] = toolVersion().ReplaceAllString(x, "$1-*")
		// .../lib/gcc/<triplet>/<version>/...: the version, and lib or libexec (cc1 moved).
		case x == "gcc" && i >= 1 && (c[i-1] == "lib" || c[i-1] == "libexec") && i+2 < len(c) && versionNum().MatchString(c[i+2]):
			c[i-1], c[i+2] = "lib*", "*"
		// ~/.pyenv/versions/3.11.7
		case x == "versions" && i >= 1 && c[i-1] == ".pyenv" && i+1 < len(c) && versionNum().MatchString(c[i+1]):
			c[i+1] = "*"
		}
	}
	return strings.Join(c, "/")
}

// passVersions turns the versions in read, list and exec rules into globs (unless Options.Exact).
func (s *state) passVersions() []string {
	if s.opts.Exact || s.opts.Unportable {
		return nil
	}
	n := 0
	for _, set := range []*ruleSet{s.read, s.list, s.exec} {
		m := set.byPath()
		for _, p := range sortedKeys(m) {
			g := versionless(p)
			if g == p {
				continue
			}
			r := m[p]
			set.delete(p)
			if old := set.get(g); old != nil {
				old.prov = earliest(old.prov, r.prov)
				old.files += r.files
			} else {
				set.set(g, r)
			}
			n++
		}
	}
	var msgs []string
	// gcc's plugins, crt files and headers live in the same tree as cc1, which newer Debian
	// moved to /usr/libexec: read the gcc tree in both.
	for p := range s.exec.byPath() {
		if strings.Contains(p, "/usr/lib*/gcc/") && s.read.get(gccTree) == nil {
			s.read.set(gccTree, &pathRule{prov: s.exec.get(p).prov, note: "gcc's own tree (/usr/lib/gcc or /usr/libexec/gcc by release)", files: 1})
			msgs = append(msgs, "portable: + read "+gccTree)
			break
		}
	}
	// What newer libcs and runtimes of the same programs read or call in addition.
	for _, r := range newerRuntimeReads {
		if s.read.get(r) == nil && s.read.len() > 0 {
			s.read.set(r, &pathRule{note: "read by newer runtimes of the same programs (python 3.13's allocator, glibc's malloc)", files: 1})
			msgs = append(msgs, "portable: + read "+r)
		}
	}
	if n == 0 {
		return msgs
	}
	return append(msgs, fmt.Sprintf("portable: %s with a toolchain version made version-independent (gcc-12 → gcc-*, python3.11 → python3.*, lib/gcc/…/12 → lib*/gcc/…/*)", plural(n, "rule")))
}

// gccTree is gcc's tree under either library directory.
const gccTree = "/usr/lib*/gcc"

// newerRuntimeReads are read-only kernel settings newer runtimes consult.
var newerRuntimeReads = []string{"/proc/sys/vm/overcommit_memory", "/sys/kernel/mm/transparent_hugepage"}
