#!/usr/bin/env python3
"""Output benchmark: logferry's network outputs beside the peers' own outputs (rsyslog,
syslog-ng and, given FLUENT_BIT, Fluent Bit) on the same generated file in the same run,
each into the same receiver, one table per input size and thread placement.

    t/bench/output_bench.py --builddir BUILD [--sizes 2m,1g] [--rounds N] [--quick]
                            [--only logferry,rsyslog/kafka,...] [--placements free,pinned]

Inputs: (a) of the peer benchmark (t/bench/peers/peers.py's generator: 1 file of 2,000,000
lines of about 100 bytes, 203 MB) and a 1 GB file of the same lines (--sizes 2m,1g; the
default is both); --quick: 200,000 lines, one round. Each file is made once per run.

Receivers: t/bench/sink (HTTP NDJSON, Elasticsearch _bulk, Loki push, OTLP/HTTP, S3 and a
syslog TCP port; it decompresses, counts and checksums the messages it is sent) and, for
Kafka, librdkafka's mock cluster (t/integration/kafka_mock), whose messages are dumped and
checksummed the same way once the run is over. Every run gets a receiver of its own.
Every row's delivered messages are checked against the input: line count and the sink's
order-blind checksum (the wrapping sum of each message's 64-bit hash, `sink --hash INPUT`);
a difference is shown as lines lost (or "changed" when the count is right and the sum is
not).

Method, as peers.py's: each tool runs as a daemon started and stopped by PID on a fresh
work directory and reads the file from its beginning; a run ends when the receiver holds
every line (polled every 50 ms) or when it stopped growing for --stall seconds. CPU is
utime and stime of all the tool's threads from /proc/PID/stat at that moment, peak RSS
its VmHWM; the sink's CPU over the run is shown as a share of the tool's. logferry also
runs the http output with `--once` under t/bench/runstat (wait4), and the file output
(NDJSON, no compression) as a daemon: the yardstick of the targets. Before every run
dirty pages are written back (sync) and the input is read again, so it is in the page
cache. Every row runs as it falls and pinned to one CPU (`taskset -c 0` on the whole
tool; the receiver is not pinned), the two interleaved in each round; rounds rotate the
order and the tables show medians. A run during which other processes used more than
--noisy of a core is flagged. The references `zstd -1` and `gzip -1` compress the
input as logferry's NDJSON events (made once per size, untimed): the cost compression may
add to an output.

The peers run in the first --peer-rounds rounds only (default 1): at 3 to 20 MB/s they
take most of a run's time, and their CPU is several times logferry's, so their spread
moves no ratio much. The 1 GB size runs logferry's rows and the one peer row that cost
least CPU per GB on the 2,000,000-line size (every peer row when that size is not run),
--rounds-1g times (default 1): every peer through 1 GB takes longer than the run's budget.

Exit status: 1 if a logferry row lost or changed a line; a peer's failure is shown in its
row and in a PEER FAILED line at the end. Timings never fail.
"""
import argparse
import collections
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CONF = os.path.join(HERE, "outputs")
sys.path.insert(0, os.path.join(HERE, "peers"))
import peers  # noqa: E402  (the peer benchmark's generator and measuring helpers)

SIZES = {"2m": ("2,000,000 lines", 2000000, False), "1g": ("1 GB", 1 << 30, True),
         "quick": ("200,000 lines", 200000, False)}
S3_KEYS = ("AKIDBENCHOUTPUTS0000", "bench-secret-not-checked")

Result = collections.namedtuple("Result", "user sys wall rss_kib lost state sink_cpu others")


# ---- receivers ----

