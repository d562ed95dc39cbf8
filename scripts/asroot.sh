#!/usr/bin/env bash
# scripts/asroot.sh WHAT CMD...: run CMD as root. As root it runs CMD; otherwise it re-runs CMD
# under sudo when sudo exists, keeping what the Go toolchain and the tests read from the
# environment; without sudo it says how to run WHAT and fails. `make demo` and `make test` use
# it, so that the README's commands work as written whether you are root or not.
set -euo pipefail
what=$1
shift
if [ "$(id -u)" = 0 ]; then
	exec "$@"
fi
if ! command -v sudo >/dev/null; then
	echo "$what needs root (eBPF, namespaces and seccomp) and sudo is not installed: run it as root, e.g. su -c '$what'" >&2
	exit 1
fi
echo "$what needs root: running '$*' under sudo" >&2
# sudo resets the environment: keep PATH (go may live in /usr/local/go/bin), CI (privileged tests
# fail instead of skipping), and the caller's module cache (root has none, and may be offline).
keep=("PATH=$PATH")
for v in CI GOFLAGS GOPROXY GOTOOLCHAIN GOMODCACHE; do
	if [ -n "${!v-}" ]; then keep+=("$v=${!v}"); fi
done
if [ -z "${GOMODCACHE-}" ] && command -v go >/dev/null; then
	keep+=("GOMODCACHE=$(go env GOMODCACHE)")
fi
exec sudo env "${keep[@]}" "$@"
