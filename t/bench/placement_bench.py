#!/usr/bin/env python3
"""Placement benchmark: what logferry's threads cost pinned to one CPU against spread over
every CPU, on workload (a) of the peer benchmark (1 file, 2,000,000 lines of ~100 bytes),
as a backfill (`--once`) and as a daemon, file output in text form.

    t/bench/placement_bench.py [--rounds N] [--lines N] [--builddir DIR] [--modes once,daemon]
                               [--format text|ndjson] [--compression none|zstd]

Each round runs every combination (once/daemon x pinned/spread) in an order that rotates
from round to round, so a change in the machine's load falls on all of them alike.
"pinned" is `taskset -c 0` (every thread on CPU 0); "spread" is no affinity (the scheduler
places the threads on every CPU). Before each run the previous output is deleted, `sync`
has written back what is dirty, and the input has been read again (as in peers.py, whose
workload generator and settling this uses).

CPU is user and system time apart: for `--once` from wait4's rusage, for the daemon from
/proc/PID/stat once its output holds every input byte (polled every 10 ms; its batches are
cut every 100 ms, as peers.py runs it). Context switches (voluntary + involuntary) are
rusage's for `--once` and the sum over /proc/PID/task/*/status for the daemon. The table shows medians, the
ratios spread/pinned and daemon/--once of CPU, and the load average at each run's start
(median). On a machine others load, --nice -20 (root) lets logferry's threads run side by
side when spread, as they would on a quiet one; the load average still shows the others. Every output is checked: same bytes as the input, in order (sha256).

This machine's VM exposes no hardware counters (perf stat shows cycles and instructions as
<not supported>), so these are CPU seconds; docs/benchmarks.md ("Two cores against one")
says how to get instruction counts with callgrind. Fluent Bit and the other peers are not
run here: peers.py compares them. Not part of make check.
"""
import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "peers"))
import peers  # noqa: E402  (the workload generator, settling and /proc readers)

CONF = """data_dir: {work}/data
metrics:
  listen: ""
inputs:
  - id: bench
    paths: ["{inp}/*.log"]
    start_at: beginning
outputs:
  - name: out
    type: file
    path: {work}/out
    format: {fmt}
    compression: {comp}
    rotate_bytes: 4GiB
"""


def ctxt(pid):
    """Context switches of every thread of pid."""
    n = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/status") as f:
            for line in f:
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    n += int(line.split()[1])
    return n


def out_sha(out_dir):
    h = hashlib.sha256()
    for name in sorted(os.listdir(out_dir)):
        with open(os.path.join(out_dir, name), "rb") as f:
            while True:
                block = f.read(1 << 22)
                if not block:
                    break
                h.update(block)
    return h.hexdigest()


def run_once(args, argv, work):
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, cwd=work, stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(work, "stderr.log"), "wb"))
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = status
    wall = time.monotonic() - t0
    if status != 0:
        raise RuntimeError(f"--once exited {status}; see {work}/stderr.log")
    return ru.ru_utime, ru.ru_stime, wall, ru.ru_nvcsw + ru.ru_nivcsw