class Sink:
    """One t/bench/sink process: its ports, its figures (GET /__stats), its CPU."""

    def __init__(self, path, wd, syslog=False):
        self.errf = open(os.path.join(wd, "sink.stderr"), "wb")
        self.proc = subprocess.Popen([path] + (["--syslog"] if syslog else []),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.errf)
        kind, port = self.proc.stdout.readline().decode().split()
        if kind != "http":
            raise RuntimeError(f"sink: unexpected first line {kind} {port}")
        self.port = int(port)
        self.syslog_port = None
        if syslog:
            kind, port = self.proc.stdout.readline().decode().split()
            self.syslog_port = int(port)
        self.conn = None

    def stats(self):
        """{"lines": N, "sum": HEX16, "bytes": B, "requests": R, "errors": E}"""
        for attempt in (0, 1):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
                self.conn.request("GET", "/__stats")
                words = self.conn.getresponse().read().decode().split()
                break
            except (OSError, http.client.HTTPException):
                self.conn = None
                if attempt:
                    raise
        d = dict(zip(words[0::2], words[1::2]))
        return {k: (v if k == "sum" else int(v)) for k, v in d.items()}

    def progress(self):
        return self.stats()["lines"]

    def digest(self):
        s = self.stats()
        return s["lines"], s["sum"], s["errors"]

    def cpu(self):
        return sum(peers.proc_times(self.proc.pid))

    def close(self):
        if self.conn:
            self.conn.close()
        peers.stop(self.proc)
        self.errf.close()


def sink_hash(sink, path):
    """(lines, sum) of the file's lines, by `sink --hash`."""
    out = subprocess.run([sink, "--hash", path], check=True, capture_output=True).stdout.split()
    d = dict(zip(out[0::2], out[1::2]))
    return int(d[b"lines"]), d[b"sum"].decode()


def messages_to(path, lines):
    """Writes each message of lines (bytes: an event's JSON or bare text) to path, one a
    line: the event's first of message, log, msg, MESSAGE as the sink reads them."""
    with open(path, "wb") as f:
        for raw in lines:
            if raw.startswith(b"{"):
                ev = json.loads(raw)
                raw = next(ev[k] for k in ("message", "log", "msg", "MESSAGE")
                           if isinstance(ev.get(k), str)).encode()
            f.write(raw + b"\n")


class Kafka:
    """librdkafka's mock cluster (kafka_mock): 3 brokers in one process."""

    def __init__(self, path, wd):
        self.wd = wd
        self.errf = open(os.path.join(wd, "kafka_mock.stderr"), "wb")
        self.proc = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.errf, bufsize=0)
        self.out = self.proc.stdout
        self.brokers = self.out.readline().decode().strip()
        self.brokers_yaml = ", ".join(f'"{b}"' for b in self.brokers.split(","))
        self.cmd("create bench 1")

    def cmd(self, line):
        self.proc.stdin.write((line + "\n").encode())
        answer = self.out.readline().decode().strip()
        if not answer.startswith("ok"):
            raise RuntimeError(f"kafka_mock {line!r}: {answer}")
        return answer[3:]

    def progress(self):
        return int(self.cmd("count bench"))

    def digest(self, sink):
        """The count only: the mock cluster keeps about the last 5 MB of each partition
        (older segments are dropped), so a dump of a run's messages cannot be had."""
        return self.progress(), None, 0

    def cpu(self):
        return sum(peers.proc_times(self.proc.pid))

    def close(self):
        try:
            self.proc.stdin.write(b"quit\n")
        except OSError:
            pass
        peers.stop(self.proc)
        self.errf.close()


class FileOut:
    """logferry's file output: progress in bytes (against the NDJSON made once)."""

    def __init__(self, wd):
        self.dir = os.path.join(wd, "out")
        os.makedirs(self.dir)

    def progress(self):
        return peers.out_size(self.dir)

    def digest(self, sink):
        msgs = os.path.join(os.path.dirname(self.dir), "messages")

        def lines():
            for name in sorted(os.listdir(self.dir)):
                with open(os.path.join(self.dir, name), "rb") as f:
                    yield from (l for l in f.read().split(b"\n") if l)
        messages_to(msgs, lines())
        lines_, total = sink_hash(sink, msgs)
        os.unlink(msgs)
        return lines_, total, 0

    def cpu(self):
        return 0.0

    def close(self):
        pass


# ---- rows ----

def render(template, dest, **values):
    """peers.render() over a template of t/bench/outputs (an absolute path: os.path.join
    there keeps it)."""
    return peers.render(os.path.join(CONF, template), dest, **values)


class Row:
    """One tool through one output. receiver: sink, syslog (the sink with its syslog port),
    kafka or file."""
    peer = True
    once = False

    def __init__(self, tool, output, comp, receiver, setting):
        self.tool, self.output, self.comp = tool, output, comp
        self.receiver = receiver
        self.setting = setting  # what makes the row: a config file or an output mapping
        self.name = f"{tool} {output} {comp}"

    def env(self, args):
        return {}


