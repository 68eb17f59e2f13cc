"""The otlp output in the daemon with the disk spool and a reload: the collector is down
while the first lines are read (their batches wait in the spool), SIGHUP reloads a config
whose otlp output has another resource service.name (the output's lane is replaced), then
the collector comes back on the same port: every line arrives, the lines written after the
reload carry the new service.name, and the metrics count them acknowledged."""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import otlp_collector as oc  # noqa: E402
import tailtest as tt  # noqa: E402


def config(wd, rx, service):
    path = ht.write_config(wd, [f"url: {rx.url('/v1/logs')}", "timeout: 1s",
                                "backoff: {initial: 100ms, max: 500ms}",
                                f"resource: {{service.name: {service}}}"],
                           out_type="otlp", metrics=True)
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text.replace("queue: {batch: {", "queue: {spool: {enabled: true}, batch: {"))
    return path


def main():
    c = tt.Checks()
    wd = tt.Workdir("otlp-spool")
    rx = ht.Receiver(os.path.join(wd.root, "rx"), script="otlp_collector.py")
    agent = None
    try:
        cfg = config(wd, rx, "before")
        rx.stop()  # down from the start: the port stays the receiver's next one
        open(wd.path("a.log"), "w").close()
        agent = tt.Agent(cfg, wd, "otlp-spool")
        port = tt.metrics_port(agent)
        ht.write_lines(wd.path("a.log"), [f"early {i}" for i in range(300)])
        tt.wait_for(lambda: "not delivered; retry" in agent.stderr(), 10)
        c.check(os.path.isdir(os.path.join(wd.data, "spool")) and
                any(os.scandir(os.path.join(wd.data, "spool"))),
                "with the collector down the batches are in the spool")
        config(wd, rx, "after")
        os.kill(agent.pid, signal.SIGHUP)
        tt.wait_for(lambda: "reload" in agent.stderr().lower() and
                    tt.metric(tt.scrape(port)[1], "logferry_config_reloads_total",
                              '{result="ok"}') == 1, 10)
        c.check(tt.metric(tt.scrape(port)[1], "logferry_config_reloads_total",
                          '{result="ok"}') == 1, "the reload is taken")
        ht.write_lines(wd.path("a.log"), [f"late {i}" for i in range(200)])
        time.sleep(0.5)
        rx.start()

        def records():
            return [(a.get("service.name"), r["body"]) for a, r in oc.records(rx.accepted())]
        tt.wait_for(lambda: len({b for _, b in records()}) >= 500, 15, step=0.2)
        got = records()
        bodies = [b for _, b in got]
        want = [f"early {i}" for i in range(300)] + [f"late {i}" for i in range(200)]
        c.check(sorted(set(bodies)) == sorted(want), "every line arrives after the outage",
                f"{len(set(bodies))} of {len(want)}")
        c.check(len(bodies) == len(set(bodies)), "none twice", f"{len(bodies)} records")
        late = {s for s, b in got if b.startswith("late ")}
        c.check(late == {"after"}, "lines read after the reload carry the new resource",
                str(late))
        v = tt.wait_metric(port, "logferry_events_acked_total", '{output="collector"}',
                           lambda x: x >= 500, timeout=10)
        c.check(v == 500, "the metrics count them acknowledged", str(v))
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
