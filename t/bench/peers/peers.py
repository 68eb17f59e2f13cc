#!/usr/bin/env python3
"""Peer benchmark: logferry beside rsyslog, syslog-ng and (given FLUENT_BIT) Fluent Bit, on
the same generated files in the same run, each tool writing every line to a local file.

    t/bench/peers/peers.py [--quick] [--rounds N] [--workloads abcdef] [--builddir DIR]

Workloads: (a) 1 file, 2,000,000 lines of ~100 bytes; (b) 8 files x 100 MiB read at once;
(c) 1,000 files x 2,000 lines; (d) 20,000 lines of 16 KiB; (e) live tail: 10,000 lines/s
appended for 60 s, latency from append to output; (f) 10,000 idle files, then one write
per second: CPU % and memory. --quick shrinks every workload and runs one round.

Method. Every run starts from the same page-cache and dirty-page state: the previous run's
output is gone (each output is deleted once it has been checked), `sync` has written back
what is dirty, a scratch file as large as the biggest output the workload can produce
(3x its input) has been written and deleted (so the pages the run's output takes were
just freed, whatever tool ran before: on this VM filling a page the kernel takes from its
free pool instead of one just freed costs up to ten times the system time; see
docs/benchmarks.md, "Why CPU time varies"), and the input has been read again. Each tool
starts on a fresh state and work directory of its own and reads every file from its
beginning. logferry runs with `--once` (its wall time is its whole life), and once more
as a daemon ("logferry daemon text"), timed as the peers are: they run as daemons started
and stopped by PID, and a run ends when their output holds every input byte (polled every
10 ms), or when it stops growing for --stall seconds. CPU is
utime+stime of all threads, and the table shows the system part on its own (wait4
through t/bench/runstat for programs that exit; /proc/PID/stat for daemons, read at
completion); peak RSS is ru_maxrss or VmHWM. Every output is checked against its input:
line count and the sha256 of each input file's lines in order (lines start with their
file's id); when that differs, an order-blind check (count and sum of the lines' sha256)
tells lines reordered from lines changed. Rounds interleave the tools, rotating their
order; the table shows medians. A run during which other processes used more than
--noisy of a core is flagged. The references (`cat`, `wc -l`, `cp`, `zstd -1`) run on
the same files in the same rounds; `zstd -1, NDJSON` compresses the workload as logferry's
NDJSON events (made once, untimed), the bytes logferry ndjson zstd compresses.

Placement (--placement, default both): workloads (a)-(d) run every tool, references
included, twice per round: as the scheduler places its threads, and pinned to one CPU with
`taskset -c 0` (rows named "(1 CPU)"; their ratios are to cp and peers pinned alike). A
program whose threads hand work to each other can cost very different CPU on one core and on
two.

Peers' settings: syslog-ng's log path has flags(flow-control) (the source waits for the
destination instead of dropping), with log-iw-size and log-fetch-limit at 3.38's defaults;
Fluent Bit runs with its defaults (refresh_interval 60 s: every file exists before it starts).

rsyslog runs with one main-queue worker: with its default of two, the second starts once
40,000 messages wait, and the two write batches of up to 1,024 lines out of order (every
line there, a different sha256).

Exit status: 1 if a logferry run lost, duplicated, changed or reordered a line (or, with
--strict, if a peer did); a peer's failure is shown in its row and in a PEER FAILED line
at the end. Timings never fail.
"""
import argparse
import collections
import copy
import hashlib
import json
import os
import random
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
HZ = os.sysconf("SC_CLK_TCK")
LINE_BYTES = 100

FULL = {"a": (1, 2000000, 100), "b": (8, 100 << 20, 100), "c": (1000, 2000, 100),
        "d": (1, 20000, 16384), "e": (10000, 60), "f": (10000, 60)}
QUICK = {"a": (1, 200000, 100), "b": (2, 10 << 20, 100), "c": (100, 2000, 100),
         "d": (1, 2000, 16384), "e": (10000, 10), "f": (1000, 10)}
TITLES = {"a": "1 file x {n:,} lines of ~{w} B", "b": "{f} files x {mib} MiB at once",
          "c": "{f:,} files x {n:,} lines", "d": "{n:,} lines of {kib} KiB"}


# ---- workloads ----

