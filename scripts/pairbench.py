#!/usr/bin/env python3
"""Paired whole-process timings: A and B run in turn (A B A B ...), and each figure is printed as
min / median / max, with the A/B ratios taken pair by pair, so that a VM whose speed drifts
during the call still gives a meaningful ratio. Quote the medians.

    python3 scripts/pairbench.py -n 30 --warmup 3 --vs "bwrap --unshare-all --dev-bind / / true" \
        -- bin/sysprof enforce -p true.yaml -- true

Without --vs, A alone. No shell: a pipe or a redirection is written as sh -c '...'. Output of the
commands is discarded. cpu is user + system of the reaped process and the children it waited for
(wait4's rusage); peak is its largest resident set, never below this launcher's own floor.
"""
import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time


def run(argv):
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return wall * 1000, (ru.ru_utime + ru.ru_stime) * 1000, ru.ru_maxrss / 1024, p.returncode


def spread(xs, unit):
    return "%8.2f %8.2f %8.2f %s" % (min(xs), statistics.median(xs), max(xs), unit)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=5, help="counted runs of each command")
    ap.add_argument("--warmup", type=int, default=1, help="uncounted runs of each command first")
    ap.add_argument("--timeout", type=float, default=0, help="stop after this many seconds (0: none)")
    ap.add_argument("--vs", default="", help="command B, one string split as a shell splits words")
    ap.add_argument("cmd", nargs=argparse.REMAINDER, help="-- command A and its arguments")
    a = ap.parse_args()
    cmd_a = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd_a:
        ap.error("command A is missing (after --)")
    cmds = [cmd_a] + ([shlex.split(a.vs)] if a.vs else [])
    res = [[] for _ in cmds]
    start = time.monotonic()
    for i in range(a.warmup + a.n):
        if a.timeout and time.monotonic() - start > a.timeout:
            break
        for k, c in enumerate(cmds):
            r = run(c)
            if i >= a.warmup:
                res[k].append(r)
    print("%-4s %8s %8s %8s" % ("", "min", "median", "max"))
    for k, name in enumerate("AB"[:len(cmds)]):
        rows = res[k]
        if not rows:
            continue
        codes = sorted({r[3] for r in rows})
        print("%s: %s  (%d runs, exit %s)" % (name, " ".join(cmds[k]), len(rows), codes))
        print("  wall " + spread([r[0] for r in rows], "ms"))
        print("  cpu  " + spread([r[1] for r in rows], "ms"))
        print("  peak " + spread([r[2] for r in rows], "MiB"))
    if len(cmds) == 2 and res[1]:
        pairs = list(zip(res[0], res[1]))
        print("A/B per pair (%d pairs)" % len(pairs))
        print("  wall " + spread([x[0] / y[0] for x, y in pairs if y[0]], "x"))
        print("  cpu  " + spread([x[1] / y[1] for x, y in pairs if y[1]], "x"))


if __name__ == "__main__":
    sys.exit(main())
