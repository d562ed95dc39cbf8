#!/bin/sh
# profiles/learn.sh relearns the shipped profiles from their fixtures (as root):
#
#   go build -o bin/sysprof ./cmd/sysprof && sudo profiles/learn.sh [NAME...]
#
# Each profile is learned three times and merged: in a fresh HOME with cold caches (as alice in
# src/project), again in the same place with warm caches, and as another user in another
# directory (bob in build/checkout, cold caches). The environment is hermetic (HOME, TMPDIR,
# Go and Cargo caches under the box's HOME, offline). The output goes to $OUT (default: a temp
# directory, printed at the end); `python3 profiles/review.py OUT/*.yaml` applies the mechanical
# part of the review, and the result is REVIEWED BY HAND before it replaces profiles/*.yaml:
# notes added, machine-specific entries removed (see profiles/README.md).
set -eu

repo=$(cd "$(dirname "$0")/.." && pwd)
sysprof=${SYSPROF:-$repo/bin/sysprof}
root=$(mktemp -d /tmp/sysprof-shipped-XXXXXX)
out=${OUT:-$root/out}
mkdir -p "$out"
rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
rustup_bin=$(command -v rustup || echo "$HOME/.cargo/bin/rustup")
goroot=$(go env GOROOT)
gopls_bin=$(command -v gopls || { p="$(go env GOPATH)/bin/gopls"; [ -x "$p" ] && echo "$p"; } || true)

# box USER WORKREL FIXTUREDIR NAME: a fresh work directory holding a copy of the fixture, and a
# HOME (cold caches) and TMPDIR of its own per profile; sets WORK and BOXHOME.
box() {
	BOXHOME=$root/$1/home/$4/$1
	WORK=$root/$1/$2
	BOXTMP=$root/$1/tmp
	mkdir -p "$BOXHOME" "$WORK" "$BOXTMP"
	if [ -n "$3" ]; then cp -R "$3"/. "$WORK"/; fi
	# rustup's proxies where a rustup user has them: $CARGO_HOME/bin (a hard link of rustup, so
	# that the executable's path is under $CARGO_HOME, plus the symlinks rustup-init makes).
	if [ ! -e "$BOXHOME/.cargo/bin/rustup" ]; then
		mkdir -p "$BOXHOME/.cargo/bin"
		ln "$rustup_bin" "$BOXHOME/.cargo/bin/rustup" 2>/dev/null || cp "$rustup_bin" "$BOXHOME/.cargo/bin/rustup"
		for p in cargo rustc rustfmt rustdoc cargo-fmt; do ln -sf rustup "$BOXHOME/.cargo/bin/$p"; done
	fi
	# gopls where `go install` puts it for a user with the default GOPATH ($HOME/go/bin).
	if [ -n "$gopls_bin" ] && [ ! -e "$BOXHOME/go/bin/gopls" ]; then
		mkdir -p "$BOXHOME/go/bin"
		ln "$gopls_bin" "$BOXHOME/go/bin/gopls" 2>/dev/null || cp "$gopls_bin" "$BOXHOME/go/bin/gopls"
	fi
	printf '[user]\n\tname = %s\n\temail = %s@example.com\n[init]\n\tdefaultBranch = main\n' "$1" "$1" >"$BOXHOME/.gitconfig"
}

# inbox CMD...: run CMD in the box with the hermetic environment.
inbox() {
	(cd "$WORK" && env -i \
		PATH="$BOXHOME/.cargo/bin:$BOXHOME/go/bin:$goroot/bin:/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin" \
		HOME="$BOXHOME" TMPDIR="$BOXTMP" LANG=C LC_ALL=C TERM=dumb \
		GOCACHE="$BOXHOME/.cache/go-build" GOMODCACHE="$BOXHOME/go/pkg/mod" GOFLAGS=-mod=mod \
		GOTOOLCHAIN=local GOPROXY=off GOSUMDB=off GOTELEMETRY=off \
		CARGO_HOME="$BOXHOME/.cargo" RUSTUP_HOME="$rustup_home" CARGO_NET_OFFLINE=true CARGO_TERM_COLOR=never \
		NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_AUDIT=false NPM_CONFIG_FUND=false NPM_CONFIG_OFFLINE=true \
		GIT_AUTHOR_NAME="Sysprof Test" GIT_AUTHOR_EMAIL=test@example.com \
		GIT_COMMITTER_NAME="Sysprof Test" GIT_COMMITTER_EMAIL=test@example.com \
		GIT_AUTHOR_DATE=2026-01-02T03:04:05Z GIT_COMMITTER_DATE=2026-01-02T03:04:05Z \
		"$@")
}

git_session='git init -q . && git add README && git commit -q -m "first commit" && git status --short --branch && git log --format="%H %an <%ae> %s" && git diff HEAD --stat'

