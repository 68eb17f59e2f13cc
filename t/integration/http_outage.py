"""The http output through outages. The collector is stopped (by PID) for 10 s mid-run
while lines keep being written, then started again on the same port: nothing is lost
(outage.py; LF_SOAK=1 makes it 30 s). A collector that reads a request and never answers:
the agent gives up on it after `timeout`, says so, and sends the same bytes again."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import outage  # noqa: E402
import tailtest as tt  # noqa: E402


def through_outage(c):
    wd = tt.Workdir("http-outage")
    rx = ht.Receiver(os.path.join(wd.root, "rx"))
    agent = None
    try:
        cfg = ht.write_config(wd, [f"url: {rx.url()}", "compression: zstd", "timeout: 2s",
                                   "backoff: {initial: 200ms, max: 2s}"], metrics=True)
        open(wd.path("a.log"), "w").close()
        agent = tt.Agent(cfg, wd, "outage")
        lines = outage.lines("http")
        outage.through(c, wd.path("a.log"), lines, rx.stop, rx.start,
                       received=lambda: len(rx.accepted()))
        tt.wait_for(lambda: len({e["message"] for e in rx.accepted()}) >= len(lines), 30,
                    step=0.2)
        outage.check_arrived(c, lines, [e["message"] for e in rx.accepted()], copies_ok=True)
        port = ht.metrics_port(agent)
        retries = ht.metric(port, "logferry_output_retries_total") if port else None
        c.check(retries is not None and retries > 0, "the retries are counted", str(retries))
        outage.check_said_why(c, agent.stderr())
        rc = agent.stop()
        c.check(rc == 0, "the daemon stops cleanly", f"rc {rc}")
    finally:
        if agent is not None and agent.alive():
            agent.stop()
        rx.stop()
        wd.cleanup()


def hang(c):
    wd = tt.Workdir("http-hang")
    rx = ht.Receiver(os.path.join(wd.root, "rx"))
    try:
        rx.control(hang=20, count=1)
        lines = [f"hang {i}" for i in range(100)]
        ht.write_lines(wd.path("a.log"), lines)
        cfg = ht.write_config(wd, [f"url: {rx.url()}", "compression: gzip", "timeout: 1s",
                                   "backoff: {initial: 100ms, max: 200ms}"])
        t0 = time.monotonic()
        rc, err = ht.run_once(cfg)
        took = time.monotonic() - t0
        reqs = rx.requests()
        c.check(rc == 0, "--once exits 0 after the hung request", f"rc {rc}")
        c.check(sorted(e["message"] for e in rx.accepted()) == sorted(lines),
                "every line arrives once, on the retry")
        c.check([r["status"] for r in reqs] == ["hang", 200] and
                reqs[0]["sha256"] == reqs[1]["sha256"],
                "the hung request is sent again with the same bytes", str(reqs and
                                                                          [r["status"] for r in reqs]))
        c.check(took < 10, "the timeout (1 s) cut the 20 s hang short", f"{took:.1f} s")
        c.check("timed out" in err.lower() or "timeout" in err.lower(),
                "the agent logs the timeout", [l for l in err.splitlines() if "collector" in l][:1])
    finally:
        rx.stop()
        wd.cleanup()


def main():
    c = tt.Checks()
    hang(c)
    through_outage(c)
    c.finish()


if __name__ == "__main__":
    main()
