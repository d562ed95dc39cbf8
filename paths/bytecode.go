package paths

import (
	"path"
	"strings"
)

// SystemBytecodeCache reports a Python bytecode cache in a system tree (/usr, /opt, /lib, …,
// not below a variable): a __pycache__ directory there or a file in one
// (/usr/lib/python3/dist-packages/xdist/__pycache__/plugin.cpython-311-pytest-7.2.1.pyc, and
// the NAME.pyc.<id> it is written through). p is portable: a host path below a variable's
// directory (the work tree, $HOME) is one only once rewritten.
//
// Python writes a missing one wherever it can and goes on without it where it cannot: only a
// first run as root after a package was installed writes one (pytest's rewritten plugins),
// every other run and every other user reads it or gets EACCES and does the same thing. A
// profile never grants it (a write rule there would let the command plant code that every
// later, unsandboxed python runs), and a refused write of one is no denial.
func SystemBytecodeCache(p string) bool {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "/tmp/") || strings.HasPrefix(p, "/dev/") ||
		strings.HasPrefix(p, "/proc/") || strings.HasPrefix(p, "/sys/") {
		return false
	}
	dir, name := path.Split(p)
	if name == "__pycache__" {
		return true
	}
	if path.Base(dir) != "__pycache__" {
		return false
	}
	// NAME.pyc, and the temp names it is written through (NAME.pyc.<id>, <pid>.tmp ...).
	return strings.Contains(name, ".pyc") || strings.HasSuffix(name, ".tmp")
}
