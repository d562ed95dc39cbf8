#!/usr/bin/env bash
# make demo: learn a sample C build, enforce it, then run its malicious twin under the same
# profile and read the denial report. Needs root (learning uses eBPF).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
sysprof="$top/bin/sysprof"
if [ "$(id -u)" != 0 ]; then
	echo "scripts/demo.sh learns with eBPF and needs root: run 'make demo' (it asks for root) or run this as root (see 'bin/sysprof doctor')" >&2
	exit 1
fi
# Outside /tmp on purpose: enforce gives the tool a private /tmp, and the demo's fake HOME must
# stay visible so that what protects ~/.bashrc is the read-only root, not a missing file.
mkdir -p /var/lib/sysprof-demo
work=$(mktemp -d /var/lib/sysprof-demo/run.XXXXXX)
listener_pid=
cleanup() {
	[ -n "$listener_pid" ] && kill "$listener_pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

# A throwaway HOME with a fake SSH key: the twin will try to steal it.
export HOME="$work/home"
mkdir -p "$HOME/.ssh"
echo "demo-secret-key-do-not-leak" > "$HOME/.ssh/id_demo"
touch "$HOME/.bashrc"
cp -r "$top/testdata/demo/app" "$work/app"
cp -r "$top/testdata/demo/evil" "$work/evil"
profile="$work/make.yaml"

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "1. learn: run the build once, permissively, under eBPF"
(cd "$work/app" && "$sysprof" learn -p "$profile" -- make)

say "2. the profile it wrote ($profile)"
"$sysprof" show -p "$profile"

say "3. enforce: the same build under the profile (no denials expected)"
(cd "$work/app" && make -s clean && "$sysprof" enforce -p "$profile" -- make && out/hello)

say "4. the malicious twin: same build, plus a step that sends ~/.ssh/id_demo to 127.0.0.1 and edits ~/.bashrc"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -c '
import socket,sys
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1); s.settimeout(30)
try:
    c,_=s.accept(); open(sys.argv[2],"wb").write(c.recv(4096))
except Exception: pass
' "$port" "$work/stolen" &
listener_pid=$!
sleep 0.3
status=0
(cd "$work/evil" && "$sysprof" enforce -p "$profile" --report "$work/report.json" -- make EXFIL_PORT="$port") || status=$?

say "5. what reached the attacker, and what happened to ~/.bashrc"
if [ -s "$work/stolen" ]; then
	echo "LEAKED: $(cat "$work/stolen")"
	exit 1
fi
echo "the listener on 127.0.0.1:$port received nothing"
if grep -q curl "$HOME/.bashrc"; then
	echo "~/.bashrc WAS modified"
	exit 1
fi
echo "~/.bashrc is unchanged"
echo
echo "The JSON report for 'sysprof refine --from $work/report.json' listed $(grep -c '"kind"' "$work/report.json" || true) denials (exit status $status)."
