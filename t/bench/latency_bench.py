#!/usr/bin/env python3
"""Memory with every network library loaded, and append-to-acknowledged latency through the
http output. Not part of `make check`; prints tables (docs/benchmarks.md, "Memory with every
network library, and http latency").

    t/bench/latency_bench.py --builddir BUILD [rss] [latency] [--lines N] [--rate N]
                             [--seconds N] [--flush 1s,100ms] [--sink PATH]

rss: one generated file of --lines lines of 100 bytes (workload (a) of t/bench/peers: 2,000,000)
goes to six outputs at once, http, elasticsearch, loki, otlp and s3 into the C sink
(t/bench/sink: libcurl; s3 signs every request: libcrypto) and kafka into librdkafka's mock
cluster (t/integration/kafka_mock: librdkafka, libssl), every library the agent loads on
demand. `--once` runs under t/bench/runstat (peak RSS from wait4), then the daemon follows
the same file from its start until the registry holds its end: VmHWM, and /proc/PID/smaps
sampled every 100 ms; the sample with the most resident memory is split into the binary and
each shared library (file pages), the heap and malloc's arenas, thread stacks and other
anonymous mappings. The sink's and the cluster's counts must equal the lines written.

latency: the daemon follows a file that this script appends --rate lines a second to for
--seconds seconds (one write every millisecond, each line holding the CLOCK_REALTIME
nanoseconds of its write), with one http output (compression none) into a receiver in this
script that reads every request and answers 200; a line's latency is the time the receiver
has answered the request that held it, less the time the line was written. Each run prints
p50, p99 and max, how many offsets the registry held while the lines were written (read
every 100 ms: it moves as batches are acknowledged), and what it held before the agent
was stopped: its offset must be the file's size. Once per batch.flush_interval in --flush
(default 1 s, then 100 ms).

The receiver and the writer are Python on the same 2 cores as the agent: their own delay
is in the figures (the "writer lag" column: how late the latest write was on its
schedule; a loaded machine stalls them too).
"""
import argparse
import http.server
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

import local_receivers  # noqa: E402  (the bench config's text)


def generate(path, lines):
    """Workload (a) of t/bench/peers: lines of 99 bytes and a newline, starting with the
    file's id."""
    words = b"request served user id session cache miss hit upstream latency ms bytes ok".split()
    with open(path, "wb") as f:
        chunk = []
        for i in range(lines):
            msg = b" ".join(words[(i * 7 + k * 3) % len(words)] for k in range(8))
            line = (b"f0000 %09d " % i + msg + b" " + b"x" * 99)[:99] + b"\n"
            chunk.append(line)
            if len(chunk) == 10000:
                f.write(b"".join(chunk))
                chunk = []
        f.write(b"".join(chunk))


def start_sink(path):
    """The C sink, its stdin a pipe (closing it ends the sink); returns (proc, port)."""
    proc = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=sys.stderr)
    first = proc.stdout.readline().decode().split()
    if len(first) != 2 or first[0] != "http":
        proc.kill()
        raise SystemExit(f"{path}: unexpected first line {first!r}")
    return proc, int(first[1])


def sink_get(port, path):
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
        return r.read().decode()


def sink_stats(port):
    words = sink_get(port, "/__stats").split()
    return dict(zip(words[0::2], words[1::2]))


# ---- smaps ----

def smaps(pid):
    """[(name, rss_kib, size_kib)] of each mapping of pid."""
    out = []
    cur = None
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                first = line.split(None, 1)[0]
                if "-" in first and not first.endswith(":"):
                    lo, hi = (int(x, 16) for x in first.split("-"))
                    parts = line.split(None, 5)
                    name = parts[5].strip() if len(parts) > 5 else ""
                    cur = [name, 0, (hi - lo) >> 10, parts[1]]
                    out.append(cur)
                elif first == "Rss:" and cur is not None:
                    cur[1] = int(line.split()[1])
    except OSError:
        return []
    return out


