#!/usr/bin/env python3
"""ab_e2e.py - two builds on e2e_bench.py's syslog table, run alternately.

    t/bench/ab_e2e.py BEFORE_BUILD_DIR AFTER_BUILD_DIR [ROUNDS] [--lines N] [--dir DIR]

Generates e2e_bench.py's RFC 3164 lines once, then runs each build's `logferry --once`
under its t/bench/runstat, with no parsers and with e2e_bench.py's chain, alternating the
builds ROUNDS times (default 7), and prints a Markdown table of the medians. On a shared
host the chain's CPU time moves by a third between sessions; alternating keeps a load
that comes and goes from favouring one side (as ab_stage.py does for stage_bench), and
each build runs first in half of the rounds, since the first run of a pair was the slower
one, whichever build it was. --dir
puts the files (the input, about 500 MB of output per run) somewhere else than the
system's temporary directory: on tmpfs (/dev/shm), no disk writeback from one run lands
in the next."""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_bench  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("rounds", type=int, nargs="?", default=7)
    ap.add_argument("--lines", type=int, default=2000000)
    ap.add_argument("--dir", default=None, help="where the files go (default: $TMPDIR)")
    args = ap.parse_args()
    builds = {"before": os.path.abspath(args.before), "after": os.path.abspath(args.after)}
    root = tempfile.mkdtemp(prefix="lf-ab-e2e-", dir=args.dir)
    try:
        os.makedirs(os.path.join(root, "sys"))
        src = os.path.join(root, "sys", "syslog")
        e2e_bench.generate_syslog(src, args.lines)
        size = os.path.getsize(src)
        subprocess.run(["cat", src], stdout=subprocess.DEVNULL, check=True)
        runs = {}
        chains = (("plain", "", "no parsers"),
                  ("chain", e2e_bench.CHAIN, "syslog -> timestamp -> fields"))
        for r in range(args.rounds):
            for name, parsers, _label in chains:
                # ABBA: the run that comes first in a pair was the slower one whichever
                # build it was, so each build goes first in half of the rounds
                order = list(builds.items()) if r % 2 == 0 else list(builds.items())[::-1]
                for side, build in order:
                    cfg = e2e_bench.config_syslog(root, name, parsers)
                    shutil.rmtree(os.path.join(root, f"out-sys-{name}"), ignore_errors=True)
                    shutil.rmtree(os.path.join(root, "data"), ignore_errors=True)
                    e2e_bench.RUNSTAT = os.path.join(build, "t", "bench", "runstat")
                    runs.setdefault((name, side), []).append(e2e_bench.measure(
                        [os.path.join(build, "logferry"), "-c", cfg, "--once"],
                        stderr=subprocess.DEVNULL))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"syslog: {args.lines} RFC 3164 lines, {size / 1e6:.1f} MB, compression none, "
          f"medians of {args.rounds} rounds, the builds alternating")
    print()
    print("| chain | CPU s before | after | CPU s per GB before | after | wall s before | after |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    med = {}
    for name, _parsers, label in chains:
        cpu = {s: statistics.median(r[0] for r in runs[(name, s)]) for s in builds}
        wall = {s: statistics.median(r[1] for r in runs[(name, s)]) for s in builds}
        med[name] = cpu
        gb = size / 1e9
        print(f"| {label} | {cpu['before']:.3f} | {cpu['after']:.3f} | {cpu['before'] / gb:.2f} | "
              f"{cpu['after'] / gb:.2f} | {wall['before']:.3f} | {wall['after']:.3f} |")
    print()
    for side in builds:
        added = (med["chain"][side] - med["plain"][side]) * 1e9 / args.lines
        print(f"{side}: the chain adds {added:.0f} ns of CPU per line")


if __name__ == "__main__":
    main()
