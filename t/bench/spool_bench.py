#!/usr/bin/env python3
"""Spool append benchmark: the daemon reads a generated file (200 MB by default, the lines of
e2e_bench.py) into an http output whose collector is down, so every batch goes to the disk
spool and stays there; timed until the registry reaches the file's end (the spool has it all,
durably). The reference, in the same run: the same daemon with the spool off and a file
output (zstd, fdatasync by group commit) instead, timed the same way. Prints a table of the
medians of --runs runs: wall seconds, input MB/s, CPU seconds, spool MB written, spool MB/s,
fsyncs (group commits) and fsyncs per second. A third row runs `--once` instead of the
daemon (which reads at full speed), timed until the spool stops growing; it has no metrics
endpoint, so no fsync count.

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
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import tailtest as tt  # noqa: E402


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
    """The registry's largest offset, its journal (registry.log) applied as the agent does."""
    off = tt.registry_offset(os.path.join(root, "data"))
    return off or 0


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


def spool_size(root):
    d = os.path.join(root, "data", "spool")
    try:
        return sum(os.path.getsize(os.path.join(d, n)) for n in os.listdir(d)
                   if n.endswith(".spool"))
    except OSError:
        return 0


def run_once(logferry, root):
    """--once with the spool and the output down: reads at full speed. Timed until the
    segment files stop growing (sampled every 10 ms, stable for 1.5 s), then stopped (it
    would wait out its retry budget)."""
    cfg = config(root, True)
    with open(os.path.join(root, "once.stderr"), "w") as err:
        t0 = time.monotonic()
        proc = subprocess.Popen([logferry, "-c", cfg, "--once"], stdout=err, stderr=err)
        last, last_t, cpu = -1, t0, 0.0
        while time.monotonic() - last_t < 1.5:
            size = spool_size(root)
            if size != last:
                last, last_t, cpu = size, time.monotonic(), cpu_seconds(proc.pid)
            time.sleep(0.01)
        proc.kill()
        proc.wait()
    return last_t - t0, cpu, last, None


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
            rows.setdefault("spool, output down, --once", []).append(run_once(a.logferry, root))
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
            spooled = name.startswith("spool")
            if rs[0][3] is None:  # no metrics endpoint with --once
                syncs = per_s = "-"
            else:
                n = statistics.median(r[3] for r in rs) if spooled else 0
                syncs, per_s = f"{n:.0f}", f"{n / wall:.1f}"
            print(f"| {name:34s} | {wall:6.2f} | {mb / wall:10.0f} | {cpu:5.2f} | "
                  f"{sb if spooled else 0:8.1f} | {sb / wall if spooled else 0:10.1f} | "
                  f"{syncs:>6s} | {per_s:>8s} |")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
