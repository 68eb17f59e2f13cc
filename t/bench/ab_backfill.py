#!/usr/bin/env python3
"""ab_backfill.py - two builds on a backfill of several big files, run alternately.

    t/bench/ab_backfill.py BEFORE_BUILD_DIR AFTER_BUILD_DIR [ROUNDS] [--files N] [--mib M]
                           [--formats text,json] [--dir DIR]

Writes N files of M MiB of ~100-byte lines (peers.py's workload (b) by default: 8 x 100
MiB), reads them into the page cache, then runs each build's `logferry --once` on all of
them into the file output (compression none, in the given formats) under its
t/bench/runstat, alternating the builds ROUNDS times (default 7; each build first in half of
the rounds), and prints a Markdown table of the medians: CPU, user and system seconds,
wall seconds, peak RSS. It is the case where several reading threads share the cores, which
e2e_bench's single file does not exercise. --dir puts the files (input and one run's
output) elsewhere than the system's temporary directory: /dev/shm keeps the disk out."""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

LINE = "f%d %08d lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt\n"


def generate(root, files, mib):
    os.makedirs(os.path.join(root, "in"))
    for f in range(files):
        with open(os.path.join(root, "in", f"{f}.log"), "w") as out:
            size, i, chunk = 0, 0, []
            while size < mib << 20:
                line = LINE % (f, i)
                chunk.append(line)
                size += len(line)
                i += 1
                if len(chunk) == 10000:
                    out.write("".join(chunk))
                    chunk = []
            out.write("".join(chunk))


def config(root, fmt):
    path = os.path.join(root, f"{fmt}.yml")
    with open(path, "w") as f:
        f.write(f"""data_dir: {root}/data
metrics:
  listen: ""
inputs:
  - id: bench
    paths: ["{root}/in/*.log"]
    max_open_files: 1000
outputs:
  - name: out
    type: file
    path: {root}/out
    format: {fmt}
    compression: none
    rotate_bytes: 4GiB
""")
    return path


def run(build, cfg, root):
    """One backfill under runstat: (cpu, user, sys, wall, peak RSS KiB)."""
    for d in ("data", "out"):
        shutil.rmtree(os.path.join(root, d), ignore_errors=True)
    with tempfile.NamedTemporaryFile("r", prefix="lf-runstat-") as st:
        subprocess.run([os.path.join(build, "t", "bench", "runstat"), st.name,
                        os.path.join(build, "logferry"), "-c", cfg, "--once"],
                       check=True, stderr=subprocess.DEVNULL)
        f = st.read().split()
    if int(f[3]) != 0:
        sys.exit(f"{build}/logferry exited {f[3]}")
    return float(f[0]), float(f[4]), float(f[5]), float(f[1]), int(f[2])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("rounds", type=int, nargs="?", default=7)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--mib", type=int, default=100)
    ap.add_argument("--formats", default="text,json")
    ap.add_argument("--dir", default=None, help="where the files go (default: $TMPDIR)")
    args = ap.parse_args()
    builds = {"before": os.path.abspath(args.before), "after": os.path.abspath(args.after)}
    formats = args.formats.split(",")
    root = tempfile.mkdtemp(prefix="lf-ab-backfill-", dir=args.dir)
    runs = {}
    try:
        generate(root, args.files, args.mib)
        subprocess.run("cat " + os.path.join(root, "in", "*.log") + " > /dev/null", shell=True,
                       check=True)
        for r in range(args.rounds):
            for fmt in formats:
                cfg = config(root, fmt)
                order = list(builds.items()) if r % 2 == 0 else list(builds.items())[::-1]
                for side, build in order:
                    runs.setdefault((fmt, side), []).append(run(build, cfg, root))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{args.files} files x {args.mib} MiB, --once to the file output, compression none, "
          f"medians of {args.rounds} rounds, the builds alternating")
    print()
    print("| format | CPU s before | after | user s before | after | sys s before | after "
          "| wall s before | after | peak RSS KiB before | after |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for fmt in formats:
        cols = []
        for k in range(5):
            for side in builds:
                v = statistics.median(x[k] for x in runs[(fmt, side)])
                cols.append(f"{v:.3f}" if k < 4 else f"{v:.0f}")
        print(f"| {fmt} | " + " | ".join(cols) + " |")


if __name__ == "__main__":
    main()