def classify(maps, exe):
    """Resident KiB by kind: the binary, each library, heap, malloc arenas, thread stacks,
    other anonymous mappings (large allocations malloc maps on their own, libraries' own)."""
    kinds = {}

    def add(k, v):
        kinds[k] = kinds.get(k, 0) + v
    for i, (name, rss, size, perms) in enumerate(maps):
        prev = maps[i - 1] if i > 0 else None
        nxt = maps[i + 1] if i + 1 < len(maps) else None
        if name == exe or name.endswith("/logferry"):
            add("binary", rss)
        elif name.startswith("/"):
            add("lib " + os.path.basename(name).split(".so")[0], rss)
        elif name == "[heap]":
            add("heap (brk)", rss)
        elif name.startswith("[stack"):
            add("main stack", rss)
        elif name.startswith("["):
            add("other", rss)
        elif perms.startswith("---"):
            continue
        elif nxt is not None and nxt[0] == "" and nxt[3].startswith("---") \
                and (size + nxt[2]) % 65536 == 0:
            # a thread's malloc arena: 64 MiB reserved (HEAP_MAX_SIZE), the used part rw
            add("malloc arenas", rss)
        elif size == 65536 and perms.startswith("rw"):
            add("malloc arenas", rss)
        elif prev is not None and prev[0] == "" and prev[3].startswith("---") \
                and prev[2] <= 64:
            add("thread stacks", rss)  # after its guard page
        else:
            add("anon (mmap)", rss)
    return kinds


def libs_of(maps):
    return sorted({os.path.basename(n) for n, _r, _s, _p in maps if ".so" in n})


# ---- rss ----

OUTPUTS = ("http", "es", "loki", "otlp", "s3", "kafka")


def outputs_yaml(sink_port, brokers, only, in_flight=None):
    import s3test
    url = f"http://127.0.0.1:{sink_port}"
    blist = ", ".join(f"\"{b}\"" for b in brokers)
    lines = f"""  - {{name: http, type: http, url: "{url}/ingest"}}
  - {{name: es, type: elasticsearch, url: "{url}/"}}
  - {{name: loki, type: loki, url: "{url}"}}
  - {{name: otlp, type: otlp, url: "{url}/v1/logs"}}
  - {{name: s3, type: s3, bucket: bench, region: {s3test.REGION}, endpoint: "{url}",
      access_key_id: {s3test.AKID}, secret_access_key: "{s3test.SECRET}",
      object_interval: 1s}}
  - {{name: kafka, type: kafka, brokers: [{blist}], topic: bench}}
"""
    outs = lines.replace("\n      ", " ").splitlines(keepends=True)
    if in_flight is not None:
        outs = [o[:-2] + f", max_in_flight: {in_flight}}}\n" for o in outs]
    return "".join(o for o in outs if o.split(",")[0].split()[-1] in only)


def write_config(root, log, outputs, extra=""):
    # six outputs draining at the stop take longer than local_receivers' 30 s default
    return local_receivers.config_outputs(root, log, outputs, extra, shutdown_timeout="60s")


def rss_run(args, log, lines, mode, sink_port, mc):
    """One --once or daemon run into every output; returns (peak KiB, cpu s, breakdown,
    libs)."""
    import tailtest as tt
    root = tempfile.mkdtemp(prefix="lf-rss-", dir=args.tmp)
    try:
        sink_get(sink_port, "/__reset")
        mc_before = int(mc.cmd("count bench"))
        outs = outputs_yaml(sink_port, mc.brokers, args.outputs, args.in_flight)
        cfg = write_config(root, log, outs, f"queue: {{{args.queue}}}\n" if args.queue else "")
        size = os.path.getsize(log)
        if mode == "once":
            out = os.path.join(root, "runstat.out")
            err = open(os.path.join(root, "stderr"), "wb")
            subprocess.run([args.runstat, out, args.logferry, "-c", cfg, "--once"],
                           stderr=err, stdout=err, check=False)
            err.close()
            cpu, _wall, rss, status = open(out).read().split()[:4]
            if int(status) != 0:
                raise SystemExit("--once exited " + status + ":\n"
                                 + open(os.path.join(root, "stderr")).read()[-2000:])
            peak, best, libs = int(rss), {}, []
        else:
            wd = tt.Workdir("rss", base=root)
            agent = tt.Agent(cfg, wd)
            best_total, best, libs = -1, {}, []
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                maps = smaps(agent.pid)
                total = sum(m[1] for m in maps)
                if total > best_total:
                    best_total, best = total, classify(maps, args.logferry)
                    libs = libs_of(maps)
                if tt.registry_offset(os.path.join(root, "data")) == size:
                    break
                if not agent.alive():
                    raise SystemExit("the daemon ended:\n" + agent.stderr()[-2000:])
                time.sleep(0.1)
            peak = agent.rss_peak_kib()
            cpu = agent.cpu_ticks() / os.sysconf("SC_CLK_TCK")
            agent.stop()
        got = int(sink_stats(sink_port)["lines"])
        deadline = time.monotonic() + 30
        kgot = int(mc.cmd("count bench")) - mc_before
        while kgot < lines and time.monotonic() < deadline:
            time.sleep(0.2)
            kgot = int(mc.cmd("count bench")) - mc_before
        # http, elasticsearch, loki, otlp and s3 each deliver every line to the sink
        nsink = len([o for o in args.outputs if o != "kafka"])
        kwant = lines if "kafka" in args.outputs else 0
        if got != nsink * lines or kgot != kwant:
            raise SystemExit(f"{mode}: the sink got {got} lines of {nsink * lines}, "
                             f"kafka {kgot} of {kwant}")
        return peak, float(cpu), best, libs
    finally:
        subprocess.run(["rm", "-rf", root], check=False)


