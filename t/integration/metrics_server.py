#!/usr/bin/env python3
"""The metrics endpoint under abuse, against the real daemon (issue 7, item 8).

300 idle connections from 127.0.0.1 (the probe's own address), reopened as soon as the
agent closes them, must not keep /healthz from answering 200 within 2 s, probe after probe
for 12 s; a client sending its request head one byte a second is cut off within seconds;
`metrics.listen: localhost:PORT` passes --test-config and the daemon listens there."""
import os
import re
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402

IDLE_CONNS = 300
PROBE_DEADLINE = 2.0
PROBE_SECONDS = 12.0


def start_agent(wd, listen, tag):
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}])
    with open(config) as f:
        text = f.read().replace('metrics: {listen: ""}', f'metrics: {{listen: "{listen}"}}')
    with open(config, "w") as f:
        f.write(text)
    return config, tt.Agent(config, wd, tag)


def find_port(agent):
    m = re.search(r"metrics on http://[^ ]*:(\d+)/metrics", agent.stderr())
    return int(m.group(1)) if m else None


def probe(port):
    """GET /healthz; returns (status or None, seconds taken, what went wrong)."""
    t0 = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=PROBE_DEADLINE) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            data = b""
            while True:
                left = PROBE_DEADLINE - (time.monotonic() - t0)
                if left <= 0:
                    return None, time.monotonic() - t0, "timed out"
                s.settimeout(left)
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
    except OSError as e:
        return None, time.monotonic() - t0, str(e)
    m = re.match(rb"HTTP/1\.[01] (\d{3}) ", data)
    return (int(m.group(1)) if m else None), time.monotonic() - t0, repr(data[:40])


class IdleFlood:
    """Keeps IDLE_CONNS silent connections open, reopening each one the agent closes."""

    def __init__(self, port):
        self.port = port
        self.socks = []
        self.stop = threading.Event()
        self.reopened = 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def open_one(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", self.port))
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            return None
        return s

    def run(self):
        self.socks = [s for s in (self.open_one() for _ in range(IDLE_CONNS)) if s]
        while not self.stop.wait(0.1):
            for i, s in enumerate(self.socks):
                try:
                    closed = s.recv(1) == b""
                except BlockingIOError:
                    closed = False
                except OSError:
                    closed = True
                if closed:
                    s.close()
                    self.socks[i] = self.open_one() or s
                    self.reopened += 1
        for s in self.socks:
            s.close()


def check_flood(c, port):
    flood = IdleFlood(port)
    flood.thread.start()
    time.sleep(1.0)  # every idle connection is open before the first probe
    results = []
    end = time.monotonic() + PROBE_SECONDS
    while time.monotonic() < end:
        t0 = time.monotonic()
        results.append(probe(port))
        time.sleep(max(0.0, 1.0 - (time.monotonic() - t0)))
    flood.stop.set()
    flood.thread.join()
    bad = [r for r in results if r[0] != 200 or r[1] >= PROBE_DEADLINE]
    slowest = max(r[1] for r in results)
    c.check(len(results) >= 10 and not bad,
            f"/healthz answers 200 within {PROBE_DEADLINE:g} s under {IDLE_CONNS} idle "
            f"connections from the probe's address ({len(results)} probes)",
            f"slowest {slowest:.3f} s, {flood.reopened} idle connections reopened"
            if not bad else
            f"{len(bad)} of {len(results)} failed, e.g. {bad[0][0]} after {bad[0][1]:.3f} s: "
            f"{bad[0][2]}")


def check_slowloris(c, port):
    """Sends a request head one byte a second; returns when the agent closes."""
    head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"a" * 60
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    t0 = time.monotonic()
    cut = None
    for b in head:
        try:
            s.sendall(bytes([b]))
            s.settimeout(1.0)
            if s.recv(1) == b"":
                cut = time.monotonic() - t0
                break
        except socket.timeout:
            continue
        except OSError:
            cut = time.monotonic() - t0
            break
    s.close()
    c.check(cut is not None and cut < 4.5,
            "a client sending its request head a byte a second is cut off within 4.5 s",
            f"after {cut:.1f} s" if cut is not None else "still open after the whole head")


def check_localhost(c, wd):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    config, agent = start_agent(wd, f"localhost:{free}", "localhost")
    test = subprocess.run([tt.LOGFERRY, "-c", config, "--test-config"],
                          capture_output=True, text=True)
    c.check(test.returncode == 0, "--test-config accepts metrics.listen: localhost:PORT",
            f"rc={test.returncode} {test.stderr.strip()!r}")
    tt.wait_for(lambda: find_port(agent) or not agent.alive(), 10)
    status, took, why = probe(free) if agent.alive() else (None, 0, "daemon exited")
    c.check(status == 200, "the daemon listens on localhost:PORT and /healthz answers there",
            f"{status} {why} {agent.stderr().strip()[-300:]!r}")
    rc = agent.stop()
    c.check(rc == 0, "SIGTERM exits 0", f"rc={rc}")


def main():
    c = tt.Checks()
    wd = tt.Workdir("metrics-server")
    with open(wd.path("app.log"), "w") as f:
        f.write("one\n")
    _, agent = start_agent(wd, "127.0.0.1:0", "flood")
    port = tt.wait_for(lambda: find_port(agent), 10)
    c.check(port is not None, "the daemon logs where /metrics is served", str(port))
    if port is None:
        agent.stop()
        return c.finish()
    status, took, why = probe(port)
    c.check(status == 200, "/healthz answers 200 when nobody else is connected", why)
    check_flood(c, port)
    check_slowloris(c, port)
    status, took, why = probe(port)
    c.check(status == 200, "/healthz still answers once the flood is over", why)
    rc = agent.stop()
    c.check(rc == 0, "SIGTERM exits 0 after the flood", f"rc={rc}")
    check_localhost(c, wd)
    if c.failed == 0:
        wd.cleanup()
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
