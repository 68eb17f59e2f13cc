#!/usr/bin/env python3
"""End-to-end backfill benchmark: `logferry --once` over 2,000,000 generated ~100-byte log
lines into the file output, side by side with `cp` (and `zstd -1`) of the same file in the
same run. Prints a table of CPU seconds, wall seconds, MB/s, peak RSS and CPU relative to
cp, the median of --runs runs each, and checks that every line arrived intact.

A second table runs the same number of RFC 3164 syslog lines through no parsers and through
the chain syslog -> timestamp -> fields (compression none), in CPU seconds per GB, and
checks that every event carries the line's own time and program name.

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


def generate_syslog(path, lines):
    """RFC 3164 lines as rsyslog writes them, about 100 bytes each, all on 2026-11-30."""
    rng = random.Random(7)
    progs = [("sshd", "Accepted publickey for deploy from 198.51.100.%d port %d ssh2"),
             ("CRON", "(root) CMD (command -v debian-sa1 > /dev/null && debian-sa1 %d %d)"),
             ("systemd", "Started session-%d.scope - Session %d of User deploy."),
             ("kernel", "[%d.000000] e1000e: eno1 NIC Link is Up %d Mbps Full Duplex")]
    with open(path, "w") as f:
        buf = []
        for i in range(lines):
            prog, text = progs[i % 4]
            pid = "" if prog == "kernel" else f"[{1000 + i % 30000}]"
            t = i % 86400
            buf.append(f"Nov 30 {t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d} web-1 {prog}{pid}: "
                       + text % (rng.randrange(256), rng.randrange(65536)))
            if len(buf) == 100000:
                f.write("\n".join(buf) + "\n")
                buf = []
        if buf:
            f.write("\n".join(buf) + "\n")


CHAIN = """    parsers:
      - syslog: {format: rfc3164}
      - timestamp: {formats: [rfc3164], timezone: UTC, remove_field: true}
      - fields: {rename: {appname: process.name}, add: {env: bench}}
"""


def config_syslog(root, name, parsers):
    return write_config(root, f"syslog-{name}", f"{root}/sys/syslog", parsers,
                        f"{root}/out-sys-{name}", "none")


def check_syslog(root, name, lines, parsed):
    """Every line arrived; with the chain, each event has its own time (2026-11-30), its
    program as process.name and no error."""
    out = os.path.join(root, f"out-sys-{name}")
    n = 0
    ok = True
    for fn in sorted(os.listdir(out)):
        with open(os.path.join(out, fn), "rb") as f:
            for raw in f:
                n += 1
                if parsed:
                    ev = json.loads(raw)
                    ok &= (ev["@timestamp"].startswith("2026-11-30T") and "error" not in ev
                           and ev.get("process", {}).get("name") in ("sshd", "CRON", "systemd",
                                                                     "kernel"))
    return ok and n == lines, n


RUNSTAT = None


def measure(argv, **kw):
    """Runs argv under runstat; returns (cpu seconds, wall seconds, peak RSS in KiB)."""
    with tempfile.NamedTemporaryFile("r", prefix="lf-runstat-") as out:
        subprocess.run([RUNSTAT, out.name] + argv, check=True, **kw)
        cpu, wall, rss, status = out.read().split()[:4]
    if int(status) != 0:
        raise SystemExit(f"{argv[0]} exited {status}")
    return float(cpu), float(wall), int(rss)


def write_config(root, name, paths, parsers, out, compression):
    path = os.path.join(root, f"{name}.yml")
    with open(path, "w") as f:
        f.write(f"""data_dir: {root}/data
inputs:
  - id: bench
    paths: ["{paths}"]
{parsers}outputs:
  - name: out
    type: file
    path: {out}
    compression: {compression}
    rotate_bytes: 1GiB
""")
    return path


def config(root, compression):
    return write_config(root, f"bench-{compression}", f"{root}/input/*.log", "",
                        f"{root}/out-{compression}", compression)


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


def syslog_table(root, args):
    """The parsing chain against no parsers on the same syslog file; prints a table."""
    os.makedirs(os.path.join(root, "sys"))
    src = os.path.join(root, "sys", "syslog")
    generate_syslog(src, args.lines)
    size = os.path.getsize(src)
    subprocess.run(["cat", src], stdout=subprocess.DEVNULL, check=True)
    rows = []
    all_ok = True
    for name, parsers, label in (("plain", "", "no parsers"),
                                 ("chain", CHAIN, "syslog -> timestamp -> fields")):
        samples = []
        for _ in range(args.runs):
            shutil.rmtree(os.path.join(root, f"out-sys-{name}"), ignore_errors=True)
            shutil.rmtree(os.path.join(root, "data"), ignore_errors=True)
            samples.append(measure([args.logferry, "-c", config_syslog(root, name, parsers),
                                    "--once"], stderr=subprocess.DEVNULL))
        cpu, wall, rss = (statistics.median(s[i] for s in samples) for i in range(3))
        ok, n = check_syslog(root, name, args.lines, bool(parsers))
        all_ok &= ok
        rows.append((label, cpu, wall, rss, ok, n))
    print()
    print(f"syslog: {args.lines} RFC 3164 lines, {size / 1e6:.1f} MB, compression none, "
          f"median of {args.runs} runs")
    print()
    print("| chain | CPU s | CPU s per GB | wall s | MB/s | peak RSS MiB | ns/line | lines intact |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for label, cpu, wall, rss, ok, n in rows:
        print(f"| {label} | {cpu:.3f} | {cpu / (size / 1e9):.2f} | {wall:.3f} | "
              f"{size / 1e6 / wall:.0f} | {rss / 1024:.1f} | {cpu * 1e9 / args.lines:.0f} | "
              f"{'yes' if ok else 'NO'} ({n}) |")
    extra = (rows[1][1] - rows[0][1]) * 1e9 / args.lines
    print()
    print(f"the chain adds {extra:.0f} ns of CPU per line")
    return all_ok


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
        syslog_ok = syslog_table(root, args)
        zl = results["logferry, compression zstd"][1]
        zz = results["zstd -1"][1]
        print()
        print(f"logferry zstd throughput = {100 * zz / zl:.0f}% of zstd -1's (input MB/s)")
        if not all(v[0] for v in intact.values()) or not syslog_ok:
            print("ERROR: some lines were not delivered intact")
            return 1
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
