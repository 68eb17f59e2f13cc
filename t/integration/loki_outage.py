"""The loki output through an outage: the push receiver (http_receiver.py) is stopped (by
PID) for 10 s mid-run while lines keep being written, then started again on the same port
(outage.py). Every line arrives, as one entry of its stream; a push whose answer the
outage cut is sent again, so an entry may arrive twice (at least once, as for http)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import outage  # noqa: E402
import tailtest as tt  # noqa: E402


def main():
    c = tt.Checks()
    wd = tt.Workdir("loki-outage")
    rx = ht.Receiver(os.path.join(wd.root, "rx"))
    agent = None
    try:
        cfg = ht.write_config(wd, [f"url: {rx.url('')}", "timeout: 2s",
                                   "labels: {job: logferry, input: \"%{input.id}\"}",
                                   "backoff: {initial: 200ms, max: 2s}"], out_type="loki")
        open(wd.path("a.log"), "w").close()
        agent = tt.Agent(cfg, wd, "outage")
        lines = outage.lines("loki")

        def entries():
            return [(s["stream"], json.loads(v[1])["message"])
                    for push in rx.accepted() for s in push["streams"] for v in s["values"]]
        outage.through(c, wd.path("a.log"), lines, rx.stop, rx.start,
                       received=lambda: len(entries()))
        tt.wait_for(lambda: len({m for _, m in entries()}) >= len(lines), 30, step=0.2)
        got = entries()
        outage.check_arrived(c, lines, [m for _, m in got], copies_ok=True)
        c.check(all(s == {"job": "logferry", "input": "app"} for s, _ in got),
                "every entry is in its stream", str(got[:1]))
        c.check(all(r["path"] == "/loki/api/v1/push" for r in rx.requests()),
                "every push goes to /loki/api/v1/push")
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
