#!/usr/bin/env python3
"""Spool append benchmark: the daemon reads a generated file (200 MB by default, the lines of
e2e_bench.py) into an http output whose collector is down, so every batch goes to the disk
spool and stays there; timed until the registry reaches the file's end (the spool has it all,
durably). The reference, in the same run: the same daemon with the spool off and a file
output (zstd, fdatasync by group commit) instead, timed the same way. Prints a table of the
medians of --runs runs: wall seconds, input MB/s, CPU seconds, spool MB written, spool MB/s,
fsyncs (group commits) and fsyncs per second.

    t/bench/spool_bench.py [--mb N] [--runs N] [--logferry PATH]
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_bench import generate  # noqa: E402


def config(root, spool):
    data = os.path.join(root, "data")
    shutil.rmtree(data, ignore_errors=True)
    shutil.rmtree(os.path.join(root, "out"), ignore_errors=True)
    if spool:
        output = """  - name: out
    type: http
    url: http://127.0.0.1:9/ingest
    compression: zstd
    backoff: {initial: 1s, max: 5s}"""
        queue = "queue: {spool: {enabled: true, max_bytes: 4GiB}}"
    else:
        output = f"""  - name: out
    type: file
    path: {root}/out
    compression: zstd"""
        queue = ""
    path = os.path.join(root, "bench.yml")
    with open(path, "w") as f:
        f.write(f"""data_dir: {data}
inputs:
  - id: bench
    paths: ["{root}/input/*.log"]
outputs:
{output}
{queue}
registry: {{flush_interval: 100ms}}
metrics: {{listen: "127.0.0.1:0"}}
""")
    return path


def registry_offset(root):
    try:
        with open(os.path.join(root, "data", "registry")) as f:
            lines = f.read().splitlines()[1:]
    except OSError:
        return 0
    offs = [int(l.split("\t")[5]) for l in lines if not l.startswith("end ") and
            len(l.split("\t")) >= 8]
    return max(offs) if offs else 0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def metrics(errpath):
    with open(errpath) as f:
        m = re.search(r"metrics on http://127\.0\.0\.1:(\d+)/metrics", f.read())
    with urllib.request.urlopen(f"http://127.0.0.1:{m.group(1)}/metrics", timeout=10) as r:
        text = r.read().decode()
    return {k: float(v) for k, v in re.findall(r"^(logferry_spool_\w+) (\S+)$", text, re.M)}


def run(logferry, root, spool, size):
    cfg = config(root, spool)
    errpath = os.path.join(root, "agent.stderr")
    with open(errpath, "w") as err:
        t0 = time.monotonic()
        proc = subprocess.Popen([logferry, "-c", cfg], stdout=err, stderr=err)
        while registry_offset(root) < size:
            if proc.poll() is not None:
                raise SystemExit(f"logferry exited {proc.returncode}; see {errpath}")
            time.sleep(0.02)
        wall = time.monotonic() - t0
        cpu = cpu_seconds(proc.pid)
        m = metrics(errpath)
        proc.terminate()
        proc.wait(timeout=60)
    return wall, cpu, m.get("logferry_spool_bytes", 0), m.get("logferry_spool_syncs_total", 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--logferry", default="./logferry")
    a = ap.parse_args()
    root = tempfile.mkdtemp(prefix="lf-spool-bench-")
    try:
        os.makedirs(os.path.join(root, "input"))
        log = os.path.join(root, "input", "a.log")
        generate(log, a.mb * 10000)  # 100-byte lines
        size = os.path.getsize(log)
        rows = {}
        for _ in range(a.runs):
            for name, spool in (("file output, no spool (reference)", False),
                                ("spool, output down", True)):
                rows.setdefault(name, []).append(run(a.logferry, root, spool, size))
        mb = size / 1e6
        print(f"input: {mb:.0f} MB, {a.runs} runs, medians")
        print(f"| {'case':34s} | wall s | input MB/s | CPU s | spool MB | spool MB/s | fsyncs "
              "| fsyncs/s |")
        print(f"|{'-' * 36}|--------|------------|-------|----------|------------|--------"
              "|----------|")
        for name, rs in rows.items():
            wall = statistics.median(r[0] for r in rs)
            cpu = statistics.median(r[1] for r in rs)
            sb = statistics.median(r[2] for r in rs) / 1e6
            syncs = statistics.median(r[3] for r in rs)
            spooled = name.startswith("spool")
            print(f"| {name:34s} | {wall:6.2f} | {mb / wall:10.0f} | {cpu:5.2f} | "
                  f"{sb if spooled else 0:8.1f} | {sb / wall if spooled else 0:10.1f} | "
                  f"{syncs if spooled else 0:6.0f} | {syncs / wall if spooled else 0:8.1f} |")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