def bench_rss(args):
    import kafkatest as kt
    import tailtest as tt
    log = os.path.join(args.tmp, "a.log")
    generate(log, args.lines)
    sink, port = start_sink(args.sink)
    wd = tt.Workdir("rss-kafka", base=args.tmp)
    mc = kt.MockCluster(wd)
    mc.cmd("create bench 1")
    try:
        print(f"# rss: {args.lines:,} lines ({os.path.getsize(log) / 1e6:.0f} MB) to "
              f"{', '.join(args.outputs)} (kafka: the mock cluster; the others: the sink); "
              f"{args.runs} runs each, medians; load average {os.getloadavg()[0]:.2f}")
        if args.in_flight is not None or args.queue:
            print(f"# max_in_flight {args.in_flight or 'default'}; queue {{{args.queue}}}")
        for mode in ("once", "daemon"):
            res = [rss_run(args, log, args.lines, mode, port, mc) for _ in range(args.runs)]
            peaks = sorted(r[0] for r in res)
            med = statistics.median(peaks)
            cpu = statistics.median(r[1] for r in res)
            print(f"{mode:7s} peak RSS {med / 1024:6.1f} MiB (runs: "
                  f"{', '.join(f'{p / 1024:.1f}' for p in peaks)}), CPU {cpu:.2f} s")
            if mode == "daemon":
                r = max(res, key=lambda x: sum(x[2].values()))
                print(f"  largest smaps sample, {sum(r[2].values()) / 1024:.1f} MiB resident:")
                libsum = sum(v for k, v in r[2].items() if k.startswith("lib "))
                print(f"  {'shared libraries (file pages)':32s} {libsum / 1024:6.2f} MiB")
                for k, v in sorted(r[2].items(), key=lambda kv: -kv[1]):
                    if not k.startswith("lib ") or v >= 256:
                        print(f"    {k:30s} {v / 1024:6.2f} MiB")
                print(f"  {len(r[3])} shared objects mapped")
        print(f"# load average at the end {os.getloadavg()[0]:.2f}")
    finally:
        mc.close()
        sink.stdin.close()
        sink.wait(10)


# ---- latency ----

STAMP = re.compile(rb"T=(\d{19})")


class Rx:
    """The receiver: records, for each line, answer time less write time (ns)."""

    def __init__(self):
        self.lat = []
        self.requests = 0
        self.lock = threading.Lock()
        rx = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                stamps = [int(m) for m in STAMP.findall(body)]
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")
                self.wfile.flush()
                now = time.time_ns()
                with rx.lock:
                    rx.requests += 1
                    rx.lat.extend(now - s for s in stamps)

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def stop(self):
        self.srv.shutdown()


def write_load(path, rate, seconds):
    """Appends rate lines a second for seconds, one write a millisecond; returns (lines,
    the largest delay of a write behind its schedule in ms)."""
    pad = b"y" * 60
    written, late = 0, 0.0
    with open(path, "ab", buffering=0) as f:
        t0 = time.monotonic()
        while True:
            now = time.monotonic()
            el = now - t0
            if el >= seconds:
                break
            due = int(el * rate) - written
            if due > 0:
                late = max(late, (el - (written + 1) / rate) * 1e3)
                ts = time.time_ns()
                f.write(b"".join(b"seq=%09d T=%d %s\n" % (written + k, ts, pad)
                                 for k in range(due)))
                written += due
            time.sleep(0.001)
    return written, late


def pct(sorted_vals, p):
    return sorted_vals[min(len(sorted_vals) - 1, int(len(sorted_vals) * p / 100))]


