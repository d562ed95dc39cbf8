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

// KeptBytecodeCache reports a BytecodeCache the host keeps after a run: anywhere but the
// run's private temporary directory ($TMPDIR, /tmp) and the kernel's trees. p is portable or
// absolute.
//
// A profile never grants one, in a system tree or in the work tree alike: python reads the
// caches that exist and goes on without writing one where it cannot, while a write rule there
// would let the command plant bytecode (a .pyc whose header names its source's mtime and size)
// that every later python outside the sandbox runs in place of the source.
func KeptBytecodeCache(p string) bool {
	for _, private := range []string{"/tmp/", "$TMPDIR/", "/dev/", "/proc/", "/sys/"} {
		if strings.HasPrefix(p, private) {
			return false
		}
	}
	return BytecodeCache(p)
}