# spec NAME: sets FIXTURE, CLEAN (shell run in the work dir between runs) and the command in $@
# via the CMD variable (a shell-quoted list evaluated with eval). eslint and prettier need their
# fixture's node_modules: `npm ci --prefix testdata/shipped/jstools` (as .ci/run does) first.
spec() {
	CLEAN=true
	case $1 in
	go-build) FIXTURE=$repo/testdata/projects/gomod CMD='go build -o app .' CLEAN='rm -f app' ;;
	go-test) FIXTURE=$repo/testdata/projects/gomod CMD='go test -count=1 .' ;;
	go-vet) FIXTURE=$repo/testdata/projects/gomod CMD='go vet ./...' ;;
	gofmt) FIXTURE=$repo/testdata/projects/gomod CMD='gofmt -l .' ;;
	cargo-build) FIXTURE=$repo/testdata/projects/crate CMD='cargo build --offline' CLEAN='rm -rf target' ;;
	cargo-test) FIXTURE=$repo/testdata/projects/crate CMD='cargo test --offline' CLEAN='rm -rf target' ;;
	rustfmt) FIXTURE=$repo/testdata/shipped/rustfmt CMD='rustfmt --check --edition 2021 src/main.rs' ;;
	make-gcc) FIXTURE=$repo/testdata/projects/cproj CMD='make' CLEAN='rm -f hello *.o' ;;
	git) FIXTURE=$repo/testdata/shipped/git CMD="sh -c '$git_session'" CLEAN='rm -rf .git' ;;
	npm-test) FIXTURE=$repo/testdata/shipped/node CMD='npm test' ;;
	npm-install) FIXTURE=$repo/testdata/shipped/npm-install CMD='npm install' CLEAN='rm -rf node_modules package-lock.json generated' ;;
	eslint-cache) FIXTURE=$repo/testdata/shipped/jstools CMD='npx eslint --cache --cache-location node_modules/.cache/eslint/ src' CLEAN='rm -rf node_modules/.cache' ;;
	eslint-plain) FIXTURE=$repo/testdata/shipped/jstools CMD='npx eslint src' ;;
	prettier) FIXTURE=$repo/testdata/shipped/jstools CMD='npx prettier --check src' ;;
	gopls) FIXTURE=$repo/testdata/shipped/gopls CMD='gopls check main.go' ;;
	python3-unittest) FIXTURE=$repo/testdata/shipped/unittest CMD='python3 -m unittest' CLEAN='rm -rf __pycache__ tests/__pycache__' ;;
	python3-compile) FIXTURE=$repo/testdata/shipped/python CMD='python3 -m py_compile greet.py main.py' CLEAN='rm -rf __pycache__' ;;
	python3-run) FIXTURE=$repo/testdata/shipped/python CMD='python3 main.py' CLEAN='rm -rf __pycache__' ;;
	*) echo "learn.sh: unknown profile $1" >&2; exit 2 ;;
	esac
}

learn_one() {
	name=$1 file=$2
	spec "$name"
	rm -f "$file"
	for pass in alice-cold alice-warm bob-cold; do
		case $pass in
		alice-cold) box alice "src/$name/project" "$FIXTURE" "$name" ;;
		alice-warm) ;;
		bob-cold) box bob "build/$name/checkout" "$FIXTURE" "$name" ;;
		esac
		echo "== $name ($pass): $CMD" >&2
		eval "inbox \"$sysprof\" learn -p \"$file\" -- $CMD" >/dev/null
		(cd "$WORK" && sh -c "$CLEAN")
	done
}

names=${*:-go-build go-test go-vet gofmt cargo-build cargo-test rustfmt make-gcc git npm-test npm-install eslint prettier python3 python3-unittest gopls}
for n in $names; do
	case $n in
	python3)
		# Two learns (byte-compiling, running a script) merged into one profile.
		learn_one python3-compile "$root/python3-compile.yaml"
		learn_one python3-run "$root/python3-run.yaml"
		"$sysprof" merge --force "$root/python3-compile.yaml" "$root/python3-run.yaml" -o "$out/python3.yaml"
		;;
	eslint)
		# With a cache (in node_modules/.cache, the conventional place) and without (eslint then
		# deletes a stale .eslintcache in the work tree), merged into one profile.
		learn_one eslint-cache "$root/eslint-cache.yaml"
		learn_one eslint-plain "$root/eslint-plain.yaml"
		"$sysprof" merge --force "$root/eslint-cache.yaml" "$root/eslint-plain.yaml" -o "$out/eslint.yaml"
		;;
	*) learn_one "$n" "$out/$n.yaml" ;;
	esac
done
echo "learned into $out (work in $root)" >&2