class Workload:
    """Generated input files whose lines start with 'fNNNN ', the file's id."""

    def __init__(self, key, root, files, lines_per_file, width, by_bytes=False):
        self.key = key
        self.dir = os.path.join(root, f"input-{key}")
        self.paths = []
        self.ndjson = None  # the workload as logferry's NDJSON, for "zstd -1, NDJSON"
        self.want = {}  # file id -> (lines, sha256 of its lines)
        self.lines = 0
        self.bytes = 0
        self.sums = None  # line_sum() of the input, made when an output needs it
        os.makedirs(self.dir, exist_ok=True)
        rng = random.Random(7)
        words = ("request served user id session cache miss hit upstream latency ms bytes ok "
                 "GET POST /api/v1/items status=200 status=503 retry timeout").split()
        bodies = []
        for _ in range(4096):
            body = " ".join(rng.choice(words) for _ in range(width // 6 + 2))
            bodies.append((body + " ") * (width // len(body) + 1))
        levels = ("INFO", "WARN", "ERROR", "DEBUG")
        for fi in range(files):
            path = os.path.join(self.dir, f"app-{fi:05d}.log")
            h = hashlib.sha256()
            n = 0
            size = 0
            with open(path, "wb") as f:
                chunk = []
                while (size < lines_per_file) if by_bytes else (n < lines_per_file):
                    line = (f"f{fi:04d} {n:09d} 2026-12-01T03:00:{n % 60:02d}.{n % 1000:03d}Z "
                            f"{levels[n % 4]} {bodies[(n * 7919 + fi) % 4096]}")
                    line = line[:width - 1 - (n % 7)].rstrip().encode() + b"\n"
                    chunk.append(line)
                    size += len(line)
                    n += 1
                    if len(chunk) == 10000:
                        data = b"".join(chunk)
                        f.write(data)
                        h.update(data)
                        chunk = []
                data = b"".join(chunk)
                f.write(data)
                h.update(data)
            self.paths.append(path)
            self.want[b"f%04d" % fi] = (n, h.hexdigest())
            self.lines += n
            self.bytes += size

    def warm(self):
        for p in self.paths + ([self.ndjson] if self.ndjson else []):
            with open(p, "rb") as f:
                while f.read(1 << 22):
                    pass

    def settle(self, root):
        """The same start for every run: dirty pages written back, 3x the input's bytes of
        page cache written and freed again, the input read again."""
        os.sync()
        scratch = os.path.join(root, "scratch")
        block = bytes(1 << 22)
        with open(scratch, "wb") as f:
            for _ in range(0, 3 * self.bytes, len(block)):
                f.write(block)
        os.unlink(scratch)
        self.warm()


def check(work, chunks):
    """Compares the output lines (an iterable of byte chunks, whole lines each) with the
    workload: returns (lines received, lines lost, intact), lines in order per file."""
    hashes = collections.defaultdict(hashlib.sha256)
    counts = collections.Counter()
    total = 0
    for chunk in chunks:
        if not chunk:
            continue
        lines = chunk.split(b"\n")
        if lines[-1] == b"":
            lines.pop()
        total += len(lines)
        if len(work.want) == 1:
            key = next(iter(work.want))
            hashes[key].update(chunk if chunk.endswith(b"\n") else chunk + b"\n")
            counts[key] += len(lines)
            continue
        groups = collections.defaultdict(list)
        for line in lines:
            groups[line[:5]].append(line)
        for key, ls in groups.items():
            hashes[key].update(b"\n".join(ls) + b"\n")
            counts[key] += len(ls)
    intact = set(counts) <= set(work.want) and all(
        counts.get(k, 0) == n and (n == 0 or hashes[k].hexdigest() == h)
        for k, (n, h) in work.want.items())
    return total, work.lines - total, intact


def line_sum(chunks):
    """Order-blind digest of the lines: file id -> (count, sum of their sha256 mod 2**256)."""
    sums = collections.defaultdict(lambda: [0, 0])
    for chunk in chunks:
        for line in chunk.split(b"\n"):
            if line:
                e = sums[line[:5]]
                e[0] += 1
                e[1] = (e[1] + int.from_bytes(hashlib.sha256(line).digest(), "big")) % (1 << 256)
    return {k: tuple(v) for k, v in sums.items()}


def verdict(work, out_dir, form):
    """(lines lost, state) of an output: state is "intact", "reordered" (every line, not in
    the input's order) or "changed"."""
    _, lost, intact = check(work, output_chunks(out_dir, form))
    if intact:
        return lost, "intact"
    if work.sums is None:
        work.sums = line_sum(open(p, "rb").read() for p in work.paths)
    same = line_sum(output_chunks(out_dir, form)) == work.sums
    return lost, "reordered" if same else "changed"


def output_chunks(out_dir, form):
    """The output's lines, in file-name order, as chunks of whole lines; form is text,
    ndjson or zstd (NDJSON in zstd frames)."""
    names = sorted(os.listdir(out_dir)) if os.path.isdir(out_dir) else []
    for name in names:
        path = os.path.join(out_dir, name)
        if form == "zstd":
            proc = subprocess.Popen(["zstd", "-dcq", path], stdout=subprocess.PIPE)
            stream = proc.stdout
        else:
            proc = None
            stream = open(path, "rb")
        rest = b""
        while True:
            block = stream.read(1 << 24)
            if not block:
                break
            block = rest + block
            cut = block.rfind(b"\n") + 1
            rest = block[cut:]
            yield decode(block[:cut], form)
        if rest:
            yield decode(rest + b"\n", form)
        stream.close()
        if proc:
            proc.wait()


def decode(block, form):
    if form == "text":
        return block
    msgs = [json.loads(l)["message"].encode() for l in block.split(b"\n") if l]
    return b"\n".join(msgs) + b"\n" if msgs else b""


# ---- measuring ----

def busy_jiffies():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[0] + v[1] + v[2] + v[5] + v[6] + v[7]  # user nice system irq softirq steal


def own_cpu():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def proc_times(pid):
    """(utime, stime) of all threads, seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) / HZ, int(fields[12]) / HZ


def proc_cpu(pid):
    return sum(proc_times(pid))


def proc_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


class Others:
    """CPU used by other processes while a run lasts, in cores."""

    def __init__(self):
        self.busy = busy_jiffies()
        self.own = own_cpu()
        self.t = time.monotonic()

    def cores(self, daemon_cpu=0.0):
        busy = (busy_jiffies() - self.busy) / HZ
        used = busy - (own_cpu() - self.own) - daemon_cpu
        return max(0.0, used / max(time.monotonic() - self.t, 1e-3))


Run = collections.namedtuple("Run", "wall cpu sys rss_kib lost state others")


def runstat(args, argv, cwd=None):
    """Runs argv to its end under runstat: (cpu, wall, maxrss KiB, system cpu)."""
    with tempfile.NamedTemporaryFile("r", prefix="lf-peers-") as out:
        subprocess.run([args.runstat, out.name] + argv, check=True, cwd=cwd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cpu, wall, rss, status, _user, sys_s = out.read().split()
    if int(status) != 0:
        raise RuntimeError(f"{argv[0]} exited {status}")
    return float(cpu), float(wall), int(rss), float(sys_s)


def out_size(out_dir):
    try:
        return sum(e.stat().st_size for e in os.scandir(out_dir))
    except FileNotFoundError:
        return 0


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---- tools ----

def render(template, dest, **values):
    with open(os.path.join(HERE, template)) as f:
        text = f.read()
    for k, v in values.items():
        text = text.replace(f"@{k}@", str(v))
    with open(dest, "w") as f:
        f.write(text)
    return dest


PIN = ["taskset", "-c", "0"]
PINNED = " (1 CPU)"  # the suffix of a pinned tool's name


class Tool:
    """One program under test. A peer is a daemon writing bare lines to OUT_DIR/out.txt.
    A pinned copy (pinned(), named with PINNED) runs the same under `taskset -c 0`."""
    peer = True
    form = "text"
    pin = False

    def pinned(self):
        twin = copy.copy(self)
        twin.pin = True
        twin.name = self.name + PINNED
        return twin

    def prefix(self):
        return PIN if self.pin else []

    def __init__(self, name, args):
        self.name = name
        self.args = args

    def fresh(self, root, tag):
        self.work = os.path.join(root, "work", re.sub(r"[^A-Za-z0-9.-]+", "_", self.name), tag)
        shutil.rmtree(self.work, ignore_errors=True)
        self.out = os.path.join(self.work, "out")
        os.makedirs(self.out)

    def start(self, input_dir):
        env = dict(os.environ, **self.env())
        log = open(os.path.join(self.work, "stderr.log"), "wb")
        return subprocess.Popen(self.prefix() + self.argv(input_dir), env=env, stdout=log, stderr=log,
                                cwd=self.work)

    def env(self):
        return {}

    def batch(self, work, root):
        """Runs the tool over work until its output holds every input byte."""
        self.fresh(root, work.key)
        others = Others()
        t0 = time.monotonic()
        proc = self.start(work.dir)
        last_size, last_change = -1, t0
        done = False
        while proc.poll() is None:
            size = out_size(self.out)
            now = time.monotonic()
            if size >= work.bytes:
                done = True
                break
            if size != last_size:
                last_size, last_change = size, now
            elif now - last_change > self.args.stall:
                break
            time.sleep(0.01)
        wall = time.monotonic() - t0
        if proc.poll() is not None:
            raise RuntimeError(f"{self.name} exited early; see {self.work}/stderr.log")
        user, sys_s = proc_times(proc.pid)
        cpu = user + sys_s
        rss = proc_kib(proc.pid, "VmHWM")
        oth = others.cores(cpu)
        stop(proc)
        if not done:
            wall = float("nan")
        lost, state = verdict(work, self.out, self.form)
        shutil.rmtree(self.work, ignore_errors=True)
        return Run(wall, cpu, sys_s, rss, lost, state, oth)


class Rsyslog(Tool):
    def argv(self, input_dir):
        conf = render("rsyslog.conf", os.path.join(self.work, "rsyslog.conf"), WORK=self.work,
                      INPUT_DIR=input_dir, OUT_DIR=self.out)
        return [self.args.rsyslogd, "-n", "-f", conf, "-i", os.path.join(self.work, "pid")]


class SyslogNg(Tool):
    def argv(self, input_dir):
        root = self.args.syslog_ng_root
        conf = render("syslog-ng.conf", os.path.join(self.work, "syslog-ng.conf"),
                      WORK=self.work, INPUT_DIR=input_dir, OUT_DIR=self.out)
        mods = [os.path.join(root, "usr/lib/syslog-ng", d)
                for d in os.listdir(os.path.join(root, "usr/lib/syslog-ng"))
                if os.path.isdir(os.path.join(root, "usr/lib/syslog-ng", d))]
        return [os.path.join(root, "usr/sbin/syslog-ng"), "-F", "--no-caps", "-f", conf,
                f"--module-path={mods[0]}", f"--persist-file={self.work}/persist",
                f"--pidfile={self.work}/pid", f"--control={self.work}/ctl"]

    def env(self):
        root = self.args.syslog_ng_root
        return {"LD_LIBRARY_PATH": f"{root}/usr/lib/x86_64-linux-gnu:{root}/usr/lib/syslog-ng"}


class FluentBit(Tool):
    def argv(self, input_dir):
        conf = render("fluent-bit.conf", os.path.join(self.work, "fluent-bit.conf"),
                      WORK=self.work, INPUT_DIR=input_dir, OUT_DIR=self.out)
        return [self.args.fluent_bit, "-c", conf]


class Logferry(Tool):
    """logferry as a backfill (`--once`), or with daemon set as a daemon, timed as the peers
    are (its output holds every byte); the daemon's batches are cut every 100 ms, so its
    last one does not wait the default second."""
    peer = False

    def __init__(self, name, args, form, compression, daemon=False):
        super().__init__(name, args)
        self.fmt = "text" if form == "text" else "json"
        self.form = form
        self.compression = compression
        self.daemon = daemon

    def argv(self, input_dir, once=False):
        conf = render("logferry.yml", os.path.join(self.work, "logferry.yml"), WORK=self.work,
                      INPUT_DIR=input_dir, OUT_DIR=self.out, FORMAT=self.fmt,
                      COMPRESSION=self.compression)
        if self.daemon:
            with open(conf, "a") as f:
                f.write("queue:\n  batch:\n    flush_interval: 100ms\n")
        return [self.args.logferry, "-c", conf] + (["--once"] if once else [])

    def batch(self, work, root):
        if self.daemon:
            return super().batch(work, root)
        self.fresh(root, work.key)
        others = Others()
        cpu, wall, rss, sys_s = runstat(self.args,
                                        self.prefix() + self.argv(work.dir, once=True),
                                        cwd=self.work)
        oth = others.cores()
        lost, state = verdict(work, self.out, self.form)
        shutil.rmtree(self.work, ignore_errors=True)
        return Run(wall, cpu, sys_s, rss, lost, state, oth)


class Reference(Tool):
    """A machine reference: a shell command over the workload's files."""
    peer = False

    def __init__(self, name, args, make):
        super().__init__(name, args)
        self.make = make

    def batch(self, work, root):
        self.fresh(root, work.key)
        others = Others()
        if self.make is None:  # the NDJSON reference, on a workload without it
            raise RuntimeError("no NDJSON form of the workload to compress")
        cmd = self.make(work, self.out)
        cpu, wall, rss, sys_s = runstat(self.args, self.prefix() + ["sh", "-c", cmd],
                                        cwd=self.work)
        oth = others.cores()
        shutil.rmtree(self.work, ignore_errors=True)
        return Run(wall, cpu, sys_s, rss, None, "intact", oth)


def files(work):
    return " ".join(work.paths)


# "zstd -1, NDJSON" compresses the bytes logferry ndjson zstd compresses: the workload as
# logferry's NDJSON events (made once per workload, not timed; 2.5 times the input's bytes
# on (a)). Its MB/s, like every row's, counts the workload's input bytes, so it is the
# same-bytes yardstick for logferry's zstd, which reads and encodes besides.
REFS = [
    ("cat", lambda work, out: f"cat {files(work)} >/dev/null"),
    ("wc -l", lambda work, out: f"wc -l {files(work)} >/dev/null"),
    ("cp", lambda work, out: f"cp {files(work)} {out}/"),
    ("zstd -1", lambda work, out: f"zstd -1 -q -c {files(work)} >{out}/all.zst"),
    ("zstd -1, NDJSON", lambda work, out: f"zstd -1 -q -c {work.ndjson} >{out}/all.zst"),
]


def make_ndjson(work, root, tool):
    """Runs tool (logferry ndjson, no compression) once and keeps its output, concatenated,
    as work.ndjson beside the workload's files."""
    tool.fresh(root, work.key + "-ndjson")
    subprocess.run(tool.argv(work.dir, once=True), cwd=tool.work, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    work.ndjson = os.path.join(root, f"{work.key}.ndjson")
    with open(work.ndjson, "wb") as dst:
        for name in sorted(os.listdir(tool.out)):
            with open(os.path.join(tool.out, name), "rb") as src:
                shutil.copyfileobj(src, dst, 1 << 22)
    shutil.rmtree(tool.work, ignore_errors=True)


# ---- live tail (e) and idle files (f) ----

class Follower:
    """Reads a tool's text output as it grows; records each line's latency."""

    def __init__(self, out_dir):
        self.out = out_dir
        self.files = {}
        self.rest = b""
        self.lat_ms = []

    def poll(self, now_ns):
        if not os.path.isdir(self.out):
            return
        for name in sorted(os.listdir(self.out)):
            path = os.path.join(self.out, name)
            off = self.files.get(name, 0)
            with open(path, "rb") as f:
                f.seek(off)
                data = f.read()
            if not data:
                continue
            self.files[name] = off + len(data)
            data = self.rest + data
            cut = data.rfind(b"\n") + 1
            self.rest = data[cut:]
            for line in data[:cut].split(b"\n")[:-1]:
                self.lat_ms.append((now_ns - int(line[16:35])) / 1e6)


def live_tail(tools, root, rate, seconds, args):
    """(e): every tool follows one file that a writer appends to at rate lines/s."""
    input_dir = os.path.join(root, "input-e")
    shutil.rmtree(input_dir, ignore_errors=True)
    os.makedirs(input_dir)
    path = os.path.join(input_dir, "app-00000.log")
    open(path, "wb").close()
    procs = []
    for t in tools:
        t.fresh(root, "e")
        procs.append(t.start(input_dir))
    followers = [Follower(t.out) for t in tools]
    time.sleep(3)  # every tool has found the file
    cpu0 = [proc_cpu(p.pid) for p in procs]
    others = Others()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    pad = b"x" * (LINE_BYTES - 36)
    t0 = time.monotonic()
    written = 0
    while True:
        now = time.monotonic()
        if now - t0 >= seconds:
            break
        due = min(int((now - t0) * rate), rate * seconds) - written
        if due > 0:
            ts = time.monotonic_ns()
            os.write(fd, b"".join(b"f0000 %09d %019d %s\n" % (written + i, ts, pad)
                                  for i in range(due)))
            written += due
        ns = time.monotonic_ns()
        for fo in followers:
            fo.poll(ns)
        time.sleep(0.005)
    if written < rate * seconds:
        ts = time.monotonic_ns()
        os.write(fd, b"".join(b"f0000 %09d %019d %s\n" % (written + i, ts, pad)
                              for i in range(rate * seconds - written)))
        written = rate * seconds
    os.close(fd)
    wrote_until = time.monotonic()
    while time.monotonic() - wrote_until < args.stall:
        ns = time.monotonic_ns()
        for fo in followers:
            fo.poll(ns)
        if all(len(fo.lat_ms) >= written for fo in followers):
            break
        time.sleep(0.005)
    span = time.monotonic() - t0
    cpus = [proc_cpu(p.pid) - c for p, c in zip(procs, cpu0)]
    oth = others.cores(sum(cpus))
    rows = []
    for t, p, fo, cpu in zip(tools, procs, followers, cpus):
        rss = proc_kib(p.pid, "VmHWM")
        stop(p)
        lat = sorted(fo.lat_ms)
        q = (lambda x: lat[min(len(lat) - 1, int(x * len(lat)))]) if lat else (lambda x: float("nan"))
        rows.append((t.name, q(0.5), q(0.99), lat[-1] if lat else float("nan"),
                     100 * cpu / span, rss, written - len(lat)))
    return rows, written, oth


def idle_files(tool, root, nfiles, seconds, args):
    """(f): tool follows nfiles files of one line each; then one line a second is appended
    to one of them. Returns (CPU % during the writes, VmRSS KiB, VmHWM KiB, lines lost)."""
    input_dir = os.path.join(root, "input-f")
    if not os.path.isdir(input_dir) or len(os.listdir(input_dir)) != nfiles:
        shutil.rmtree(input_dir, ignore_errors=True)
        os.makedirs(input_dir)
        for i in range(nfiles):
            with open(os.path.join(input_dir, f"app-{i:05d}.log"), "wb") as f:
                f.write(b"f%04d %09d idle file, first line\n" % (i % 10000, 0))
    else:  # back to one line each
        for i in range(nfiles):
            p = os.path.join(input_dir, f"app-{i:05d}.log")
            with open(p, "r+b") as f:
                f.truncate(len(f.readline()))
    first = os.path.getsize(os.path.join(input_dir, "app-00000.log"))
    tool.fresh(root, "f")
    proc = tool.start(input_dir)
    t0 = time.monotonic()
    while out_size(tool.out) < first * nfiles and time.monotonic() - t0 < 120:
        time.sleep(0.1)
    time.sleep(2)
    cpu0 = proc_cpu(proc.pid)
    others = Others()
    rng = random.Random(3)
    start = time.monotonic()
    for s in range(seconds):
        i = rng.randrange(nfiles)
        with open(os.path.join(input_dir, f"app-{i:05d}.log"), "ab") as f:
            f.write(b"f%04d %09d one write a second\n" % (i % 10000, s + 1))
        time.sleep(max(0.0, start + s + 1 - time.monotonic()))
    cpu = proc_cpu(proc.pid) - cpu0
    oth = others.cores(cpu)
    rss, hwm = proc_kib(proc.pid, "VmRSS"), proc_kib(proc.pid, "VmHWM")
    deadline = time.monotonic() + args.stall
    lines = 0
    while time.monotonic() < deadline:
        lines = sum(c.count(b"\n") for c in output_chunks(tool.out, "text"))
        if lines >= nfiles + seconds:
            break
        time.sleep(0.5)
    stop(proc)
    return 100 * cpu / seconds, rss, hwm, nfiles + seconds - lines, oth


# ---- report ----

def med(xs):
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else float("nan")


def fmt(x, spec):
    return "-" if x is None or x != x else format(x, spec)


def ratio(x, of, spec):
    """x / of as "1.2x", or "-" when there is nothing to compare with."""
    return "-" if not of or of != of else format(x / of, spec) + "x"


def machine():
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return (f"{os.cpu_count()} cores ({model}), kernel {os.uname().release}, "
            f"load average at start {os.getloadavg()[0]:.2f}")


def table(work, results, tools):
    """Rows of tools, all placed alike: their ratios are to cp and peers placed the same."""
    mb = work.bytes / 1e6
    cp = med(r.cpu for r in results.get("cp" + (PINNED if tools and tools[0].pin else ""), []))
    peers = [med(r.cpu for r in results[t.name]) for t in tools
             if t.peer and t.name in results
             and all(r.lost == 0 and r.state != "changed" for r in results[t.name])]
    best = min(peers) if peers else float("nan")
    rows = []
    for t in tools:
        runs = results.get(t.name)
        if not runs:
            continue
        wall = med(r.wall for r in runs)
        cpu = med(r.cpu for r in runs)
        sys_s = med(r.sys for r in runs)
        rss = med(r.rss_kib for r in runs) / 1024
        lost = None if runs[0].lost is None else max(r.lost for r in runs)
        states = collections.Counter(r.state for r in runs if r.state != "intact")
        noisy = sum(r.others > ARGS.noisy for r in runs)
        lost_s = "-" if lost is None else (f"{lost:,}" + "".join(
            f" **({n}/{len(runs)} {st})**" for st, n in sorted(states.items())))
        rows.append(f"| {work.title} | {t.name} | {fmt(wall, '.3f')} | {cpu:.3f} | {sys_s:.3f} | "
                    f"{cpu / (work.bytes / 1e9):.2f} | {fmt(mb / wall, ',.0f')} | {rss:.1f} | "
                    f"{lost_s} | {ratio(cpu, cp, '.1f')} | {ratio(cpu, best, '.2f')} | "
                    f"{noisy}/{len(runs)} ({med(r.others for r in runs):.2f}) |")
    return rows


def peer_options(ap):
    """The options that find the peers and time their runs (output_bench.py takes them too)."""
    ap.add_argument("--rsyslogd", default=shutil.which("rsyslogd") or "/usr/sbin/rsyslogd")
    ap.add_argument("--syslog-ng-root", default=None,
                    help="unpacked syslog-ng; default BUILDDIR/t/bench/peers/syslog-ng/root")
    ap.add_argument("--fluent-bit", default=os.environ.get("FLUENT_BIT"))
    ap.add_argument("--stall", type=float, default=20.0,
                    help="a run ends when its output has not grown for this many seconds")
    ap.add_argument("--noisy", type=float, default=0.3,
                    help="flag runs during which others used more than this many cores")
    ap.add_argument("--tmp", default=None, help="work directory (default: a new one in $TMPDIR)")


ARGS = None


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller workloads, one round")
    ap.add_argument("--rounds", type=int, default=None, help="default 5 (1 with --quick)")
    ap.add_argument("--workloads", default="abcdef")
    ap.add_argument("--builddir", default=".", help="where logferry and t/bench/runstat are")
    ap.add_argument("--logferry", default=None)
    ap.add_argument("--runstat", default=None)
    peer_options(ap)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--strict", action="store_true",
                    help="exit 1 when a peer loses or changes lines too, not only logferry")
    ap.add_argument("--placement", choices=("falls", "one-cpu", "both"), default="both",
                    help="workloads (a)-(d): every tool as the scheduler places its threads, "
                    "pinned to one CPU (taskset -c 0), or both (default)")
    ap.add_argument("--no-peers", action="store_true",
                    help="logferry and the references only: a quick look, no peer ratios")
    args = ARGS = ap.parse_args()
    build = os.path.abspath(args.builddir)
    args.logferry = os.path.abspath(args.logferry or os.path.join(build, "logferry"))
    args.runstat = os.path.abspath(args.runstat or os.path.join(build, "t/bench/runstat"))
    rounds = args.rounds or (1 if args.quick else 5)
    sizes = QUICK if args.quick else FULL
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    tools = [Logferry("logferry text", args, "text", "none"),
             Logferry("logferry ndjson", args, "ndjson", "none"),
             Logferry("logferry ndjson zstd", args, "zstd", "zstd"),
             Logferry("logferry daemon text", args, "text", "none", daemon=True)]
    notes = []
    if args.no_peers:
        notes.append("peers: left out (--no-peers)")
    elif os.access(args.rsyslogd, os.X_OK):
        tools.append(Rsyslog("rsyslog", args))
    else:
        notes.append(f"rsyslog: {args.rsyslogd} not found (./bootstrap.sh deps installs it)")
    sng_dir = os.path.join(build, "t/bench/peers/syslog-ng")
    args.syslog_ng_root = args.syslog_ng_root or os.path.join(sng_dir, "root")
    if not args.no_peers and not os.path.exists(os.path.join(args.syslog_ng_root,
                                                             "usr/sbin/syslog-ng")):
        r = subprocess.run([os.path.join(HERE, "fetch-syslog-ng.sh"), sng_dir])
        if r.returncode != 0:
            notes.append("syslog-ng: could not be unpacked; left out")
    if not args.no_peers and os.path.exists(os.path.join(args.syslog_ng_root,
                                                         "usr/sbin/syslog-ng")):
        tools.append(SyslogNg("syslog-ng", args))
    if args.fluent_bit and not args.no_peers:
        tools.append(FluentBit("fluent-bit", args))
    else:
        notes.append("fluent-bit: left out (set FLUENT_BIT=/path/to/fluent-bit to include it)")
    refs = [Reference(n, args, m) for n, m in REFS]
    batch_refs, batch_tools = refs, tools
    if args.placement == "one-cpu":
        batch_refs, batch_tools = [r.pinned() for r in refs], [t.pinned() for t in tools]
    elif args.placement == "both":
        batch_refs = refs + [r.pinned() for r in refs]
        batch_tools = tools + [t.pinned() for t in tools]

    root = os.path.abspath(args.tmp) if args.tmp else tempfile.mkdtemp(prefix="lf-peers-")
    os.makedirs(root, exist_ok=True)
    failures = []  # logferry's: they fail the run
    peer_failures = []  # the peers': reported, and fail the run only with --strict
    print(f"# peers: {machine()}; {rounds} round(s){' (--quick)' if args.quick else ''}")
    notes.append("syslog-ng: flags(flow-control), log-iw-size and log-fetch-limit at their "
                 "defaults; fluent-bit: its defaults; rsyslog: one main-queue worker")
    notes.append(f"placement: {args.placement} (\"(1 CPU)\": the whole tool under taskset -c 0)")
    for n in notes:
        print(f"# {n}")
    sys.stdout.flush()
    try:
        header = ("| workload | tool | wall s | CPU s | of which sys | CPU s/GB | MB/s | "
                  "peak RSS MiB | lines lost | CPU / cp | CPU / best peer | "
                  "noisy runs (others, cores) |\n"
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        rows = []
        for key in "abcd":
            if key not in args.workloads:
                continue
            f, n, w = sizes[key]
            work = Workload(key, root, f, n, w, by_bytes=(key == "b"))
            work.title = f"({key}) " + TITLES[key].format(f=f, n=n, w=w, mib=n >> 20,
                                                           kib=w >> 10)
            nd = [t for t in tools if isinstance(t, Logferry) and t.form == "ndjson"
                  and t.compression == "none"]
            if nd:
                make_ndjson(work, root, nd[0])
            order = [r for r in batch_refs
                     if work.ndjson or not r.name.startswith("zstd -1, NDJSON")] + batch_tools
            results = collections.defaultdict(list)
            for r in range(rounds):
                k = r % len(order)
                for t in order[k:] + order[:k]:
                    work.settle(root)
                    try:
                        results[t.name].append(t.batch(work, root))
                    except (RuntimeError, subprocess.CalledProcessError) as e:
                        print(f"# {work.title}: {t.name}: {e}", file=sys.stderr)
                print(f"# {work.title}: round {r + 1}/{rounds} done, load "
                      f"{os.getloadavg()[0]:.2f}", file=sys.stderr)
            for t in order:
                bad = [r for r in results.get(t.name, []) if r.lost not in (None, 0)
                       or r.state != "intact"]
                if not bad:
                    continue
                what = ", ".join(sorted({f"{r.lost:,} lost, {r.state}" for r in bad}))
                if t.peer:
                    peer_failures.append(f"{work.title}: {t.name}: {len(bad)} run(s): {what}")
                else:
                    failures.append(f"{work.title}: {t.name}: {len(bad)} run(s): {what}")
            for pin in (False, True):
                rows += table(work, results, [t for t in batch_refs + batch_tools
                                              if t.pin == pin])
            shutil.rmtree(work.dir, ignore_errors=True)
            if work.ndjson:
                os.unlink(work.ndjson)
            shutil.rmtree(os.path.join(root, "work"), ignore_errors=True)
        if rows:
            print(f"\ninput bytes per workload are the generated files'; medians of {rounds}; "
                  "CPU / best peer: against the peer with the least CPU that lost nothing\n")
            print(header)
            print("\n".join(rows))
            sys.stdout.flush()
        if "e" in args.workloads:
            rate, secs = sizes["e"]
            live = [t for t in tools if t.form == "text" and not getattr(t, "daemon", False)]
            erows, written, oth = live_tail(live, root, rate, secs, args)
            print(f"\n(e) live tail: {rate:,} lines/s for {secs} s ({written:,} lines), all "
                  f"tools at once; others used {oth:.2f} cores\n")
            print("| tool | latency p50 ms | p99 ms | max ms | CPU % of a core | "
                  "peak RSS MiB | lines lost |\n|---|---:|---:|---:|---:|---:|---:|")
            for (name, p50, p99, mx, cpu, rss, lost), t in zip(erows, live):
                if lost != 0:
                    (peer_failures if t.peer else failures).append(
                        f"(e) live tail: {name}: {lost:,} lines lost")
                print(f"| {name} | {fmt(p50, '.0f')} | {fmt(p99, '.0f')} | {fmt(mx, '.0f')} | "
                      f"{cpu:.1f} | {rss / 1024:.1f} | {lost:,} |")
            sys.stdout.flush()
        if "f" in args.workloads:
            nfiles, secs = sizes["f"]
            print(f"\n(f) {nfiles:,} idle files, then one write a second for {secs} s, "
                  "one tool at a time\n")
            print("| tool | CPU % of a core | RSS MiB | peak RSS MiB | lines lost | "
                  "others, cores |\n|---|---:|---:|---:|---:|---:|")
            for t in [t for t in tools
                      if t.form == "text" and not getattr(t, "daemon", False)]:
                cpu, rss, hwm, lost, oth = idle_files(t, root, nfiles, secs, args)
                if lost != 0:
                    (peer_failures if t.peer else failures).append(
                        f"(f) idle files: {t.name}: {lost:,} lines lost")
                print(f"| {t.name} | {cpu:.2f} | {rss / 1024:.1f} | {hwm / 1024:.1f} | "
                      f"{lost:,} | {oth:.2f} |")
                sys.stdout.flush()
        print(f"\n# load average at the end {os.getloadavg()[0]:.2f}")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    for f in peer_failures:
        print(f"PEER FAILED: {f}")
    for f in failures:
        print(f"ERROR: logferry: {f}")
    return 1 if failures or (args.strict and peer_failures) else 0


if __name__ == "__main__":
    sys.exit(main())
