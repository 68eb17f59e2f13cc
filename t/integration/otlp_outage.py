"""The otlp output through an outage: the stand-in collector (otlp_collector.py) is stopped
(by PID) for 10 s mid-run while lines keep being written, then started again on the same
port (the pattern of outage.py, shortened). Every line arrives, as the body of a record; a
request whose answer the outage cut is sent again, so a record may arrive twice (at least
once, as for http)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import otlp_collector as oc  # noqa: E402
import outage  # noqa: E402
import tailtest as tt  # noqa: E402


def main():
    c = tt.Checks()
    wd = tt.Workdir("otlp-outage")
    rx = ht.Receiver(os.path.join(wd.root, "rx"), script="otlp_collector.py")
    agent = None
    outage.DOWN_S = 30.0 if tt.SOAK else 10.0
    try:
        cfg = ht.write_config(wd, [f"url: {rx.url('/v1/logs')}", "timeout: 2s",
                                   "backoff: {initial: 200ms, max: 2s}"], out_type="otlp")
        open(wd.path("a.log"), "w").close()
        agent = tt.Agent(cfg, wd, "outage")
        lines = outage.lines("otlp", 2000)

        def bodies():
            return [r["body"] for _, r in oc.records(rx.accepted())]
        outage.through(c, wd.path("a.log"), lines, rx.stop, rx.start,
                       received=lambda: len(bodies()), lead_s=2.0)
        tt.wait_for(lambda: len(set(bodies())) >= len(lines), 20, step=0.2)
        outage.check_arrived(c, lines, bodies(), copies_ok=True)
        c.check(all(r["path"] == "/v1/logs" and r["status"] == 200 for r in rx.requests()),
                "every request the collector read went to /v1/logs and was taken")
        rc = agent.stop()
        c.check(rc == 0, "the daemon stops cleanly", f"rc {rc}")
    finally:
        if agent is not None and agent.alive():
            agent.stop()
        rx.stop()
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
