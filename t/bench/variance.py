#!/usr/bin/env python3
"""Why the same `--once` costs different CPU from run to run: runs logferry on the peer
harness's workload (a) (one file, 2,000,000 lines, NDJSON, compression none) N times in
each mode, the modes interleaved, and splits its CPU into user and system seconds.

    t/bench/variance.py [--runs N] [--modes fresh,kept,write,sync] [--builddir DIR]
                        [--logferry BINARY] [--lines N]

Modes, each describing what happens before a run:
  fresh  the previous run's output is deleted (as in e2e_bench.py): its pages were just
         freed, and this run's output reuses them
  kept   the previous outputs stay, as in a harness round: the page cache must grow by the
         run's output, into pages the kernel takes from its free pool
  write  a 1 GiB file is written (left dirty) and the previous output deleted
  sync   the same, then `sync` and 3 s of quiet (nothing dirty at the start)
Besides the CPU seconds (wait4 through t/bench/runstat), each run records from
/proc/vmstat how much the page cache grew (nr_file_pages), the dirty pages at its start
(nr_dirty) and any direct reclaim (pgscan_direct). docs/benchmarks.md, "Why CPU time
varies", has what it showed.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))
import peers  # noqa: E402  (the workload generator and config templates)


def vmstat():
    with open("/proc/vmstat") as f:
        return {k: int(v) for k, v in (line.split() for line in f)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--modes", default="fresh,kept,write,sync")
    ap.add_argument("--lines", type=int, default=2000000)
    ap.add_argument("--builddir", default=".", help="where logferry and t/bench/runstat are")
    ap.add_argument("--logferry", default=None, help="another binary (default BUILDDIR's)")
    args = ap.parse_args()
    build = os.path.abspath(args.builddir)
    logferry = os.path.abspath(args.logferry or os.path.join(build, "logferry"))
    runstat = os.path.join(build, "t/bench/runstat")
    modes = args.modes.split(",")
    root = tempfile.mkdtemp(prefix="lf-variance-")
    try:
        work = peers.Workload("a", root, 1, args.lines, 100)
        runs = {m: [] for m in modes}
        print(f"# {peers.machine()}; {args.runs} runs per mode, interleaved", flush=True)
        n = 0
        for _ in range(args.runs):
            for mode in modes:
                n += 1
                if mode != "kept":  # the outputs (and big file) of earlier runs go
                    for name in os.listdir(root):
                        if name.startswith("run-"):
                            shutil.rmtree(os.path.join(root, name))
                    if os.path.exists(os.path.join(root, "big")):
                        os.unlink(os.path.join(root, "big"))
                if mode in ("write", "sync"):
                    subprocess.run(["dd", "if=/dev/zero", f"of={root}/big", "bs=4M",
                                    "count=256", "status=none"], check=True)
                if mode == "sync":
                    os.sync()
                    time.sleep(3)
                work.warm()
                wd = os.path.join(root, f"run-{n}")
                os.makedirs(os.path.join(wd, "out"))
                conf = peers.render("logferry.yml", os.path.join(wd, "lf.yml"), WORK=wd,
                                    INPUT_DIR=work.dir, OUT_DIR=os.path.join(wd, "out"),
                                    FORMAT="json", COMPRESSION="none")
                v0 = vmstat()
                stat = os.path.join(wd, "runstat")
                subprocess.run([runstat, stat, logferry, "-c", conf, "--once"], check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                v1 = vmstat()
                cpu, wall, rss, status, user, sys_s = open(stat).read().split()
                if status != "0":
                    raise SystemExit(f"logferry exited {status}")
                runs[mode].append(dict(
                    user=float(user), sys=float(sys_s), cpu=float(cpu), wall=float(wall),
                    grew=(v1["nr_file_pages"] - v0["nr_file_pages"]) * 4 / 1024,
                    dirty=v0["nr_dirty"] * 4 / 1024,
                    direct=v1["pgscan_direct"] - v0["pgscan_direct"]))
        print(f"# load average at the end {os.getloadavg()[0]:.2f}\n")
        print("| before each run | user s | sys s | CPU s, min-max | wall s | page cache "
              "growth MiB | dirty at start MiB | direct reclaim pages |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for mode in modes:
            rs = runs[mode]

            def med(k):
                return statistics.median(r[k] for r in rs)
            print(f"| {mode} | {med('user'):.3f} | {med('sys'):.3f} | {med('cpu'):.3f}, "
                  f"{min(r['cpu'] for r in rs):.2f}-{max(r['cpu'] for r in rs):.2f} | "
                  f"{med('wall'):.3f} | {med('grew'):.0f} | {med('dirty'):.0f} | "
                  f"{max(r['direct'] for r in rs)} |")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