class LogferryRow(Row):
    peer = False

    def __init__(self, output, comp, receiver, setting, once=False):
        super().__init__("logferry --once" if once else "logferry", output, comp, receiver,
                         setting)
        self.once = once

    def argv(self, args, wd, work, rx):
        out = self.setting.format(port=getattr(rx, "port", 0),
                                  syslog=getattr(rx, "syslog_port", 0),
                                  brokers=getattr(rx, "brokers_yaml", ""),
                                  out=os.path.join(wd, "out"),
                                  akid=S3_KEYS[0], secret=S3_KEYS[1])
        conf = render("logferry.yml", os.path.join(wd, "logferry.yml"), WORK=wd,
                      INPUT=work.paths[0], OUTPUT=out)
        return [args.logferry, "-c", conf] + (["--once"] if self.once else [])


class RsyslogRow(Row):
    def argv(self, args, wd, work, rx):
        conf = render(self.setting, os.path.join(wd, "rsyslog.conf"), WORK=wd,
                      INPUT=work.paths[0], PORT=getattr(rx, "port", 0),
                      SYSLOG_PORT=getattr(rx, "syslog_port", 0),
                      BROKERS=getattr(rx, "brokers", ""))
        return [args.rsyslogd, "-n", "-f", conf, "-i", os.path.join(wd, "pid")]


class SyslogNgRow(Row):
    def argv(self, args, wd, work, rx):
        root = args.syslog_ng_root
        conf = render(self.setting, os.path.join(wd, "syslog-ng.conf"), WORK=wd,
                      INPUT=work.paths[0], PORT=getattr(rx, "port", 0),
                      SYSLOG_PORT=getattr(rx, "syslog_port", 0),
                      BROKERS=getattr(rx, "brokers", ""),
                      SCL=os.path.join(root, "usr/share/syslog-ng/include/scl"))
        mods = sorted(os.path.join(root, "usr/lib/syslog-ng", d)
                      for d in os.listdir(os.path.join(root, "usr/lib/syslog-ng"))
                      if os.path.isdir(os.path.join(root, "usr/lib/syslog-ng", d)))
        return [os.path.join(root, "usr/sbin/syslog-ng"), "-F", "--no-caps", "-f", conf,
                f"--module-path={mods[0]}", f"--persist-file={wd}/persist",
                f"--pidfile={wd}/pid", f"--control={wd}/ctl"]

    def env(self, args):
        root = args.syslog_ng_root
        return {"LD_LIBRARY_PATH": f"{root}/usr/lib/x86_64-linux-gnu:{root}/usr/lib/syslog-ng"}


class FluentBitRow(Row):
    def argv(self, args, wd, work, rx):
        section = self.setting.format(port=getattr(rx, "port", 0),
                                      brokers=getattr(rx, "brokers", ""))
        conf = render("fluent-bit.conf", os.path.join(wd, "fluent-bit.conf"), WORK=wd,
                      INPUT=work.paths[0], OUTPUT_SECTION=section)
        return [args.fluent_bit, "-c", conf]


class Reference(Row):
    """`zstd -1` or `gzip -1` over the input as logferry's NDJSON events, under runstat."""
    peer = False

    def __init__(self, name, command):
        super().__init__(name, "reference", "-", None, command)
        self.name = name


