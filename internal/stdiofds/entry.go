//go:build linux && (amd64 || arm64)

package stdiofds

// Entry is the program's entry point when linked with -E (see the package comment): it records
// the closed standard fds and jumps to the runtime's own entry. Never called from Go.
func Entry()