def latency_run(args, flush):
    import tailtest as tt
    root = tempfile.mkdtemp(prefix="lf-lat-", dir=args.tmp)
    rx = Rx()
    try:
        log = os.path.join(root, "live.log")
        open(log, "wb").close()
        out = (f"  - {{name: http, type: http, url: \"http://127.0.0.1:{rx.port}/ingest\", "
               f"compression: none}}\n")
        extra = f"queue: {{batch: {{flush_interval: {flush}}}}}\n" if flush else ""
        cfg = write_config(root, log, out, extra)
        wd = tt.Workdir("lat", base=root)
        agent = tt.Agent(cfg, wd)
        time.sleep(1.5)  # the agent is following the file
        c0 = agent.cpu_ticks()
        seen, done = set(), threading.Event()

        def watch_registry():  # the offsets the registry holds while the lines come
            while not done.wait(0.1):
                seen.add(tt.registry_offset(os.path.join(root, "data")))
        watcher = threading.Thread(target=watch_registry, daemon=True)
        watcher.start()
        lines, late = write_load(log, args.rate, args.seconds)
        done.set()
        watcher.join()
        size = os.path.getsize(log)
        reg = tt.wait_registry_offset(os.path.join(root, "data"), None, size, timeout=30)
        cpu = (agent.cpu_ticks() - c0) / os.sysconf("SC_CLK_TCK")
        tt.wait_for(lambda: len(rx.lat) >= lines, 10)
        agent.stop()
        with rx.lock:
            lat = sorted(x / 1e6 for x in rx.lat)
            reqs = rx.requests
        if len(lat) != lines:
            raise SystemExit(f"flush {flush}: {len(lat)} lines answered of {lines}")
        return dict(lines=lines, reqs=reqs, p50=pct(lat, 50), p99=pct(lat, 99),
                    max=lat[-1], late=late, reg=reg, size=size, cpu=cpu,
                    moves=len(seen - {None, 0}))
    finally:
        rx.stop()
        subprocess.run(["rm", "-rf", root], check=False)


def bench_latency(args):
    print(f"# latency: {args.rate:,} lines/s for {args.seconds} s appended to one file, "
          f"http output (compression none) into a Python receiver; "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'flush_interval':>14s} {'lines':>8s} {'requests':>8s} {'p50 ms':>8s} "
          f"{'p99 ms':>8s} {'max ms':>8s} {'target':>8s} {'writer lag':>10s} "
          f"{'CPU s':>6s} {'registry':>9s} {'moves':>6s}")
    bad = False
    for flush in args.flush.split(","):
        r = latency_run(args, flush)
        ms = float(flush[:-2]) if flush.endswith("ms") else float(flush[:-1]) * 1000
        at_end = r["reg"] == r["size"]
        ok = at_end and r["moves"] > 0
        bad |= not ok
        print(f"{flush:>14s} {r['lines']:>8,d} {r['reqs']:>8,d} {r['p50']:>8.1f} "
              f"{r['p99']:>8.1f} {r['max']:>8.1f} {'met' if r['p99'] <= ms + 50 else 'MISSED':>8s} "
              f"{r['late']:>8.1f}ms {r['cpu']:>6.2f} {'at end' if at_end else 'BEHIND':>9s} "
              f"{r['moves']:>6d}", flush=True)
    print(f"# load average at the end {os.getloadavg()[0]:.2f}")
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("parts", nargs="*", default=["rss", "latency"])
    ap.add_argument("--builddir", required=True)
    ap.add_argument("--lines", type=int, default=2000000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rate", type=int, default=10000)
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--flush", default="1s,100ms")
    ap.add_argument("--sink", default=None)
    ap.add_argument("--outputs", default=",".join(OUTPUTS), help="rss: of " + ",".join(OUTPUTS))
    ap.add_argument("--in-flight", type=int, default=None, help="rss: max_in_flight")
    ap.add_argument("--queue", default="", help="rss: the queue section's keys, in YAML flow")
    ap.add_argument("--tmp", default=None, help="where files go (default: the system's)")
    args = ap.parse_args()
    b = os.path.abspath(args.builddir)
    args.logferry = os.path.join(b, "logferry")
    args.runstat = os.path.join(b, "t", "bench", "runstat")
    args.sink = args.sink or os.path.join(b, "t", "bench", "sink")
    os.environ["LOGFERRY"] = args.logferry
    os.environ["LF_BUILDDIR"] = b
    args.outputs = args.outputs.split(",")
    args.tmp = tempfile.mkdtemp(prefix="lf-latency-bench-", dir=args.tmp)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    bad = False
    try:
        if "rss" in args.parts:
            bench_rss(args)
        if "latency" in args.parts:
            bad = bench_latency(args)
    finally:
        subprocess.run(["rm", "-rf", args.tmp], check=False)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
