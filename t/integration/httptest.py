"""Helpers of the HTTP-based outputs' integration tests (t/integration/http_*.py, es_*.py):
the test receivers (http_receiver.py, es_receiver.py) started and stopped by PID, a config with one http output, the
agent's metrics and dead letters."""
import json
import os
import re
import subprocess
import sys
import urllib.request
import zlib

import tailtest as tt

HERE = os.path.dirname(os.path.abspath(__file__))


class Receiver:
    """One http_receiver.py process; its records live in DIR (kept across restarts)."""

    def __init__(self, directory, port=0, tls=None, script="http_receiver.py"):
        self.script = script
        self.dir = directory
        os.makedirs(directory, exist_ok=True)
        self.tls = tls
        self.port = port
        self.proc = None
        self.start()

    def start(self):
        argv = [sys.executable, os.path.join(HERE, self.script), "--dir", self.dir,
                "--port", str(self.port)]
        if self.tls:
            argv += ["--tls-cert", self.tls[0], "--tls-key", self.tls[1]]
        argv += self.extra_args()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the receiver did not start")
        self.port = int(line)

    def extra_args(self):
        """More arguments for the script, for a subclass."""
        return []

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # by PID: Popen signals its own child
            self.proc.wait(timeout=10)
        self.proc = None

    def url(self, path="/ingest"):
        scheme = "https" if self.tls else "http"
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    def control(self, **kw):
        q = "&".join(f"{k}={v}" for k, v in kw.items())
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/_ctl?{q}", timeout=5) as r:
            r.read()

    def accepted(self):
        """The decoded events accepted so far, as JSON objects, in acceptance order. Read
        while the receiver may be writing: a torn last line (no newline yet) is left out."""
        try:
            with open(os.path.join(self.dir, "accepted.ndjson"), "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return []
        return [json.loads(l) for l in data.split(b"\n")[:-1] if l]

    def requests(self):
        try:
            with open(os.path.join(self.dir, "requests.jsonl")) as f:
                return [json.loads(l) for l in f if l.strip()]
        except FileNotFoundError:
            return []


def read_jsonl(path):
    try:
        with open(path) as f:
            return [json.loads(l) for l in f if l.strip()]
    except FileNotFoundError:
        return []


def write_config(wd, output, inputs=None, metrics=False, extra="", out_type="http",
                 batch="flush_interval: 100ms, max_events: 500"):
    """A config reading wd.logs/*.log into one http output; output: its YAML lines (a list
    of "key: value" strings after name and type)."""
    inputs = inputs or [{"id": "app", "paths": [wd.path("*.log")]}]
    lines = [f"data_dir: {tt.yaml_str(wd.data)}", "shutdown_timeout: 5s", "inputs:"]
    for inp in inputs:
        lines.append(f"  - id: {inp['id']}")
        lines.append("    paths: [" + ", ".join(tt.yaml_str(p) for p in inp["paths"]) + "]")
        lines.append("    scan_interval: 1s")
        for k, v in inp.items():
            if k not in ("id", "paths"):
                lines.append(f"    {k}: {v}")
    lines += ["outputs:", "  - name: collector", f"    type: {out_type}"]
    lines += ["    " + l for l in output]
    lines += ["queue: {batch: {" + batch + "}}",
              "registry: {flush_interval: 200ms}",
              "metrics: {listen: \"127.0.0.1:0\"}" if metrics else "metrics: {listen: \"\"}"]
    if extra:
        lines.append(extra)
    path = os.path.join(wd.root, "logferry.yml")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def run_once(config, env=None, timeout=60):
    """`logferry -c config --once`; returns (exit code, stderr text)."""
    r = subprocess.run([tt.LOGFERRY, "-c", config, "--once"], capture_output=True,
                       timeout=timeout, env=env)
    return r.returncode, r.stderr.decode("utf-8", "replace")


def rewind_registry(data_dir):
    """Sets every offset of data_dir's registry (written whole by --once: no journal) back to
    0, stream ids kept, with a correct checksum: what a crash after delivery and before the
    registry write leaves behind (the stream ids are saved before reading)."""
    path = os.path.join(data_dir, "registry")
    with open(path) as f:
        lines = f.read().split("\n")
    body = [lines[0]] + ["\t".join(p[:5] + ["0"] + p[6:])
                         for p in (l.split("\t") for l in lines[1:-2])]
    text = "\n".join(body) + "\n"
    with open(path, "w") as f:
        f.write(text + "end %08x\n" % zlib.crc32(text.encode()))


def metrics_port(agent):
    m = re.search(r"metrics on http://127\.0\.0\.1:(\d+)/metrics", agent.stderr())
    return int(m.group(1)) if m else None


def metric(port, name, output="collector"):
    """The value of name{output="..."} on the agent's /metrics, or None."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    m = re.search(r"^" + re.escape(name) + r"\{output=\"" + re.escape(output) + r"\"\} (\d+)$",
                  text, re.M)
    return int(m.group(1)) if m else None


def dead_letters(data_dir, output="collector"):
    """The records of the output's dead-letter file (zstd NDJSON), or [] if none."""
    path = os.path.join(data_dir, "dead_letters", f"{output}.ndjson.zst")
    if not os.path.exists(path):
        return []
    r = subprocess.run(["zstd", "-dc", "-q", path], capture_output=True, check=True)
    return [json.loads(l) for l in r.stdout.splitlines() if l]


def write_lines(path, lines):
    with open(path, "ab") as f:
        for l in lines:
            f.write(l.encode("utf-8") + b"\n")
