#!/usr/bin/env python3
"""End-to-end backfill benchmark: `logferry --once` over 2,000,000 generated ~100-byte log
lines into the file output, side by side with `cp` (and `zstd -1`) of the same file in the
same run. Prints a table of CPU seconds, wall seconds, MB/s, peak RSS and CPU relative to
cp, the median of --runs runs each, and checks that every line arrived intact.

    t/bench/e2e_bench.py [--lines N] [--runs N] [--logferry PATH]
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile


def generate(path, lines):
    rng = random.Random(42)
    levels = ["INFO", "WARN", "ERROR", "DEBUG"]
    words = "request served user id session cache miss hit upstream latency ms bytes ok".split()
    with open(path, "w") as f:
        buf = []
        for i in range(lines):
            msg = " ".join(rng.choice(words) for _ in range(8))
            line = f"2026-11-30T01:02:{i % 60:02d}.{i % 1000:03d}Z {levels[i % 4]:5s} [worker-{i % 16:02d}] {msg}"
            buf.append((line + " " + "x" * 99)[:99])
            if len(buf) == 100000:
                f.write("\n".join(buf) + "\n")
                buf = []
        if buf:
            f.write("\n".join(buf) + "\n")


RUNSTAT = None


def measure(argv, **kw):
    """Runs argv under runstat; returns (cpu seconds, wall seconds, peak RSS in KiB)."""
    with tempfile.NamedTemporaryFile("r", prefix="lf-runstat-") as out:
        subprocess.run([RUNSTAT, out.name] + argv, check=True, **kw)
        cpu, wall, rss, status = out.read().split()
    if int(status) != 0:
        raise SystemExit(f"{argv[0]} exited {status}")
    return float(cpu), float(wall), int(rss)


def config(root, compression):
    path = os.path.join(root, f"bench-{compression}.yml")
    with open(path, "w") as f:
        f.write(f"""data_dir: {root}/data
inputs:
  - id: bench
    paths: ["{root}/input/*.log"]
outputs:
  - name: out
    type: file
    path: {root}/out-{compression}
    compression: {compression}
    rotate_bytes: 1GiB
""")
    return path


def check_intact(root, compression, input_path):
    out = os.path.join(root, f"out-{compression}")
    files = sorted(os.path.join(out, f) for f in os.listdir(out))
    if compression == "zstd":
        data = subprocess.run(["zstd", "-dc"] + files, capture_output=True, check=True).stdout
    else:
        data = b"".join(open(f, "rb").read() for f in files)
    with open(input_path, "rb") as f:
        want = f.read().decode().split("\n")[:-1]
    got = [json.loads(l)["message"] for l in data.split(b"\n")[:-1]]
    return got == want, len(got), len(data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=2000000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--logferry", default=os.environ.get("LOGFERRY", "./logferry"))
    ap.add_argument("--runstat", default=None, help="default: t/bench/runstat beside --logferry")
    args = ap.parse_args()
    global RUNSTAT
    RUNSTAT = args.runstat or os.path.join(os.path.dirname(os.path.abspath(args.logferry)),
                                           "t", "bench", "runstat")

    root = tempfile.mkdtemp(prefix="lf-e2e-")
    try:
        os.makedirs(os.path.join(root, "input"))
        src = os.path.join(root, "input", "app.log")
        generate(src, args.lines)
        size = os.path.getsize(src)
        subprocess.run(["cat", src], stdout=subprocess.DEVNULL, check=True)  # warm the cache

        cases = [
            ("cp", lambda: ["cp", src, os.path.join(root, "copy.log")], None),
            ("logferry, compression none", lambda: [args.logferry, "-c", config(root, "none"), "--once"], "none"),
            ("zstd -1", lambda: ["zstd", "-1", "-q", "-f", src, "-o", os.path.join(root, "copy.zst")], None),
            ("logferry, compression zstd", lambda: [args.logferry, "-c", config(root, "zstd"), "--once"], "zstd"),
        ]
        results = {}
        intact = {}
        for name, argv, comp in cases:
            samples = []
            for _ in range(args.runs):
                if comp is not None:
                    # A fresh output and registry each time: a run must read everything.
                    shutil.rmtree(os.path.join(root, f"out-{comp}"), ignore_errors=True)
                    shutil.rmtree(os.path.join(root, "data"), ignore_errors=True)
                samples.append(measure(argv(), stderr=subprocess.DEVNULL))
            results[name] = tuple(statistics.median(s[i] for s in samples) for i in range(3))
            if comp is not None:
                intact[name] = check_intact(root, comp, src)

        print(f"input: {args.lines} lines, {size / 1e6:.1f} MB, median of {args.runs} runs, "
              f"{os.cpu_count()} cores")
        print()
        print("| run | CPU s | wall s | MB/s | peak RSS MiB | CPU / cp | lines intact |")
        print("|---|---:|---:|---:|---:|---:|---|")
        cp_cpu = results["cp"][0]
        for name, (cpu, wall, rss) in results.items():
            ok = intact.get(name)
            ok_s = "-" if ok is None else (f"yes ({ok[1]})" if ok[0] else f"NO ({ok[1]})")
            ratio = cpu / cp_cpu if cp_cpu > 0 else float("inf")
            print(f"| {name} | {cpu:.3f} | {wall:.3f} | {size / 1e6 / wall:.0f} | {rss / 1024:.1f} "
                  f"| {ratio:.1f}x | {ok_s} |")
        zl = results["logferry, compression zstd"][1]
        zz = results["zstd -1"][1]
        print()
        print(f"logferry zstd throughput = {100 * zz / zl:.0f}% of zstd -1's (input MB/s)")
        if not all(v[0] for v in intact.values()):
            print("ERROR: some lines were not delivered intact")
            return 1
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
