#!/usr/bin/env python3
"""What pod metadata from the API server costs per event, end to end: `logferry --once` over
container log files with the kubernetes section on and off, in the same run.

    t/bench/kube_bench.py [--lines N] [--pods N] [--rounds N] [--builddir BUILD]

Makes --pods (default 20) CRI log files under DIR/var/log/containers/ holding --lines
(default 1,000,000) lines in all (120 to 200 bytes of message each), and a stand-in API
server (t/integration/kube_apiserver.py) holding those pods as a Deployment's would be:
ten labels, two annotations kept by annotations.include, an owner, two containers, an IP.
Then --rounds times (default 5), in alternating order, each under t/bench/runstat:
  without metadata: `logferry --once`, container parser, file output (zstd), no kubernetes
      section: the events carry the names from the file name, as before;
  with metadata: the same with `kubernetes: {enabled: true, ...}` pointing at the server.
The table holds the medians of CPU seconds (user + system) and CPU ns per line, the
events' size (NDJSON bytes per event) and the CPU per KB of events, and the difference per
line: what the metadata adds (the lookup, a few ns: stage_bench's "container cri +
kubernetes metadata" row; and the encoding and compression of the longer events). Every run's output is checked: every line delivered, and with
metadata every event carries its pod's labels; the script exits 1 if not."""
import argparse
import glob
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import kube_apiserver as ka  # noqa: E402
import tlstest  # noqa: E402

CID = "4f2a9c0d1e8b7a6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c"
WORDS = ("request", "served", "GET", "/api/v1/items", "in", "ms", "user", "cache", "hit",
         "miss", "upstream", "status", "200", "bytes", "trace", "span", "session", "ok")


def pod_of(i):
    name = f"web-{i:02d}-7d4b9-x{i:04d}"
    labels = {"app": "web", "app.kubernetes.io/name": "web", "app.kubernetes.io/instance":
              f"web-{i:02d}", "app.kubernetes.io/version": "1.25.3",
              "app.kubernetes.io/component": "frontend", "app.kubernetes.io/part-of": "shop",
              "app.kubernetes.io/managed-by": "helm", "team": "payments", "tier": "web",
              "pod-template-hash": "7d4b9"}
    ann = {"prometheus.io/scrape": "true", "prometheus.io/port": "9113",
           "kubectl.kubernetes.io/restartedAt": "2026-12-01T10:00:00Z"}
    return ka.make_pod(name, "shop", labels=labels, annotations=ann,
                       owner=("ReplicaSet", f"web-{i:02d}-7d4b9"),
                       containers=(("app", "nginx:1.25.3"),
                                   ("exporter", "nginx/nginx-prometheus-exporter:1.1")))


def make_logs(root, pods, n_lines):
    rnd = random.Random(7)
    d = os.path.join(root, "var", "log", "containers")
    os.makedirs(d)
    files = [open(os.path.join(d, f"{p['metadata']['name']}_shop_app-{CID}.log"), "w")
             for p in pods]
    for i in range(n_lines):
        words = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(18, 30)))
        files[i % len(files)].write(
            f"2026-12-01T10:{i // 60000 % 60:02d}:{i // 1000 % 60:02d}.{i % 1000:03d}000000Z "
            f"stdout F {words} id={i}\n")
    for f in files:
        f.close()
    return d


def config(root, logs, api, pki_ca, token, with_meta):
    kube = ""
    if with_meta:
        kube = (f"kubernetes: {{enabled: true, api_server: \"{api.url()}\", token_file: "
                f"{token}, ca_file: {pki_ca}, node_name: n1, annotations: {{include: "
                f"[\"prometheus.io/*\"]}}}}\n")
    path = os.path.join(root, "with.yml" if with_meta else "without.yml")
    with open(path, "w") as f:
        f.write(f"data_dir: {root}/data\n{kube}"
                f"inputs:\n  - id: c\n    paths: [\"{logs}/*.log\"]\n"
                f"    parsers: [{{container: {{}}}}]\n"
                f"outputs:\n  - {{name: out, type: file, path: {root}/out, "
                f"compression: zstd}}\nmetrics: {{listen: \"\"}}\n")
    return path