LF_HTTP = "{{name: out, type: http, url: \"http://127.0.0.1:{port}/ingest\", compression: %s}}"
LOGFERRY = [
    LogferryRow("file", "none", "file",
                "{{name: out, type: file, path: \"{out}\", format: json, compression: none, "
                "rotate_bytes: 4GiB}}"),
    LogferryRow("http", "none", "sink", LF_HTTP % "none"),
    LogferryRow("http", "none", "sink", LF_HTTP % "none", once=True),
    LogferryRow("http", "zstd", "sink", LF_HTTP % "zstd"),
    LogferryRow("http", "gzip", "sink", LF_HTTP % "gzip"),
    LogferryRow("elasticsearch", "none", "sink",
                "{{name: out, type: elasticsearch, url: \"http://127.0.0.1:{port}\", "
                "index: bench, compression: none}}"),
    LogferryRow("loki", "none", "sink",
                "{{name: out, type: loki, url: \"http://127.0.0.1:{port}\", compression: none}}"),
    LogferryRow("kafka", "none", "kafka",
                "{{name: out, type: kafka, brokers: [{brokers}], topic: bench, "
                "compression: none}}"),
    LogferryRow("syslog", "none", "syslog",
                "{{name: out, type: syslog, address: \"127.0.0.1:{syslog}\", protocol: tcp}}"),
    LogferryRow("otlp", "none", "sink",
                "{{name: out, type: otlp, url: \"http://127.0.0.1:{port}/v1/logs\", "
                "encoding: protobuf, compression: none}}"),
    LogferryRow("s3", "zstd", "sink",
                "{{name: out, type: s3, bucket: bench, region: us-east-1, "
                "endpoint: \"http://127.0.0.1:{port}\", access_key_id: {akid}, "
                "secret_access_key: \"{secret}\", compression: zstd, object_interval: 1s}}"),
]
RSYSLOG = [
    RsyslogRow("rsyslog", "elasticsearch", "none", "sink", "rsyslog-elasticsearch.conf"),
    RsyslogRow("rsyslog", "kafka", "none", "kafka", "rsyslog-kafka.conf"),
    RsyslogRow("rsyslog", "syslog", "none", "syslog", "rsyslog-fwd.conf"),
]
SYSLOG_NG = [
    SyslogNgRow("syslog-ng", "http", "none", "sink", "syslog-ng-http.conf"),
    SyslogNgRow("syslog-ng", "elasticsearch", "none", "sink", "syslog-ng-elasticsearch.conf"),
    SyslogNgRow("syslog-ng", "kafka", "none", "kafka", "syslog-ng-kafka.conf"),
    SyslogNgRow("syslog-ng", "syslog", "none", "syslog", "syslog-ng-network.conf"),
]
FB_OUT = "[OUTPUT]\n    name {name}\n    match *\n    host 127.0.0.1\n    port {{port}}\n"
FLUENT_BIT = [
    FluentBitRow("fluent-bit", "http", "none", "sink",
                 FB_OUT.format(name="http") + "    uri /ingest\n    format json_lines\n"),
    FluentBitRow("fluent-bit", "elasticsearch", "none", "sink",
                 FB_OUT.format(name="es") + "    index bench\n    suppress_type_name on\n"),
    FluentBitRow("fluent-bit", "loki", "none", "sink",
                 FB_OUT.format(name="loki") + "    labels job=bench\n    line_format json\n"),
    FluentBitRow("fluent-bit", "kafka", "none", "kafka",
                 "[OUTPUT]\n    name kafka\n    match *\n    brokers {brokers}\n"
                 "    topics bench\n    format json\n"),
    FluentBitRow("fluent-bit", "otlp", "none", "sink",
                 FB_OUT.format(name="opentelemetry") + "    logs_uri /v1/logs\n"
                 "    logs_body_key log\n"),
]
REFERENCES = [Reference("zstd -1", "zstd -1 -q -c {ndjson} >/dev/null"),
              Reference("gzip -1", "gzip -1 -c {ndjson} >/dev/null")]


# ---- running ----

def receiver(args, row, wd):
    if row.receiver == "kafka":
        return Kafka(args.kafka_mock, wd)
    if row.receiver == "file":
        return FileOut(wd)
    return Sink(args.sink, wd, syslog=row.receiver == "syslog")


def watch(args, proc, rx, want, wd):
    """Waits until rx holds want (lines, or bytes for the file output) or stopped growing
    for --stall seconds: the daemon's (user, sys, wall, peak RSS KiB) at that moment; wall
    is NaN when it did not get there."""
    t0 = time.monotonic()
    last, last_change, done = -1, t0, False
    while proc.poll() is None:
        got = rx.progress()
        now = time.monotonic()
        if got >= want:
            done = True
            break
        if got != last:
            last, last_change = got, now
        elif now - last_change > args.stall:
            break
        time.sleep(0.05)
    wall = time.monotonic() - t0 if done else float("nan")
    if proc.poll() is not None:
        raise RuntimeError(f"exited early ({proc.returncode}); see {wd}/stderr.log")
    user, sys_s = peers.proc_times(proc.pid)
    return user, sys_s, wall, peers.proc_kib(proc.pid, "VmHWM")


