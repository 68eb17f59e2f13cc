"""Shared helpers of the kafka output's tests (t/integration/kafka_*.py).

Each test starts t/integration/kafka_mock (librdkafka's mock cluster: 3 brokers in one
process, the real Kafka protocol) by PID, points the real binary at its bootstrap address,
then reads every topic back through the helper's consumer and compares message by message
with the lines written. Python standard library only."""
import json
import os
import select
import subprocess
import time

import tailtest as tt

BUILDDIR = os.environ.get("LF_BUILDDIR", ".")
MOCK = os.path.join(BUILDDIR, "t", "integration", "kafka_mock")


class MockCluster:
    """One kafka_mock process; commands as in kafka_mock.c, one answer line each."""

    def __init__(self, wd):
        self.errf = open(os.path.join(wd.root, "kafka_mock.stderr"), "ab")
        self.proc = subprocess.Popen([MOCK], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.errf, bufsize=0)
        self.pending = b""
        self.bootstrap = self._line(20)
        self.brokers = self.bootstrap.split(",")

    def _line(self, timeout):
        end = time.monotonic() + timeout
        while b"\n" not in self.pending:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                raise RuntimeError("kafka_mock did not answer in time")
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                raise RuntimeError("kafka_mock ended")
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return line.decode()

    def cmd(self, line, timeout=30):
        self.proc.stdin.write((line + "\n").encode())
        answer = self._line(timeout)
        if not answer.startswith("ok"):
            raise RuntimeError(f"kafka_mock {line!r}: {answer}")
        return answer[3:]

    def count(self, topic):
        return int(self.cmd(f"count {topic}"))

    def dump(self, topic, path):
        """Every message of topic: dicts with partition, offset, key (bytes or None),
        payload (bytes)."""
        self.cmd(f"dump {topic} {path}", timeout=60)
        msgs = []
        with open(path, "rb") as f:
            for raw in f.read().split(b"\n"):
                if not raw:
                    continue
                part, off, key, payload = raw.split(b"\t", 3)
                msgs.append({"partition": int(part), "offset": int(off),
                             "key": None if key == b"-" else bytes.fromhex(key.decode()),
                             "payload": payload})
        return msgs

    def wait_count(self, topic, n, timeout):
        """Waits until topic holds at least n messages; returns the last count."""
        got = [0]

        def enough():
            got[0] = self.count(topic)
            return got[0] >= n
        tt.wait_for(enough, timeout, step=0.2)
        return got[0]

    def close(self):
        try:
            self.cmd("quit", timeout=10)
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.errf.close()


def kafka_output(name, brokers, topic, key=None, extra=None):
    """The YAML of one kafka output (a flow mapping on one line)."""
    items = [f"name: {name}", "type: kafka",
             "brokers: [" + ", ".join(tt.yaml_str(b) for b in brokers) + "]",
             f"topic: {tt.yaml_str(topic)}"]
    if key is not None:
        items.append(f"key: {tt.yaml_str(key)}")
    for k, v in (extra or {}).items():
        items.append(f"{k}: {v}")
    return "  - {" + ", ".join(items) + "}"


def write_config(wd, inputs, outputs, extra=""):
    """inputs: dicts with id, paths and optional keys (written as given); outputs: lines
    from kafka_output()."""
    lines = [f"data_dir: {tt.yaml_str(wd.data)}", "shutdown_timeout: 20s", "inputs:"]
    for inp in inputs:
        lines.append(f"  - id: {inp['id']}")
        lines.append("    paths: [" + ", ".join(tt.yaml_str(p) for p in inp["paths"]) + "]")
        opts = {"scan_interval": "1s"}
        opts.update({k: v for k, v in inp.items() if k not in ("id", "paths")})
        for k, v in opts.items():
            lines.append(f"    {k}: {v}")
    lines.append("outputs:")
    lines += outputs
    lines += ["queue: {batch: {flush_interval: 100ms}}", "registry: {flush_interval: 200ms}",
              "metrics: {listen: \"\"}"]
    if extra:
        lines.append(extra)
    path = os.path.join(wd.root, "logferry.yml")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def run_once(config, wd, timeout=60):
    """logferry --once; returns (exit code or None on timeout, stderr text, seconds)."""
    t0 = time.monotonic()
    try:
        r = subprocess.run([tt.LOGFERRY, "-c", config, "--once"], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        return None, (e.stderr or b"").decode("utf-8", "replace"), time.monotonic() - t0
    return r.returncode, r.stderr.decode("utf-8", "replace"), time.monotonic() - t0


def events(msgs):
    """The payloads as parsed JSON, each checked to be one line without its newline."""
    out = []
    for m in msgs:
        if m["payload"].endswith(b"\n") or b"\n" in m["payload"]:
            raise ValueError(f"payload holds a newline: {m['payload'][:80]!r}")
        ev = json.loads(m["payload"])
        ev["_partition"] = m["partition"]
        ev["_offset"] = m["offset"]
        ev["_key"] = m["key"]
        out.append(ev)
    return out


def check_once_in_order(c, expected_by_path, evs, what, copies_ok=False, max_breaks=0):
    """Every expected line arrived exactly once, and per file in write order (a file's
    events share a key, hence a partition: read in offset order they must follow the file).
    With copies_ok, lines may also arrive again (at least once: a whole batch sent again
    after messages timed out), and the order is that of first arrivals, where each batch
    the lane sent again may land after later ones (docs/outputs.md, kafka, "Order"): up to
    max_breaks places where a run of lines arrived after later lines."""
    got_by_path = {}
    for ev in sorted(evs, key=lambda e: (e["_partition"], e["_offset"])):
        got_by_path.setdefault(ev["log"]["file"]["path"], []).append(ev["message"])
    total = sum(len(v) for v in expected_by_path.values())
    if not copies_ok:
        c.check(len(evs) == total, f"{what}: one message per line", f"{len(evs)} of {total}")
    for path, lines in expected_by_path.items():
        got = got_by_path.get(path, [])
        missing, dups, breaks = tt.compare_streams(lines, got)
        if copies_ok:
            c.check(not missing and breaks <= max_breaks,
                    f"{what}: every line of {os.path.basename(path)} arrives, byte-identical, "
                    f"in order but for at most {max_breaks} batches sent again",
                    f"{len(set(got))} of {len(lines)}, {len(missing)} missing, {breaks} "
                    "places out of order")
            print(f"info: {what}: {dups} lines of {os.path.basename(path)} arrived twice")
            continue
        c.check(not missing and dups == 0 and breaks == 0 and got == lines,
                f"{what}: {os.path.basename(path)} arrives once, in order, byte-identical",
                f"{len(got)} of {len(lines)}, {len(missing)} missing, {dups} doubled, "
                f"{breaks} out of order")
