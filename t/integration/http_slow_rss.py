#!/usr/bin/env python3
"""A slow collector does not make the agent hold the file in memory. A 1 GiB file is
shipped by the http output to a collector that waits 0.3 s before each answer; for 20 s
(LF_SOAK=1: 120 s) the agent's peak RSS (VmHWM) must stay under queue.max_bytes + 32 MiB
while the collector keeps receiving and most of the file is still unread. Printed: the peak
RSS and how far the agent got. Skipped (exit 77, t/skips.allowed) under the sanitizers,
whose shadow memory and quarantine are not the agent's."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import tailtest as tt  # noqa: E402

GIB = 1 << 30
MAX_BYTES = 16 << 20
SLACK = 32 << 20
SECONDS = 120 if os.environ.get("LF_SOAK") else 20



def write_gib(path):
    line = "slow collector " + "r" * 180
    block = "".join(f"{i:07d} {line}\n" for i in range(5000)).encode()
    with open(path, "wb") as f:
        written = 0
        while written < GIB:
            f.write(block)
            written += len(block)
    return written


def main():
    if tt.sanitized():
        print("SKIP: a sanitizer build: RSS is the sanitizer's, not the agent's")
        sys.exit(77)
    c = tt.Checks()
    wd = tt.Workdir("http-slow-rss")
    rx = ht.Receiver(os.path.join(wd.root, "rx"))
    agent = None
    try:
        log = wd.path("big.log")
        size = write_gib(log)
        rx.control(delay=0.3)
        config = os.path.join(wd.root, "slow.yml")
        with open(config, "w") as f:
            f.write(f"""data_dir: {json.dumps(wd.data)}
shutdown_timeout: 5s
inputs:
  - id: big
    paths: [{json.dumps(log)}]
outputs:
  - {{name: collector, type: http, url: {json.dumps(rx.url())}, compression: zstd}}
queue: {{max_bytes: {MAX_BYTES}}}
registry: {{flush_interval: 1s}}
metrics: {{listen: "127.0.0.1:0"}}
""")
        agent = tt.Agent(config, wd, tag="slow")
        port = tt.metrics_port(agent)
        t0 = time.monotonic()
        peak = 0
        while time.monotonic() - t0 < SECONDS and agent.alive():
            peak = max(peak, tt.proc_status_kib(agent.pid, "VmHWM") or 0)
            time.sleep(0.5)
        peak = max(peak, tt.proc_status_kib(agent.pid, "VmHWM") or 0)
        body = tt.scrape(port)[1]
        lag = tt.metric(body, "logferry_harvester_lag_bytes", '{input="big"}')
        got = sum(r.get("lines", 0) for r in rx.requests() if r["status"] == 200)
        print(f"info: peak RSS {peak / 1024:.1f} MiB (limit {(MAX_BYTES + SLACK) >> 20} MiB), "
              f"{got} events received in {SECONDS} s of {size // 200}")
        c.check(agent.alive(), "the agent keeps running")
        c.check(got > 0, "the slow collector keeps receiving", f"{got} events")
        total = size // 200
        c.check(got < total // 2 and lag is not None and lag > 0,
                "most of the file waits on disk: the collector is what holds it up",
                f"{got} of {total} events received, lag {lag} bytes")
        c.check(0 < peak * 1024 <= MAX_BYTES + SLACK,
                "peak RSS stays under queue.max_bytes + 32 MiB",
                f"{peak} KiB for max_bytes {MAX_BYTES >> 20} MiB")
        rc = agent.stop()
        c.check(rc == 0, "SIGTERM exits 0", f"rc {rc}")
    finally:
        if agent is not None and agent.alive():
            agent.kill9()
        rx.stop()
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
