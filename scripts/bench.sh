#!/usr/bin/env bash
# make bench: sysprof learn and enforce side by side with bare runs and the peers installed here
# (strace, bubblewrap, firejail), in one run. Prints hyperfine tables and the ratios over bare;
# BENCHMARKS.md records a run. Needs root (learning uses eBPF). Override RUNS=n for more samples.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
sp="$top/bin/sysprof"
runs=${RUNS:-5}
build_runs=${BUILD_RUNS:-3}
for t in hyperfine strace bwrap cc go python3; do
	command -v "$t" >/dev/null || { echo "bench needs $t (apt-get install hyperfine strace bubblewrap firejail; .ci/run installs them)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "bench needs root (learning uses eBPF): run 'make bench', which asks for it" >&2; exit 1; }

work=$(mktemp -d /tmp/sysprof-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
out="$work/results"
mkdir -p "$out"
cc -O2 -o "$work/victim" "$top/testdata/victim/victim.c" -lpthread
cp -r "$top/testdata/projects/gomod" "$work/gomod"
cp -r "$top/testdata/projects/cproj" "$work/cproj"
export GOCACHE="$work/gocache" GOFLAGS=-mod=mod GOTOOLCHAIN=local
storm="$work/victim storm 2000000"
# strace costs 20–150 µs per syscall on this VM (ptrace stops; slowest when the host is idle):
# the learn comparison uses a 200k storm and one strace run so the bench stays short.
storm_small="$work/victim storm 200000"
gobuild="go build -o /dev/null ."
gcc1="cc -O2 -c -o $work/cproj/greet.o $work/cproj/greet.c"
# A mid-size translation unit (testdata/bench/module.c, ~560 lines): a compile that takes long
# enough for a per-compile cost to show as what it is; greet.c (10 lines) is all startup.
cp "$top/testdata/bench/module.c" "$work/cproj/module.c"
gcc2="cc -O2 -c -o $work/cproj/module.o $work/cproj/module.c"
findusr="find /usr -xdev"

hf() { # name, then hyperfine args
	local name=$1; shift
	hyperfine --style basic --export-json "$out/$name.json" "$@" >"$out/$name.txt" 2>&1 || { cat "$out/$name.txt"; exit 1; }
}

echo "== learn: 200k-syscall storm (bare / sysprof learn / strace -f)"
(cd "$work" && hf learn-storm --runs "$runs" -n bare "$storm_small" \
	-n "sysprof learn" "$sp learn --fresh -p $work/storm-small.yaml -- $storm_small")
(cd "$work" && hf learn-storm-strace --runs 1 -n bare "$storm_small" -n "strace -f" "strace -f -o /dev/null $storm_small")
(cd "$work" && $sp learn --fresh -p "$work/storm.yaml" -- $storm >/dev/null 2>&1)

echo "== learn: go build, cold build cache"
(cd "$work/gomod" && hf learn-gobuild --runs "$build_runs" --prepare "rm -rf $GOCACHE" \
	-n bare "$gobuild" \
	-n "sysprof learn" "$sp learn --fresh -p $work/gobuild.yaml -- $gobuild")

echo "== learn: metadata walk (find /usr)"
hf learn-find --runs "$runs" --warmup 1 -n bare "$findusr" \
	-n "sysprof learn" "$sp learn --fresh -p $work/find.yaml -- $findusr"

# The same in turns (bare, learn, bare, ...): the VM's drift between hyperfine's two blocks
# (bare find moved by ±20% within minutes here) stays out of the ratio.
python3 "$top/scripts/interleave.py" "$((runs * 4))" "bare=$findusr" \
	"sysprof learn=$sp learn --fresh -p $work/find.yaml -- $findusr" >"$out/learn-find-interleaved.txt"

echo "== learn: peak memory of sysprof itself and lost events"
for name in storm gobuild find; do
	case $name in
		storm) cmd=$storm; dir=$work ;;
		gobuild) cmd=$gobuild; dir=$work/gomod; rm -rf "$GOCACHE" ;;
		find) cmd=$findusr; dir=$work ;;
	esac
	(cd "$dir" && SYSPROF_STATS=1 $sp learn --fresh -p "$work/$name.yaml" -- $cmd >/dev/null 2>"$out/stats-$name.txt") || true
	printf '%-8s %s | %s\n' "$name" "$(grep -h 'peak RSS' "$out/stats-$name.txt" | tail -1)" "$(grep -h 'lost events' "$out/stats-$name.txt" | tr -s ' ' | tail -1)"
done

echo "== enforce: learn the profiles once"
(cd "$work" && $sp learn --fresh -p "$work/true.yaml" -- true >/dev/null 2>&1)
(cd "$work/gomod" && $sp learn --fresh -p "$work/gobuild-warm.yaml" -- $gobuild >/dev/null 2>&1)
(cd "$work" && $sp learn --fresh -p "$work/gcc.yaml" -- $gcc1 >/dev/null 2>&1)
(cd "$work" && $sp learn --fresh -p "$work/gcc2.yaml" -- $gcc2 >/dev/null 2>&1)
bwrap_ro="bwrap --unshare-all --die-with-parent --new-session --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --ro-bind $work $work"
firejail_ok=
if command -v firejail >/dev/null && firejail --noprofile --quiet true >/dev/null 2>&1; then firejail_ok=1; fi

echo "== enforce: startup (true)"
fj=(); [ -n "$firejail_ok" ] && fj=(-n "firejail --noprofile" "firejail --noprofile --quiet true")
(cd "$work" && hf enforce-true --runs 20 --warmup 3 -N -n bare "true" \
	-n "sysprof enforce" "$sp enforce -p $work/true.yaml -- true" \
	-n "bwrap --unshare-all" "$bwrap_ro true" "${fj[@]}")