def run_daemon(args, argv, work, want_bytes):
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, cwd=work, stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(work, "stderr.log"), "wb"))
    out = os.path.join(work, "out")
    try:
        while peers.out_size(out) < want_bytes:
            if proc.poll() is not None:
                raise RuntimeError(f"the daemon exited early; see {work}/stderr.log")
            if time.monotonic() - t0 > args.timeout:
                raise RuntimeError(f"the daemon did not finish in {args.timeout} s")
            time.sleep(0.01)
        wall = time.monotonic() - t0
        user, sys_s = peers.proc_times(proc.pid)
        cs = ctxt(proc.pid)
    finally:
        peers.stop(proc)
    return user, sys_s, wall, cs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--lines", type=int, default=2000000, help="lines of the one file")
    ap.add_argument("--builddir", default=".", help="where logferry is")
    ap.add_argument("--logferry", default=None)
    ap.add_argument("--modes", default="once,daemon")
    ap.add_argument("--format", default="text", choices=("text", "json"))
    ap.add_argument("--compression", default="none", choices=("none", "zstd"))
    ap.add_argument("--cpu", default="0", help="the CPU pinned runs use")
    ap.add_argument("--nice", type=int, default=None,
                    help="run logferry under nice -n N (N < 0 needs root): on a box loaded by "
                         "others, its threads then run side by side when spread")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--tmp", default=None, help="work directory (default: a new one)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    lf = os.path.abspath(args.logferry or os.path.join(args.builddir, "logferry"))
    root = args.tmp or tempfile.mkdtemp(prefix="lf-placement-")
    os.makedirs(root, exist_ok=True)
    modes = args.modes.split(",")
    check = args.format == "text" and args.compression == "none"
    try:
        print(f"# generating workload (a): 1 file x {args.lines:,} lines", file=sys.stderr)
        work = peers.Workload("a", root, 1, args.lines, peers.LINE_BYTES)
        want = hashlib.sha256(open(work.paths[0], "rb").read()).hexdigest() if check else None
        combos = [(m, pl) for m in modes for pl in ("pinned", "spread")]
        res = {c: [] for c in combos}
        for r in range(args.rounds):
            k = r % len(combos)
            for mode, place in combos[k:] + combos[:k]:
                wd = os.path.join(root, "work")
                shutil.rmtree(wd, ignore_errors=True)
                os.makedirs(wd)
                with open(os.path.join(wd, "logferry.yml"), "w") as f:
                    f.write(CONF.format(work=wd, inp=work.dir, fmt=args.format,
                                        comp=args.compression))
                    if mode == "daemon":
                        f.write("queue:\n  batch:\n    flush_interval: 100ms\n")
                work.settle(root)
                argv = [lf, "-c", os.path.join(wd, "logferry.yml")]
                if place == "pinned":
                    argv = ["taskset", "-c", args.cpu] + argv
                if args.nice is not None:
                    argv = ["nice", "-n", str(args.nice)] + argv
                load = os.getloadavg()[0]
                if mode == "once":
                    u, s, w, cs = run_once(args, argv + ["--once"], wd)
                else:
                    want_bytes = work.bytes if check else 1
                    u, s, w, cs = run_daemon(args, argv, wd, want_bytes)
                if check and out_sha(os.path.join(wd, "out")) != want:
                    raise RuntimeError(f"{mode} {place}: the output differs from the input")
                res[(mode, place)].append((u, s, w, cs, load))
                print(f"# round {r + 1} {mode:6} {place:6} user {u:.3f} sys {s:.3f} "
                      f"wall {w:.3f} cs {cs} load {load:.2f}", file=sys.stderr)
        med = {c: [statistics.median(x[i] for x in res[c]) for i in range(5)] for c in combos}
        print(f"\nWorkload (a): 1 file x {args.lines:,} lines ({work.bytes / 1e6:.0f} MB), "
              f"file output {args.format}, compression {args.compression}; "
              f"{args.rounds} rounds, medians; {os.cpu_count()} CPUs, pinned = taskset -c "
              f"{args.cpu}" + (f", nice {args.nice}" if args.nice is not None else "") + "\n")
        print("| mode | placement | user s | sys s | CPU s | wall s | ctx switches | load "
              "| spread/pinned | daemon/--once |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for mode, place in combos:
            u, s, w, cs, load = med[(mode, place)]
            pinned = sum(med[(mode, "pinned")][:2])
            once = ("once", place) in med and sum(med[("once", place)][:2])
            sp = f"{(u + s) / pinned:.2f}x" if place == "spread" and pinned else "-"
            do = f"{(u + s) / once:.2f}x" if mode == "daemon" and once else "-"
            name = "--once" if mode == "once" else "daemon"
            print(f"| {name} | {place} | {u:.3f} | {s:.3f} | {u + s:.3f} | {w:.3f} | "
                  f"{cs:.0f} | {load:.2f} | {sp} | {do} |")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
