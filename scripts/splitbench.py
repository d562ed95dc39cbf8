#!/usr/bin/env python3
"""Where a sandboxed run's time goes: the command itself, or the sandbox's start and teardown
(issue 28). A and B run in turn (A B A B ...); both must run the command under the victim's
`time-child` (testdata/victim/victim.c), which prints the command's own wall and CPU time
(its children included) to stderr. Besides the whole process, each pair gives the command's
own figures, so that

    whole A - inside A   the sandbox's fixed cost (start, teardown), and
    inside A / inside B  what the command pays inside it (per call, per open, per exec).

    python3 scripts/splitbench.py -n 15 --warmup 2 \\
        --vs "./victim time-child cc -O0 -c -o module.o module.c" \\
        -- bin/sysprof enforce -p cc.yaml -- ./victim time-child cc -O0 -c -o module.o module.c

No shell (a pipe is written as sh -c '...'). Medians of each figure and of the per-pair ratios;
cpu is user + system. Quote the medians and say the load average: wall moves with other load,
cpu much less.
"""
import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import time

INSIDE = re.compile(rb"time-child: wall_us (\d+) cpu_us (\d+)")


def run(argv):
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = (time.monotonic() - t0) * 1000
    code = os.waitstatus_to_exitcode(status)
    m = INSIDE.search(err)
    if code != 0 or not m:
        sys.exit("splitbench: %s: exit %d, no time-child line: run the command under the "
                 "victim's time-child\n%s" % (shlex.join(argv), code, err[-800:].decode(errors="replace")))
    return {"wall": wall, "cpu": (ru.ru_utime + ru.ru_stime) * 1000,
            "in wall": int(m.group(1)) / 1000, "in cpu": int(m.group(2)) / 1000}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=10, help="counted pairs")
    ap.add_argument("--warmup", type=int, default=1, help="uncounted pairs first")
    ap.add_argument("--vs", required=True, help="command B (bare), one string split as a shell splits words")
    ap.add_argument("cmd", nargs=argparse.REMAINDER, help="-- command A (sandboxed) and its arguments")
    a = ap.parse_args()
    cmd_a = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd_a:
        ap.error("command A is missing (after --)")
    cmd_b = shlex.split(a.vs)
    pairs = []
    for i in range(a.warmup + a.n):
        ra, rb = run(cmd_a), run(cmd_b)
        if i >= a.warmup:
            pairs.append((ra, rb))
    med = statistics.median
    print("%-9s %9s %9s %9s   (medians of %d pairs, ms)" % ("", "A", "B", "A/B", len(pairs)))
    for k in ("wall", "cpu", "in wall", "in cpu"):
        print("%-9s %9.2f %9.2f %8.3fx" % (k, med(p[0][k] for p in pairs), med(p[1][k] for p in pairs),
                                           med(p[0][k] / p[1][k] for p in pairs)))
    # The sandbox's own share of A: what A's whole process took beyond the command inside it.
    for k in ("wall", "cpu"):
        print("%-9s %9.2f %9.2f   (A: whole - inside; B: whole - inside)" % (
            "fixed " + k, med(p[0][k] - p[0]["in " + k] for p in pairs),
            med(p[1][k] - p[1]["in " + k] for p in pairs)))
    print("inside A - inside B: wall %.2f ms, cpu %.2f ms (median of the pairs' differences)" % (
        med(p[0]["in wall"] - p[1]["in wall"] for p in pairs), med(p[0]["in cpu"] - p[1]["in cpu"] for p in pairs)))


if __name__ == "__main__":
    main()
