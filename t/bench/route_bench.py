#!/usr/bin/env python3
"""route_bench.py - what routing by content costs a backfill (docs/benchmarks.md "Routing").

    t/bench/route_bench.py [--logferry BUILD/logferry] [--lines N] [--rounds R]

Writes an ndjson log of N lines (default 1,000,000; levels INFO 70%, DEBUG, WARN, ERROR 10%
each, a nested http.status), then runs `logferry --once` over it with three configs, in
turn, R times (default 5), and prints the medians of CPU (user, system) and wall seconds:
- none: `ndjson`, every event to one file output;
- same outputs: three routes (a two-term condition with `continue`, a one-term one, one
  without `when`) that all name that output: the conditions and the batches per set of
  routes, with the output's work unchanged;
- two outputs: errors (10% + 5xx) to a second file output as well, debug dropped.
The file outputs write uncompressed NDJSON, so the rows differ by what routing adds."""
import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import tempfile
import time

ROUTES = {
    "none": "",
    "same outputs": """    routes:
      - {name: errors, when: 'level == "ERROR" or http.status >= 500', outputs: [archive],
         continue: true}
      - {name: debug, when: 'level == "DEBUG"', outputs: [archive]}
      - {name: all, outputs: [archive]}
""",
    "two outputs": """    routes:
      - {name: errors, when: 'level == "ERROR" or http.status >= 500', outputs: [pager],
         continue: true}
      - {name: debug, when: 'level == "DEBUG"', outputs: []}
      - {name: all, outputs: [archive]}
""",
}


def write_log(path, n):
    rnd = random.Random(1)
    levels = ["INFO"] * 7 + ["DEBUG", "WARN", "ERROR"]
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"level": rnd.choice(levels),
                                "http": {"status": rnd.choice([200, 200, 200, 404, 503])},
                                "msg": f"request {i} done in {i % 997} ms path /api/v1/items"})
                    + "\n")


def config(root, name, log):
    tag = name.replace(" ", "-")
    text = f"""data_dir: {root}/data-{tag}
inputs:
  - id: app
    paths: [{log}]
    outputs: [archive]
    parsers:
      - ndjson: {{}}
{ROUTES[name]}outputs:
  - {{name: pager, type: file, path: {root}/out-{tag}/pager, compression: none}}
  - {{name: archive, type: file, path: {root}/out-{tag}/archive, compression: none}}
"""
    path = os.path.join(root, f"{tag}.yml")
    with open(path, "w") as f:
        f.write(text)
    return path, tag


def run(binary, root, conf, tag):
    for d in (f"data-{tag}", f"out-{tag}"):
        shutil.rmtree(os.path.join(root, d), ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    subprocess.run([binary, "-c", conf, "--once"], check=True, capture_output=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime, wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logferry", default="./logferry")
    ap.add_argument("--lines", type=int, default=1000000)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    root = tempfile.mkdtemp(prefix="route_bench.")
    try:
        log = os.path.join(root, "app.log")
        write_log(log, a.lines)
        confs = {name: config(root, name, log) for name in ROUTES}
        got = {name: [] for name in ROUTES}
        for _ in range(a.rounds):
            for name, (conf, tag) in confs.items():
                got[name].append(run(a.logferry, root, conf, tag))
        base = statistics.median(u + s for u, s, _ in got["none"])
        print(f"{a.lines:,} lines, {os.path.getsize(log) / 1e6:.0f} MB, medians of {a.rounds}; "
              f"load {os.getloadavg()[0]:.1f}")
        print("| routes | user s | system s | CPU s | CPU vs none | ns/event added | wall s |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, runs in got.items():
            u = statistics.median(r[0] for r in runs)
            s = statistics.median(r[1] for r in runs)
            cpu = statistics.median(r[0] + r[1] for r in runs)
            w = statistics.median(r[2] for r in runs)
            print(f"| {name} | {u:.2f} | {s:.2f} | {cpu:.2f} | {cpu / base:.2f}x | "
                  f"{(cpu - base) / a.lines * 1e9:.0f} | {w:.2f} |")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
