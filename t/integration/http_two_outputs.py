#!/usr/bin/env python3
"""Two network outputs, one down. One input is routed to two http outputs, each with its own
collector; collector "down" is stopped (by PID) before the agent starts. The healthy one
keeps receiving while its peer is away, until the events held for the down one fill
queue.max_bytes: then the reader pauses (the healthy collector stops getting new lines,
logferry_queue_bytes stays within queue.max_bytes plus one batch, the registry stays at the
start). Once the collector comes back on its port, both hold every line once,
and the registry reaches the end of the file."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import tailtest as tt  # noqa: E402

LINES = 4000
MAX_BYTES = 256 * 1024
BATCH = 500


def main():
    c = tt.Checks()
    wd = tt.Workdir("http-two")
    up = ht.Receiver(os.path.join(wd.root, "rx-up"))
    down = ht.Receiver(os.path.join(wd.root, "rx-down"))
    down.stop()  # its port stays known: it comes back there
    log = wd.path("app.log")
    lines = [f"{i:05d} " + "w" * 250 for i in range(LINES)]
    ht.write_lines(log, lines)
    size = os.path.getsize(log)
    config = os.path.join(wd.root, "two.yml")
    with open(config, "w") as f:
        f.write(f"""data_dir: {json.dumps(wd.data)}
shutdown_timeout: 10s
inputs:
  - id: app
    paths: [{json.dumps(log)}]
    outputs: [healthy, away]
outputs:
  - {{name: healthy, type: http, url: {json.dumps(up.url())}, compression: gzip}}
  - {{name: away, type: http, url: {json.dumps(down.url())}, compression: zstd,
      backoff: {{initial: 100ms, max: 500ms}}, timeout: 2s}}
queue: {{max_bytes: {MAX_BYTES}, batch: {{max_events: {BATCH}, flush_interval: 100ms}}}}
registry: {{flush_interval: 200ms}}
metrics: {{listen: "127.0.0.1:0"}}
""")
    agent = tt.Agent(config, wd, tag="two")
    try:
        port = tt.metrics_port(agent)
        c.check(tt.wait_for(lambda: len(up.accepted()) >= BATCH, 20),
                "the healthy collector receives while the other is down",
                f"{len(up.accepted())} events")
        # It stalls once the events held for the down output fill the queue.
        seen = []
        stalled = False
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not stalled:
            seen.append(len(up.accepted()))
            stalled = len(seen) >= 6 and seen[-1] == seen[-6] and seen[-1] > 0
            time.sleep(0.3)
        held = len(up.accepted())
        body = tt.scrape(port)[1]
        qbytes = tt.metric(body, "logferry_queue_bytes")
        c.check(stalled and held < LINES,
                "then the reader pauses: the healthy collector stops short of the file's end",
                f"{held} of {LINES} events, counts {seen[-6:]}")
        c.check(qbytes is not None and 0 < qbytes <= MAX_BYTES + BATCH * 300,
                "logferry_queue_bytes stays within queue.max_bytes plus one batch",
                f"{qbytes} bytes, max_bytes {MAX_BYTES}")
        c.check(held * 257 <= MAX_BYTES + 2 * BATCH * 300,
                "what the healthy one got while its peer was away is bounded by queue.max_bytes",
                f"{held} events of 257 bytes")
        offs = [r["offset"] for r in tt.read_registry(wd.data) or [] if r["path"] == log]
        c.check(offs in ([], [0]), "the registry does not move while one output has nothing",
                str(offs))
        down.start()
        c.check(tt.wait_for(lambda: len(down.accepted()) >= LINES and
                            len(up.accepted()) >= LINES, 60),
                "once it is back, both collectors receive every line",
                f"{len(up.accepted())} and {len(down.accepted())} of {LINES}")
        for name, rx in (("healthy", up), ("away", down)):
            msgs = [e["message"] for e in rx.accepted()]
            c.check(sorted(msgs) == lines, f"{name}: every line once, byte-identical",
                    f"{len(msgs)} events, {len(msgs) - len(set(msgs))} doubled")
        c.check(tt.wait_for(lambda: [r["offset"] for r in tt.read_registry(wd.data) or []
                                     if r["path"] == log] == [size], 15),
                "the registry reaches the end once both answered",
                str(tt.read_registry(wd.data)))
        rc = agent.stop()
        c.check(rc == 0, "SIGTERM exits 0", f"rc {rc}")
    finally:
        if agent.alive():
            agent.kill9()
        up.stop()
        down.stop()
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
