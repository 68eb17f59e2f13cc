"""The otlp output's answers, in the daemon, against the stand-in collector
(otlp_collector.py):
  - a 200 with partial_success rejecting some of the records: the batch counts as
    delivered, the rejected count is logged with the collector's message and counted in
    logferry_output_rejected_events_total, nothing goes to the dead letters;
  - a partial_success rejecting every record: the batch goes to the dead letters with the
    message as its reason;
  - 429 then 503 with Retry-After: 2, then 200: the retries wait the 2 s asked for (the
    backoff alone would retry within 200 ms: its first two delays), and the batch arrives
    once;
  - 400: the dead letters.
Every line written arrives once in all (none is lost, none is doubled)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import otlp_collector as oc  # noqa: E402
import tailtest as tt  # noqa: E402


def main():
    c = tt.Checks()
    wd = tt.Workdir("otlp-answers")
    rx = ht.Receiver(os.path.join(wd.root, "rx"), script="otlp_collector.py")
    agent = None
    n_written = [0]

    def write(k, tag):
        base = n_written[0]
        ht.write_lines(wd.path("a.log"), [f"{tag} {base + i}" for i in range(k)])
        n_written[0] += k

    def bodies():
        return [r["body"] for _, r in oc.records(rx.accepted())]

    try:
        cfg = ht.write_config(wd, [f"url: {rx.url('/v1/logs')}", "encoding: json",
                                   "backoff: {initial: 100ms, max: 5s}", "max_in_flight: 1"],
                              out_type="otlp", metrics=True,
                              batch="flush_interval: 300ms, max_events: 1000")
        open(wd.path("a.log"), "w").close()
        agent = tt.Agent(cfg, wd, "otlp-answers")
        port = tt.metrics_port(agent)

        rx.control(partial=3, msg="three+bad+records", count=1)
        write(50, "partial")
        tt.wait_for(lambda: len(bodies()) >= 50, 15)
        tt.wait_metric(port, "logferry_output_rejected_events_total",
                       '{output="collector"}', lambda v: v == 3, timeout=5)
        c.check(ht.metric(port, "logferry_output_rejected_events_total") == 3,
                "some records rejected: counted in logferry_output_rejected_events_total",
                str(ht.metric(port, "logferry_output_rejected_events_total")))
        c.check("rejected 3 of 50 records" in agent.stderr() and
                "three bad records" in agent.stderr(),
                "the count and the collector's message are logged", agent.stderr()[-400:])
        c.check(ht.dead_letters(wd.data) == [], "a partial rejection keeps nothing aside")

        rx.control(partial="all", msg="schema+mismatch", count=1)
        write(20, "allrej")
        tt.wait_for(lambda: len(ht.dead_letters(wd.data)) >= 20, 15)
        dl = ht.dead_letters(wd.data)
        c.check(len(dl) == 20 and all("schema mismatch" in json.dumps(d) for d in dl) and
                sorted(d["event"]["message"] if "event" in d else d.get("message", "")
                       for d in dl) == sorted(f"allrej {50 + i}" for i in range(20)),
                "every record rejected: the batch is in the dead letters with the reason",
                json.dumps(dl[:1])[:400])

        before = len(rx.requests())
        rx.control(seq="429,503,200", retry_after=2)
        write(30, "retry")
        tt.wait_for(lambda: sum(b.startswith("retry ") for b in bodies()) >= 30, 15)
        reqs = rx.requests()[before:]
        st = [r["status"] for r in reqs]
        c.check(st[:3] == [429, 503, 200], "429, then 503, then delivered", str(st))
        gaps = [reqs[i + 1]["time"] - reqs[i]["time"] for i in range(min(2, len(reqs) - 1))]
        c.check(len(gaps) == 2 and all(g >= 1.9 for g in gaps),
                "each retry waits the Retry-After asked for (2 s; the backoff alone: 200 ms at most)",
                str(gaps))

        rx.control(seq="400")
        write(10, "bad")
        tt.wait_for(lambda: len(ht.dead_letters(wd.data)) >= 30, 15)
        c.check(len(ht.dead_letters(wd.data)) == 30, "a 400 sends the batch to the dead letters",
                str(len(ht.dead_letters(wd.data))))

        got = [b for b in bodies()]
        # The collector took in the batch it then rejected whole: it is in its requests too.
        want = [f"partial {i}" for i in range(50)] + [f"allrej {50 + i}" for i in range(20)] + \
            [f"retry {70 + i}" for i in range(30)]
        c.check(sorted(got) == sorted(want), "every line the collector took arrives once, "
                "none doubled",
                f"{len(got)} bodies, {len(set(got))} distinct")
        c.check(ht.metric(port, "logferry_dead_letter_events_total") == 30,
                "dead letters counted: 20 rejected + 10 refused",
                str(ht.metric(port, "logferry_dead_letter_events_total")))
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