def run(args, row, work, root, pinned):
    """One run of row over work: a Result."""
    wd = os.path.join(root, "work", row.name.replace(" ", "_") + ("-pinned" if pinned else ""))
    shutil.rmtree(wd, ignore_errors=True)
    os.makedirs(wd)
    pin = ["taskset", "-c", "0"] if pinned else []
    os.sync()
    work.warm()
    if isinstance(row, Reference):
        others = peers.Others()
        cpu, wall, rss, sys_s = peers.runstat(
            args, pin + ["sh", "-c", row.setting.format(ndjson=work.ndjson)], cwd=wd)
        shutil.rmtree(wd, ignore_errors=True)
        return Result(cpu - sys_s, sys_s, wall, rss, None, "intact", 0.0, others.cores())
    rx = receiver(args, row, wd)
    try:
        argv = pin + row.argv(args, wd, work, rx)
        want = work.ndjson_bytes if row.receiver == "file" else work.lines
        others = peers.Others()
        rx_cpu0 = rx.cpu()
        if row.once:
            cpu, wall, rss, sys_s = peers.runstat(args, argv, cwd=wd)
            user = cpu - sys_s
            deadline = time.monotonic() + args.stall
            while rx.progress() < want and time.monotonic() < deadline:
                time.sleep(0.05)
            rx_cpu = rx.cpu() - rx_cpu0
            oth = others.cores(rx_cpu)
        else:
            with open(os.path.join(wd, "stderr.log"), "wb") as log:
                proc = subprocess.Popen(argv, env=dict(os.environ, **row.env(args)),
                                        stdout=log, stderr=log, cwd=wd)
                try:
                    user, sys_s, wall, rss = watch(args, proc, rx, want, wd)
                    rx_cpu = rx.cpu() - rx_cpu0
                    oth = others.cores(user + sys_s + rx_cpu)
                finally:
                    peers.stop(proc)
            time.sleep(0.2)  # what was in flight at the stop
        lines, total, errors = rx.digest(args.sink) if row.receiver in ("kafka", "file") \
            else rx.digest()
        lost = work.lines - lines
        state = "intact" if lost == 0 and total in (work.sum, None) else (
            "changed" if lost == 0 else ("duplicated" if lost < 0 else "lost"))
        if errors:
            state += f", {errors} bodies refused"
    finally:
        rx.close()
    if state == "intact" and not args.keep:
        shutil.rmtree(wd, ignore_errors=True)
    elif state != "intact":
        keep = os.path.join(root, "failed", os.path.basename(wd))
        shutil.rmtree(keep, ignore_errors=True)
        shutil.move(wd, keep)
        state += f" (kept in {keep})"
    return Result(user, sys_s, wall, rss, lost, state, rx_cpu, oth)