echo "== enforce: 2M-syscall storm"
(cd "$work" && hf enforce-storm --runs "$runs" --warmup 1 -n bare "$storm" \
	-n "sysprof enforce" "$sp enforce -p $work/storm.yaml -- $storm" \
	-n "bwrap --unshare-all" "$bwrap_ro $storm")

echo "== enforce: go build (cold and warm cache) and gcc -c"
# Cold: the build a CI job runs (the profile learned from a cold build covers the cache writes).
(cd "$work/gomod" && rm -rf "$GOCACHE" && $sp learn --fresh -p "$work/gobuild-cold.yaml" -- $gobuild >/dev/null 2>&1)
(cd "$work/gomod" && hf enforce-gobuild-cold --runs "$build_runs" --prepare "rm -rf $GOCACHE" -n bare "$gobuild" \
	-n "sysprof enforce" "$sp enforce -p $work/gobuild-cold.yaml -- $gobuild" \
	-n "bwrap --unshare-all" "$bwrap_ro --bind $work $work $gobuild")
(cd "$work/gomod" && $gobuild)
(cd "$work/gomod" && hf enforce-gobuild --runs "$runs" --warmup 1 -n bare "$gobuild" \
	-n "sysprof enforce" "$sp enforce -p $work/gobuild-warm.yaml -- $gobuild" \
	-n "bwrap --unshare-all" "$bwrap_ro --bind $GOCACHE $GOCACHE --bind $PWD $PWD $gobuild")
(cd "$work" && hf enforce-gcc --runs 10 --warmup 2 -n bare "$gcc1" \
	-n "sysprof enforce" "$sp enforce -p $work/gcc.yaml -- $gcc1" \
	-n "bwrap --unshare-all" "$bwrap_ro --bind $work/cproj $work/cproj $gcc1")
(cd "$work" && hf enforce-gcc-module --runs "$runs" --warmup 1 -n bare "$gcc2" \
	-n "sysprof enforce" "$sp enforce -p $work/gcc2.yaml -- $gcc2" \
	-n "bwrap --unshare-all" "$bwrap_ro --bind $work/cproj $work/cproj $gcc2")

echo "== enforce: npm install of 20 packages with postinstall scripts from a loopback registry"
# The egress proxy carries the registry connection (a network profile gets its own namespace);
# bwrap shares the host network. Warm npm cache, node_modules removed before each run.
if command -v npm >/dev/null; then
	(cd "$top" && go build -o "$work/npmregistry" ./scripts/npmregistry)
	"$work/npmregistry" -n 20 >"$work/registry.url" &
	reg_pid=$!
	trap 'kill $reg_pid 2>/dev/null; rm -rf "$work"' EXIT
	for _ in $(seq 50); do [ -s "$work/registry.url" ] && break; sleep 0.1; done
	mkdir -p "$work/npmapp" "$work/npmhome"
	python3 -c "import json,sys; json.dump({'name':'app','version':'1.0.0','dependencies':{f'probe-{i}':'1.0.0' for i in range(20)}}, open(sys.argv[1],'w'))" "$work/npmapp/package.json"
	npmi="npm install --registry=$(cat "$work/registry.url") --no-audit --no-fund --no-update-notifier --cache=$work/npmhome/.npm"
	clean_npm="rm -rf $work/npmapp/node_modules $work/npmapp/package-lock.json"
	for _ in 1 2; do (cd "$work/npmapp" && HOME="$work/npmhome" $sp learn -p "$work/npm.yaml" -- sh -c "$npmi" >/dev/null 2>&1; $clean_npm); done
	(cd "$work/npmapp" && HOME="$work/npmhome" hf enforce-npm-install --runs "$build_runs" --warmup 1 --prepare "$clean_npm" -n bare "sh -c '$npmi'" \
		-n "sysprof enforce" "$sp enforce -p $work/npm.yaml -- sh -c '$npmi'" \
		-n "bwrap --unshare-all --share-net" "bwrap --unshare-all --share-net --die-with-parent --new-session --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --bind $work $work sh -c '$npmi'")
fi

echo "== netproxy: HTTPS direct, spliced (no credentials rule) and brokered (TLS terminated, token swapped)"
# In one test process on loopback: client, proxy and upstream share the CPUs (BENCHMARKS.md).
(cd "$top" && go test ./netproxy -run - -bench BrokerBulk -benchtime 5x && go test ./netproxy -run - -bench BrokerConnect -benchtime 500x) |
	grep '^Benchmark' | tee "$out/broker.txt"

echo
echo "### learn-find, interleaved ($((runs * 4)) rounds, medians)"
echo
cat "$out/learn-find-interleaved.txt"
echo
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
for name in ["learn-storm", "learn-storm-strace", "learn-gobuild", "learn-find", "enforce-true", "enforce-storm", "enforce-gobuild-cold", "enforce-gobuild", "enforce-gcc", "enforce-gcc-module", "enforce-npm-install"]:
    p = os.path.join(out, name + ".json")
    if not os.path.exists(p):
        continue
    rs = json.load(open(p))["results"]
    bare = next(r for r in rs if r["command"] == "bare")["mean"]
    print(f"### {name}\n")
    print("| command | mean | stddev | ratio over bare |")
    print("|---|---|---|---|")
    for r in rs:
        print(f"| {r['command']} | {r['mean']*1000:.1f} ms | {(r['stddev'] or 0)*1000:.1f} ms | {r['mean']/bare:.2f}x |")
    print()
PY
