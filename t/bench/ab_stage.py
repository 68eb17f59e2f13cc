#!/usr/bin/env python3
"""ab_stage.py - two builds of stage_bench side by side, for a before/after table.

    t/bench/ab_stage.py BEFORE/t/bench/stage_bench AFTER/t/bench/stage_bench [FILTER] [ROUNDS]

Runs the two binaries alternately ROUNDS times (default 5) in one session, each with the
case filter FILTER (a substring of the case names; default all), and prints a Markdown
table of the median ns/event per case and the allocations per event. Alternating keeps a
load that comes and goes from favouring one side."""
import re
import statistics
import subprocess
import sys

ROW = re.compile(r"\|\s*(.+?)\s*\|\s*(\d+)\s*\|\s*(\S+)\s*\|")


def run(binary, filt):
    out = subprocess.run([binary] + ([filt] if filt else []), check=True,
                         capture_output=True, text=True).stdout
    return [(m.group(1), int(m.group(2)), m.group(3))
            for m in map(ROW.match, out.splitlines()) if m]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    before, after = sys.argv[1], sys.argv[2]
    filt = sys.argv[3] if len(sys.argv) > 3 else ""
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    ns = {}
    allocs = {}
    names = []
    for _ in range(rounds):
        for side, binary in (("before", before), ("after", after)):
            for name, v, a in run(binary, filt):
                if name not in names:
                    names.append(name)
                ns.setdefault((name, side), []).append(v)
                allocs[(name, side)] = a
    print("| case | before ns | after ns | before allocs | after allocs |")
    print("|---|---:|---:|---:|---:|")
    for n in names:
        print("| %s | %.0f | %.0f | %s | %s |" % (
            n, statistics.median(ns.get((n, "before"), [0])),
            statistics.median(ns.get((n, "after"), [0])),
            allocs.get((n, "before"), "-"), allocs.get((n, "after"), "-")))


if __name__ == "__main__":
    main()
