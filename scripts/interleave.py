#!/usr/bin/env python3
"""Runs commands in turn, round after round, and prints their median wall times and the ratios
over the first command. Comparing interleaved runs keeps the VM's drift out of the ratio, which
back-to-back hyperfine blocks do not (bare `find /usr` drifted 190 -> 300 ms within an hour here).

    python3 scripts/interleave.py 20 'bare=find /usr -xdev' \
        'learn=bin/sysprof learn --fresh -p /tmp/f.yaml -- find /usr -xdev'

Two warm-up rounds are not counted. Output of the commands is discarded. With --gap SECONDS
first, it sleeps that long before each command, as when a user types one command: enforce's
warm slots last 250 ms, learn's 1 s (a gap under 1 s still lets a learn take the last one over).
"""
import shlex
import statistics
import subprocess
import sys
import time


def main():
    args = sys.argv[1:]
    gap = 0.0
    if args[:1] == ["--gap"] and len(args) > 1:
        gap = float(args[1])
        args = args[2:]
    if len(args) < 2:
        sys.exit(__doc__)
    rounds = int(args[0])
    cmds = [a.split("=", 1) for a in args[1:]]
    times = {name: [] for name, _ in cmds}
    for r in range(rounds + 2):
        for name, cmd in cmds:
            if gap:
                time.sleep(gap)
            t0 = time.monotonic()
            subprocess.run(shlex.split(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if r >= 2:
                times[name].append((time.monotonic() - t0) * 1000)
    first = times[cmds[0][0]]
    base = statistics.median(first)
    for name, _ in cmds:
        m = statistics.median(times[name])
        # The median of each round's ratio too: a round's commands ran seconds apart, so a
        # drifting VM moves both sides of it.
        pairs = statistics.median(t / b for t, b in zip(times[name], first))
        print(f"{name:>12}: median {m:8.1f} ms  min {min(times[name]):8.1f}  {m / base:5.2f}x  (per round {pairs:5.2f}x)")


main()
