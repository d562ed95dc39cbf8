#!/usr/bin/env python3
"""The enforce storm against its floor, in turns (issue 28). Each round runs every
configuration once, in a new order each round; each run is a whole `victim storm-cpu N`
(2M getppid by default), timed from outside (wall, start-up included) and from inside (the
calls' thread CPU per call, start-up left out). Printed: medians, and the medians of the
per-round ratios over bare. Each round is classed by the syscall hooks other processes had
attached on the host (`bpftool perf show`: any syscall tracepoint puts every process on the
syscall-work path, bare ones included). As root, from the repository:

    gcc -O2 -o /srv/gt/victim testdata/victim/victim.c
    gcc -O2 -o /srv/gt/startfloor scripts/startfloor.c
    bin/sysprof learn --fresh -p /srv/gt/cpu.yaml -- /srv/gt/victim storm-cpu 1000
    bin/sysprof export -p /srv/gt/cpu.yaml --format bpf -o /srv/gt/cpu.bpf
    python3 bench/stormfloor.py -d /srv/gt -s $PWD/bin/sysprof -r 12

(startfloor covers /tmp with a tmpfs: keep the files elsewhere; /srv/gt and the binary must be
readable by nobody; the runs start in -d, where the profile was learned.) Configurations:

    bare            the storm
    floor           scripts/startfloor.c: user, mount, IPC, PID, net namespaces, read-only /,
                    private tmpfs, lo, no_new_privs, the profile's filter, exec (no Landlock,
                    no guard, no supervisor): the kernel's own floor
    bwrap           bwrap --unshare-all (no filter)
    enforce         sysprof enforce as root (with the guard's syscall tracepoints)
    enforce-nobody  sysprof enforce as uid 65534 (no guard: the same sandbox without them)
"""
import argparse
import random
import re
import statistics
import subprocess
import time


def hooks():
    out = subprocess.run(["bpftool", "perf", "show"], capture_output=True, text=True).stdout
    return len(re.findall(r"tracepoint +sys_(?:enter|exit)", out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-d", default="/srv/gt")
    ap.add_argument("-s", default="bin/sysprof")
    ap.add_argument("-r", type=int, default=12)
    ap.add_argument("-n", type=int, default=2000000)
    a = ap.parse_args()
    storm = f"{a.d}/victim storm-cpu {a.n}"
    nobody = "setpriv --reuid=65534 --regid=65534 --clear-groups"
    confs = {
        "bare": storm,
        "floor": f"{a.d}/startfloor {a.d}/cpu.bpf {storm}",
        "bwrap": f"bwrap --unshare-all --die-with-parent --new-session --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp {storm}",
        "enforce": f"{a.s} enforce -p {a.d}/cpu.yaml -- {storm}",
        "enforce-nobody": f"{nobody} {a.s} enforce -p {a.d}/cpu.yaml -- {storm}",
    }
    res = {k: {c: ([], []) for c in confs} for k in ("none", "some")}
    for r in range(a.r + 1):
        order = list(confs)
        random.shuffle(order)
        h0 = hooks()
        got = {}
        for c in order:
            t0 = time.monotonic()
            p = subprocess.run(confs[c].split(), capture_output=True, text=True, cwd=a.d)
            wall = (time.monotonic() - t0) * 1000
            m = re.search(r"([0-9.]+) ns/call", p.stderr + p.stdout)
            if p.returncode or not m:
                raise SystemExit(f"{c}: exit {p.returncode}\n{p.stderr}")
            got[c] = (wall, float(m.group(1)))
        h1 = hooks()
        if r == 0 or (h0 > 0) != (h1 > 0):
            continue  # warm-up, or the host's hooks changed during the round
        k = "some" if h0 else "none"
        for c in confs:
            res[k][c][0].append(got[c][0])
            res[k][c][1].append(got[c][1])
    for k, rs in res.items():
        n = len(rs["bare"][0])
        print(f"rounds with {k} other syscall hook on the host: {n}")
        if not n:
            continue
        print(f"  {'':15} {'wall ms':>8} {'/bare':>6} {'ns/call':>8} {'/bare':>6}")
        for c in confs:
            w, ns = rs[c]
            wr = statistics.median(x / y for x, y in zip(w, rs["bare"][0]))
            nr = statistics.median(x / y for x, y in zip(ns, rs["bare"][1]))
            print(f"  {c:15} {statistics.median(w):8.1f} {wr:5.2f}x {statistics.median(ns):8.1f} {nr:5.2f}x")


if __name__ == "__main__":
    main()
