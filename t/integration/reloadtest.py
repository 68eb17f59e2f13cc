"""Helpers of the reload tests (t/integration/tail_reload*.py): a daemon with its metrics
endpoint and, optionally, a systemd notify socket, whose config file the test rewrites and
reloads with real SIGHUPs."""
import os
import re
import signal
import socket
import time

import tailtest as tt




def sample(body, name, labels=""):
    v = tt.metric(body, name, labels)
    return None if v is None else int(v)


def config_text(wd, inputs, outputs, extra=""):
    """inputs: list of (id, [paths], {key: yaml text}); outputs: list of (name, {key: yaml}).
    An input without paths is a stdin input."""
    lines = [f"data_dir: {tt.yaml_str(wd.data)}", "shutdown_timeout: 10s", "inputs:"]
    for iid, paths, opts in inputs:
        lines.append(f"  - id: {iid}")
        if not paths:
            lines.append("    type: stdin")
            for k, v in opts.items():
                lines.append(f"    {k}: {v}")
            continue
        lines.append("    paths: [" + ", ".join(tt.yaml_str(p) for p in paths) + "]")
        o = {"scan_interval": "1s", "close_inactive": "5s"}
        o.update(opts)
        for k, v in o.items():
            lines.append(f"    {k}: {v}")
    lines.append("outputs:")
    for name, opts in outputs:
        lines.append(f"  - name: {name}")
        for k, v in opts.items():
            lines.append(f"    {k}: {v}")
    lines += ["queue: {batch: {flush_interval: 100ms}}", "registry: {flush_interval: 200ms}",
              'metrics: {listen: "127.0.0.1:0"}']
    if extra:
        lines.append(extra)
    return "\n".join(lines) + "\n"


def file_output(out_dir):
    return {"type": "file", "path": tt.yaml_str(out_dir), "compression": "none"}


class Rig:
    """The daemon on wd/logferry.yml, with /metrics and (notify=True) a NOTIFY_SOCKET."""

    def __init__(self, wd, text, notify=False, tag="agent", stdin=None, argv_prefix=None):
        self.wd = wd
        self.config = os.path.join(wd.root, "logferry.yml")
        self.write(text)
        self.sock = None
        env_prefix = argv_prefix
        if notify:
            path = os.path.join(wd.root, "notify.sock")
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self.sock.bind(path)
            self.sock.settimeout(30)
            env_prefix = ["env", f"NOTIFY_SOCKET={path}"] + list(argv_prefix or [])
        self.agent = tt.Agent(self.config, wd, tag, argv_prefix=env_prefix,
                              **({} if stdin is None else {"stdin": stdin}))
        self.port = None
        if not tt.wait_for(self._find_port, 20):
            raise RuntimeError("no metrics port in the log:\n" + self.agent.stderr())
        if self.sock is not None:
            self.notes = [self.recv()]  # READY=1

    def _find_port(self):
        m = re.search(r"metrics on http://127\.0\.0\.1:(\d+)/metrics", self.agent.stderr())
        self.port = int(m.group(1)) if m else None
        return self.port

    def write(self, text):
        tmp = self.config + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.rename(tmp, self.config)

    def recv(self):
        try:
            return self.sock.recv(512).decode()
        except socket.timeout:
            return "(nothing in 30 s)"

    def metrics(self):
        return tt.scrape(self.port)[1]

    def reloads(self):
        body = self.metrics()
        ok = sample(body, "logferry_config_reloads_total", '{result="ok"}')
        bad = sample(body, "logferry_config_reloads_total", '{result="error"}')
        return (ok or 0, bad or 0)

    def reload(self, timeout=30):
        """Sends SIGHUP and waits until the reload is counted; returns (ok, error) after it,
        and the seconds it took."""
        before = self.reloads()
        t0 = time.monotonic()
        os.kill(self.agent.pid, signal.SIGHUP)
        after = [before]

        def done():
            after[0] = self.reloads()
            return sum(after[0]) > sum(before)
        tt.wait_for(done, timeout, step=0.01)
        return after[0], time.monotonic() - t0

    def healthz(self):
        return tt.scrape(self.port, "/healthz")[0]

    def stop(self):
        rc = self.agent.stop()
        if self.sock is not None:
            self.sock.close()
        return rc


def finish(c, rig, wd):
    """The checks every run ends with: /healthz 200, SIGTERM exits 0 (no leak reported)."""
    c.check(rig.healthz() == 200, "/healthz is 200 at the end")
    rc = rig.stop()
    c.check(rc == 0, "SIGTERM exits 0", f"rc={rc}")
    if c.failed == 0:
        wd.cleanup()
    return c.finish()


class Writer:
    """Appends numbered lines to a file; every line is unique: PREFIX-N."""

    def __init__(self, path, prefix):
        self.path = path
        self.prefix = prefix
        self.n = 0
        self.lines = []

    def write(self, count, tag=""):
        batch = []
        for _ in range(count):
            line = f"{self.prefix}{tag}-{self.n:07d}"
            self.n += 1
            batch.append(line)
        with open(self.path, "a") as f:
            f.write("".join(x + "\n" for x in batch))
        self.lines += batch
        return batch


def messages(out_dir):
    return [e["message"] for e in tt.read_events(out_dir)]