def make_ndjson(args, work, root):
    """The input as logferry's NDJSON events (its file output, once), for the references
    and as the file output row's size to reach."""
    row = LOGFERRY[0]
    wd = os.path.join(root, "work", "ndjson")
    shutil.rmtree(wd, ignore_errors=True)
    os.makedirs(wd)
    out = FileOut(wd)
    argv = row.argv(args, wd, work, out) + ["--once"]
    subprocess.run(argv, cwd=wd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    work.ndjson = os.path.join(root, f"{work.key}.ndjson")
    with open(work.ndjson, "wb") as dst:
        for name in sorted(os.listdir(out.dir)):
            with open(os.path.join(out.dir, name), "rb") as src:
                shutil.copyfileobj(src, dst, 1 << 22)
    work.ndjson_bytes = os.path.getsize(work.ndjson)
    shutil.rmtree(wd, ignore_errors=True)


# ---- report ----

def summarize(runs):
    """Medians of a row's runs, and its worst loss."""
    ok = [r for r in runs if isinstance(r, Result)]
    if not ok:
        return None
    return {"user": peers.med(r.user for r in ok), "sys": peers.med(r.sys for r in ok),
            "cpu": peers.med(r.user + r.sys for r in ok), "wall": peers.med(r.wall for r in ok),
            "rss": peers.med(r.rss_kib for r in ok) / 1024,
            "sink": peers.med(r.sink_cpu for r in ok),
            "lost": None if ok[0].lost is None else max((r.lost for r in ok), key=abs),
            "bad": sorted({r.state for r in ok if r.state != "intact"}),
            "noisy": sum(r.others > ARGS.noisy for r in ok), "n": len(runs),
            "others": peers.med(r.others for r in ok),
            "errors": [r for r in runs if not isinstance(r, Result)]}


def best_peers(rows, sums):
    """output -> (CPU, row name) of the lossless peer row with least CPU."""
    best = {}
    for row in rows:
        s = sums.get(row.name)
        if not row.peer or not s or s["lost"] != 0 or s["bad"]:
            continue
        if row.output not in best or s["cpu"] < best[row.output][0]:
            best[row.output] = (s["cpu"], row.name)
    return best


def table(title, rows, sums, gb, mb):
    best = best_peers(rows, sums)
    print(f"\n{title}\n")
    print("| tool | output | compression | CPU s/GB user | CPU s/GB sys | MB/s | peak RSS MiB | "
          "lines lost | CPU / best peer | sink CPU / tool CPU | noisy runs (others, cores) |\n"
          "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        s = sums.get(row.name)
        if s is None:
            errs = "; ".join(sorted({str(e) for e in sums.get("!" + row.name, [])}))
            print(f"| {row.tool} | {row.output} | {row.comp} | - | - | - | - | "
                  f"failed: {errs or 'not run'} | - | - | - |")
            continue
        lost = "-" if s["lost"] is None else f"{s['lost']:,}" + "".join(
            f" **{b}**" for b in s["bad"])
        if row.receiver == "kafka":
            lost += " (count only)"
        b = best.get(row.output)
        share = "-" if row.receiver in (None, "file") or not s["cpu"] else \
            f"{100 * s['sink'] / s['cpu']:.0f}%"
        errs = f" ({len(s['errors'])} failed)" if s["errors"] else ""
        print(f"| {row.tool} | {row.output} | {row.comp} | {s['user'] / gb:.2f} | "
              f"{s['sys'] / gb:.2f} | {peers.fmt(mb / s['wall'], ',.0f')} | {s['rss']:.1f} | "
              f"{lost}{errs} | {peers.ratio(s['cpu'], b[0] if b else None, '.2f')} | {share} | "
              f"{s['noisy']}/{s['n']} ({s['others']:.2f}) |")
    return best


def targets(rows, sums, best):
    """Issue 26's targets this run can compute: (what, ratio, limit)."""
    def cpu(tool, output, comp):
        s = sums.get(f"{tool} {output} {comp}")
        return s["cpu"] if s and s["lost"] == 0 and not s["bad"] else None

    out = []
    for row in rows:
        if row.peer or isinstance(row, Reference) or row.once or row.output == "file":
            continue
        if row.comp != "none" or row.output not in best:
            continue
        c = cpu(row.tool, row.output, row.comp)
        out.append((f"{row.output}: logferry / best peer ({best[row.output][1]})",
                    c, best[row.output][0], 0.25))
    file_ = cpu("logferry", "file", "none")
    http = cpu("logferry", "http", "none")
    for o in ("http", "loki", "otlp"):
        out.append((f"{o} none / file output NDJSON none", cpu("logferry", o, "none"), file_, 1.5))
    out.append(("elasticsearch / http", cpu("logferry", "elasticsearch", "none"), http, 2.0))
    out.append(("kafka / http", cpu("logferry", "kafka", "none"), http, 1.5))
    for comp, ref in (("zstd", "zstd -1"), ("gzip", "gzip -1")):
        c = cpu("logferry", "http", comp)
        r = sums.get(ref)
        out.append((f"http {comp}: added CPU / `{ref}` on the same NDJSON",
                    None if c is None or http is None else c - http,
                    r["cpu"] if r else None, 1.0))
    out.append(("http none: daemon / `--once`", http, cpu("logferry --once", "http", "none"),
                1.1))
    rss = [(sums[r.name]["rss"], r.output) for r in rows if not r.peer
           and not isinstance(r, Reference) and r.output != "file" and sums.get(r.name)]
    if rss:
        out.append((f"peak RSS MiB of the largest network row ({max(rss)[1]}; one library "
                    "loaded) / 24", max(rss)[0], 24.0, 1.0))
    print("\n| target | ratio | limit | met |\n|---|---:|---:|---|")
    for what, x, of, limit in out:
        if x is None or not of:
            print(f"| {what} | - | {limit:g} | not measured |")
            continue
        r = x / of
        print(f"| {what} | {r:.2f} | {limit:g} | {'met' if r <= limit else 'MISSED'} |")


ARGS = None


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--builddir", default=".", help="where logferry, t/bench/sink are")
    ap.add_argument("--sizes", default="2m,1g", help="2m (workload (a)), 1g, or both")
    ap.add_argument("--quick", action="store_true", help="200,000 lines only, one round")
    ap.add_argument("--rounds", type=int, default=None, help="default 3 (1 with --quick)")
    ap.add_argument("--peer-rounds", type=int, default=1,
                    help="rounds the peers run in (the first ones); default 1")
    ap.add_argument("--rounds-1g", type=int, default=1)
    ap.add_argument("--placements", default="free,pinned")
    ap.add_argument("--only", default=None,
                    help="rows whose 'tool output compression' contains one of these, "
                         "comma-separated (e.g. logferry,rsyslog kafka)")
    peers.peer_options(ap)
    ap.add_argument("--keep", action="store_true", help="keep every run's work directory")
    args = ARGS = ap.parse_args()
    build = os.path.abspath(args.builddir)
    args.logferry = os.path.join(build, "logferry")
    args.runstat = os.path.join(build, "t/bench/runstat")
    args.sink = os.path.join(build, "t/bench/sink")
    args.kafka_mock = os.path.join(build, "t/integration/kafka_mock")
    rounds = args.rounds or (1 if args.quick else 3)
    sizes = ["quick"] if args.quick else args.sizes.split(",")
    placements = args.placements.split(",")
    for p in (args.logferry, args.runstat, args.sink, args.kafka_mock):
        if not os.access(p, os.X_OK):
            sys.exit(f"output_bench: {p} not built (make logferry t/bench/runstat t/bench/sink "
                     "t/integration/kafka_mock)")

    notes = []
    rows = list(LOGFERRY)
    if os.access(args.rsyslogd, os.X_OK):
        rows += RSYSLOG
        notes.append("rsyslog " + subprocess.run([args.rsyslogd, "-v"], capture_output=True,
                                                 text=True).stdout.split()[1]
                     + ": omelasticsearch, omkafka, omfwd; no omhttp (Debian 12 does not "
                     "build it), so no rsyslog http row")
    else:
        notes.append(f"rsyslog: {args.rsyslogd} not found (./bootstrap.sh deps --all)")
    sng_dir = os.path.join(build, "t/bench/peers/syslog-ng")
    args.syslog_ng_root = args.syslog_ng_root or os.path.join(sng_dir, "root")
    if subprocess.run([os.path.join(HERE, "peers", "fetch-syslog-ng.sh"), sng_dir]).returncode \
            == 0 or os.path.exists(os.path.join(args.syslog_ng_root, "usr/sbin/syslog-ng")):
        rows += SYSLOG_NG
        notes.append("syslog-ng 3.38 (Debian's, unpacked): flow control on, file source "
                     "log-iw-size(10000) log-fetch-limit(1000), destinations' log-fifo-size "
                     "default; http() and elasticsearch-http() batch-lines(1000) "
                     "batch-timeout(100) workers(4), http() batch-bytes(1 MiB)")
    else:
        notes.append("syslog-ng: could not be unpacked; left out")
    if args.fluent_bit:
        rows += FLUENT_BIT
        notes.append(f"fluent-bit {args.fluent_bit}: its defaults (refresh_interval 60, "
                     "flush 1)")
    else:
        notes.append("fluent-bit: left out (set FLUENT_BIT=/path/to/fluent-bit to include "
                     "it); best peer is rsyslog's or syslog-ng's row")
    notes.append("rsyslog: action queue linkedlist, size 5000, dequeuebatchsize 300, "
                 "resumeretrycount -1; omelasticsearch bulkmode on")
    notes.append("logferry: release build, flush_interval 100ms, other keys default "
                 "(max_in_flight 4)")
    rows += REFERENCES
    if args.only:
        keys = args.only.split(",")
        rows = [r for r in rows if isinstance(r, Reference) or any(k in r.name for k in keys)]

    root = os.path.abspath(args.tmp) if args.tmp else tempfile.mkdtemp(prefix="lf-obench-")
    os.makedirs(root, exist_ok=True)
    print(f"# outputs: {peers.machine()}; placements {', '.join(placements)}")
    for n in notes:
        print(f"# {n}")
    sys.stdout.flush()
    failures, peer_failures = [], []
    best_2m = {}
    try:
        for size in sizes:
            title, n, by_bytes = SIZES[size]
            t0 = time.monotonic()
            work = peers.Workload(size, root, 1, n, 100, by_bytes=by_bytes)
            work.lines, work.sum = sink_hash(args.sink, work.paths[0])
            make_ndjson(args, work, root)
            print(f"# {title}: {work.lines:,} lines, {work.bytes / 1e6:,.0f} MB, "
                  f"NDJSON {work.ndjson_bytes / 1e6:,.0f} MB; made in "
                  f"{time.monotonic() - t0:.0f} s", file=sys.stderr)
            size_rows = rows
            n_rounds = rounds
            if size == "1g":
                n_rounds = args.rounds_1g
                if best_2m:
                    keep = min(best_2m.values())[1]
                    size_rows = [r for r in rows if not r.peer or r.name == keep]
            runs = [(r, p == "pinned") for r in size_rows for p in placements]
            results = collections.defaultdict(list)
            for rnd in range(n_rounds):
                k = rnd % len(runs)
                for row, pinned in runs[k:] + runs[:k]:
                    if row.peer and rnd >= args.peer_rounds:
                        continue
                    key = (row.name, pinned)
                    try:
                        results[key].append(run(args, row, work, root, pinned))
                    except (RuntimeError, OSError, ValueError,
                            subprocess.CalledProcessError) as e:
                        results[key].append(e)
                        print(f"# {title}: {row.name}{' pinned' if pinned else ''}: {e}",
                              file=sys.stderr)
                print(f"# {title}: round {rnd + 1}/{n_rounds} done, load "
                      f"{os.getloadavg()[0]:.2f}, {time.monotonic() - t0:.0f} s",
                      file=sys.stderr)
            gb, mb = work.bytes / 1e9, work.bytes / 1e6
            for pinned in [p == "pinned" for p in placements]:
                sums = {}
                for row in size_rows:
                    s = summarize(results.get((row.name, pinned), []))
                    if s:
                        sums[row.name] = s
                    else:
                        sums["!" + row.name] = results.get((row.name, pinned), [])
                    for r in results.get((row.name, pinned), []):
                        bad = (r.state != "intact") if isinstance(r, Result) else True
                        if not bad:
                            continue
                        what = (f"{title}{', pinned' if pinned else ''}: {row.name}: "
                                + (f"{r.lost:,} lost, {r.state}" if isinstance(r, Result)
                                   else str(r)))
                        (peer_failures if row.peer else failures).append(what)
                place = "pinned to one CPU (taskset -c 0)" if pinned else "as it falls"
                best = table(f"{title} ({work.bytes / 1e6:,.0f} MB), {place}; medians of "
                             f"{n_rounds} round(s), the peers' of "
                             f"{min(n_rounds, args.peer_rounds)}; CPU s per GB of input",
                             size_rows, sums, gb, mb)
                if size != "1g" and not pinned:
                    best_2m = best
                targets(size_rows, sums, best)
                sys.stdout.flush()
            shutil.rmtree(work.dir, ignore_errors=True)
            os.unlink(work.ndjson)
        print(f"\n# load average at the end {os.getloadavg()[0]:.2f}")
    finally:
        if not args.keep:
            shutil.rmtree(os.path.join(root, "work"), ignore_errors=True)
            if not os.path.isdir(os.path.join(root, "failed")):
                shutil.rmtree(root, ignore_errors=True)
    for f in peer_failures:
        print(f"PEER FAILED: {f}")
    for f in failures:
        print(f"ERROR: logferry: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sys.exit(main())