def runstat(builddir, argv, err_path):
    with tempfile.NamedTemporaryFile("r", prefix="lf-runstat-") as st, \
            open(err_path, "wb") as err:
        subprocess.run([os.path.join(builddir, "t", "bench", "runstat"), st.name] + argv,
                       check=True, stdout=subprocess.DEVNULL, stderr=err)
        f = st.read().split()
    if int(f[3]) != 0:
        with open(err_path, "rb") as e:
            sys.exit(f"{' '.join(argv)} exited {f[3]}:\n{e.read()[-1500:].decode()}")
    return float(f[4]) + float(f[5])


def check_output(root, n_lines, with_meta):
    """Every line delivered; with metadata, every event with its pod's labels."""
    n = labelled = size = 0
    for path in sorted(glob.glob(os.path.join(root, "out", "*.zst"))):
        text = subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout
        size += len(text)
        for line in text.splitlines():
            e = json.loads(line)
            n += 1
            labelled += "labels" in e.get("kubernetes", {})
    want = n_lines if with_meta else 0
    if n != n_lines or labelled != want:
        sys.exit(f"kube_bench: {n} events of {n_lines}, {labelled} with labels (want {want})")
    return size / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=1000000)
    ap.add_argument("--pods", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--builddir", default=".")
    args = ap.parse_args()
    logferry = os.path.join(args.builddir, "logferry")
    root = tempfile.mkdtemp(prefix="lf-kube-bench-", dir="/dev/shm"
                            if os.path.isdir("/dev/shm") else None)
    api = None
    try:
        os.makedirs(os.path.join(root, "pki"))
        cert, ca = tlstest.make_pki(os.path.join(root, "pki"))
        token = os.path.join(root, "token")
        with open(token, "w") as f:
            f.write("bench-token\n")
        api = ka.ApiServer(cert, "bench-token")
        pods = [pod_of(i) for i in range(args.pods)]
        api.add_pods(pods)
        logs = make_logs(root, pods, args.lines)
        size = sum(os.path.getsize(p) for p in glob.glob(os.path.join(logs, "*.log")))
        cfgs = {False: config(root, logs, api, ca, token, False),
                True: config(root, logs, api, ca, token, True)}
        cpu = {False: [], True: []}
        ev_bytes = {}
        for r in range(args.rounds):
            for with_meta in ((False, True) if r % 2 == 0 else (True, False)):
                for d in ("data", "out"):
                    shutil.rmtree(os.path.join(root, d), ignore_errors=True)
                cpu[with_meta].append(runstat(args.builddir,
                                              [logferry, "-c", cfgs[with_meta], "--once"],
                                              os.path.join(root, "err")))
                ev_bytes[with_meta] = check_output(root, args.lines, with_meta)
        load = os.getloadavg()[0]
        print(f"# {os.cpu_count()} cores ({platform.processor() or platform.machine()}), "
              f"kernel {platform.release()}; load average {load:.2f}")
        print(f"# {args.lines} CRI lines ({size / 1e6:.0f} MB) in {args.pods} container files, "
              f"file output zstd; medians of {args.rounds} rounds in alternation")
        print("| run | CPU s | CPU ns/line | event bytes | CPU ns per KB of events |")
        print("|---|---:|---:|---:|---:|")
        med = {k: statistics.median(v) for k, v in cpu.items()}
        for k, name in ((False, "without metadata"), (True, "with pod metadata")):
            ns = med[k] / args.lines * 1e9
            print(f"| {name} | {med[k]:.2f} | {ns:.0f} | {ev_bytes[k]:.0f} | "
                  f"{ns / ev_bytes[k] * 1024:.0f} |")
        print(f"| difference | {med[True] - med[False]:+.2f} | "
              f"{(med[True] - med[False]) / args.lines * 1e9:+.0f} | "
              f"{ev_bytes[True] - ev_bytes[False]:+.0f} | |")
    finally:
        if api is not None:
            api.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
