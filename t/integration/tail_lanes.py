#!/usr/bin/env python3
"""Outputs never wait for each other: one input routed to a console whose stdout nobody
reads (a pipe shrunk to one page) and to a file. While the console is stuck, the file output
keeps receiving batches up to the queue's caps (then the reader pauses); once the pipe is
read, both outputs hold every line, in order, and the registry reaches the end. Meanwhile
logferry_harvester_lag_bytes shows the unread backlog, and falls to 0 once all is read."""
import fcntl
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402

F_SETPIPE_SZ = 1031
LINES = 200
BATCH = 10


def main():
    c = tt.Checks()
    wd = tt.Workdir("lanes")
    log = wd.path("app.log")
    lines = [f"{i:05d} " + "y" * 1000 for i in range(LINES)]
    with open(log, "w") as f:
        f.write("".join(line + "\n" for line in lines))
    config = os.path.join(wd.root, "lanes.yml")
    with open(config, "w") as f:
        f.write(f"""data_dir: {json.dumps(wd.data)}
shutdown_timeout: 10s
inputs:
  - id: app
    paths: [{json.dumps(wd.path("*.log"))}]
    outputs: [screen, local]
outputs:
  - {{name: screen, type: console, format: text}}
  - {{name: local, type: file, path: {json.dumps(wd.out)}, compression: none}}
queue: {{max_bytes: 1MiB, batch: {{max_events: {BATCH}, flush_interval: 100ms}}}}
registry: {{flush_interval: 200ms}}
metrics: {{listen: "127.0.0.1:0"}}
""")
    rfd, wfd = os.pipe()
    fcntl.fcntl(wfd, F_SETPIPE_SZ, 4096)
    err_path = os.path.join(wd.root, "agent.stderr")
    errf = open(err_path, "wb")
    proc = subprocess.Popen([tt.LOGFERRY, "-c", config], stdin=subprocess.DEVNULL,
                            stdout=wfd, stderr=errf)
    os.close(wfd)
    # The console takes about one page, then blocks in write(2). The file output must not
    # wait for it: it gets the batches the caps allow (LF_PIPELINE_MAX_BATCHES alive).
    port = [None]

    def find_port():
        with open(err_path, "rb") as f:
            m = re.search(rb"metrics on http://127\.0\.0\.1:(\d+)/metrics", f.read())
        port[0] = int(m.group(1)) if m else None
        return port[0]
    tt.wait_for(find_port, 15)

    def lag():
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port[0]}/metrics", timeout=5) as r:
                body = r.read().decode()
        except OSError:
            return None
        m = re.search(r'^logferry_harvester_lag_bytes\{input="app"\} (\d+)$', body, re.M)
        return int(m.group(1)) if m else None
    got = tt.wait_events(wd.out, 4 * BATCH, 15)
    time.sleep(1.0)
    stalled = tt.count_lines(wd.out)
    c.check(got >= 4 * BATCH, "the file output receives batches while the console is stuck",
            f"{stalled} events in the file output")
    c.check(stalled < LINES, "the reader pauses at the caps instead of queueing everything",
            f"{stalled} of {LINES}")
    size = os.path.getsize(log)
    stuck_lag = lag()
    c.check(stuck_lag is not None and 0 < stuck_lag <= size,
            "logferry_harvester_lag_bytes shows the unread backlog while reading is paused",
            f"{stuck_lag} of {size} bytes")
    # Now read the console: everything flows to both.
    console = bytearray()
    deadline = time.monotonic() + 30
    os.set_blocking(rfd, False)
    while console.count(b"\n") < LINES and time.monotonic() < deadline:
        try:
            chunk = os.read(rfd, 65536)
        except BlockingIOError:
            time.sleep(0.02)
            continue
        if not chunk:
            break
        console += chunk
    shown = console.decode().splitlines()
    c.check(shown == lines, "the console shows every line once, in order",
            f"{len(shown)} lines")
    tt.wait_events(wd.out, LINES, 15)
    msgs = [e["message"] for e in tt.read_events(wd.out)]
    c.check(msgs == lines, "the file output holds every line once, in order",
            f"{len(msgs)} events")
    c.check(tt.wait_for(lambda: lag() == 0, 15), "the lag falls to 0 once all is read",
            f"{lag()}")
    c.check(tt.wait_for(lambda: [r["offset"] for r in tt.read_registry(wd.data) or []] == [size],
                        15), "the registry reaches the end once both answered",
            repr(tt.read_registry(wd.data)))
    proc.terminate()

    def drain():
        try:
            while os.read(rfd, 65536):
                pass
        except BlockingIOError:
            pass
        return proc.poll() is not None
    tt.wait_for(drain, 15)
    c.check(proc.returncode == 0, "SIGTERM exits 0", f"rc={proc.returncode}")
    os.close(rfd)
    errf.close()
    wd.cleanup()
    return c.finish()


if __name__ == "__main__":
    main()
