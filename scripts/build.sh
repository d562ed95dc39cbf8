#!/bin/sh
# scripts/build.sh OUT [LDFLAGS]: builds sysprof into OUT with its init stage program
# (cmd/sysprof-init) embedded. The program is built next to OUT (OUT.init) and handed to the
# build with -overlay as enforcer/initbin/sysprof-init and the sysprof_init tag: nothing is
# written into the source tree, and a plain `go build ./cmd/sysprof` (no program embedded)
# re-executes itself instead.
set -eu
out=$1
ldflags=${2:--s -w}
top=$(cd "$(dirname "$0")/.." && pwd)
go=${GO:-go}
mkdir -p "$(dirname "$out")"
init="$out.init"
overlay="$out.overlay.json"
cd "$top"
CGO_ENABLED=0 $go build -trimpath -ldflags '-s -w' -o "$init" ./cmd/sysprof-init
case $init in /*) ;; *) init="$top/$init" ;; esac
printf '{"Replace":{"%s":"%s"}}\n' "$top/enforcer/initbin/sysprof-init" "$init" >"$overlay"
# The entry that notes which of fds 0-2 were closed before Go's runtime opens /dev/null on them
# (internal/stdiofds): the command gets them closed too.
case $($go env GOOS)/$($go env GOARCH) in
linux/amd64 | linux/arm64) ldflags="$ldflags -E github.com/sysprof/sysprof/internal/stdiofds.Entry" ;;
esac
CGO_ENABLED=0 $go build -trimpath -tags sysprof_init -overlay "$overlay" -ldflags "$ldflags" -o "$out" ./cmd/sysprof
rm -f "$overlay"
