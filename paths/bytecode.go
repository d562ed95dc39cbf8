package paths

import (
	"path"
	"strings"
)

// BytecodeCache reports a Python bytecode cache: a __pycache__ directory or a file in one
// (NAME.cpython-311.pyc, and the NAME.pyc.<id> it is written through). Python writes a
// missing or stale one wherever it can and goes on without it where it cannot (the same
// import, only slower): a refused write of one is no denial.
func BytecodeCache(p string) bool {
	dir, name := path.Split(p)
	if name == "__pycache__" {
		return true
	}
	if path.Base(dir) != "__pycache__" {
		return false
	}
	return strings.Contains(name, ".pyc") || strings.HasSuffix(name, ".tmp")
}

// SystemBytecodeCache reports a BytecodeCache in a system tree (/usr, /opt, /lib, …, not
// below a variable): /usr/lib/python3/dist-packages/xdist/__pycache__/plugin.cpython-311-pytest-7.2.1.pyc.
// p is portable: a host path below a variable's directory (the work tree, $HOME) is one only
// once rewritten.
//
// Only a first run as root after a package was installed writes one (pytest's rewritten
// plugins); every other run and every other user reads it or gets EACCES and does the same
// thing. A profile never grants it: a write rule there would let the command plant code that
// every later, unsandboxed python runs.
func SystemBytecodeCache(p string) bool {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "/tmp/") || strings.HasPrefix(p, "/dev/") ||
		strings.HasPrefix(p, "/proc/") || strings.HasPrefix(p, "/sys/") {
		return false
	}
	return BytecodeCache(p)
}
