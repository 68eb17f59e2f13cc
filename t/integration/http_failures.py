"""The http output when the collector says no. Daemon: 503 three times then 429 twice, then
200: nothing lost, the same bytes sent each time, the retries counted, the backoff within
its configured bounds. A 400: the batch lands in the dead-letter file (one record per
event, with output, status and reason), is counted, the registry moves past it and later
lines flow. `--once` with every batch refused: exit 0, all dead-lettered."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import tailtest as tt  # noqa: E402


def lines_of(tag, n):
    return [f"{tag} line {i} \u00e9" for i in range(n)]


def daemon(c):
    wd = tt.Workdir("http-fail")
    rx = ht.Receiver(os.path.join(wd.root, "rx"))
    agent = None
    try:
        rx.control(seq="503,503,503,429,429")
        first = lines_of("first", 200)
        ht.write_lines(wd.path("a.log"), first)
        cfg = ht.write_config(wd, [f"url: {rx.url()}", "compression: zstd",
                                   "backoff: {initial: 100ms, max: 400ms}"], metrics=True)
        agent = tt.Agent(cfg, wd, "daemon")
        port = tt.wait_for(lambda: ht.metrics_port(agent), 10)
        c.check(port, "the daemon serves metrics", str(port))
        tt.wait_for(lambda: len(rx.accepted()) >= 200, 20)
        got = sorted(e["message"] for e in rx.accepted())
        c.check(got == sorted(first), "after 503s and 429s every line arrives once",
                f"{len(got)} of {len(first)}")
        reqs = rx.requests()
        statuses = [r["status"] for r in reqs]
        c.check(statuses.count(503) == 3 and statuses.count(429) == 2 and statuses[-1] == 200,
                "the receiver answered 503 x3, 429 x2, then 200", str(statuses))
        c.check(len({r["sha256"] for r in reqs}) == 1,
                "every retry sends the same bytes", f"{len({r['sha256'] for r in reqs})} bodies")
        gaps = [b["time"] - a["time"] for a, b in zip(reqs, reqs[1:])]
        c.check(gaps and max(gaps) < 1.5, "retries wait no longer than backoff.max (400 ms) "
                "plus slack", ", ".join(f"{g:.2f}" for g in gaps))
        retries = tt.wait_for(lambda: ht.metric(port, "logferry_output_retries_total") == 5, 5)
        c.check(retries, "logferry_output_retries_total counts the 5 retries",
                str(ht.metric(port, "logferry_output_retries_total")))

        # A permanent refusal: dead letters, counted, acknowledged.
        rx.control(status=400, count=1)
        refused = lines_of("refused", 120)
        ht.write_lines(wd.path("a.log"), refused)
        dl = tt.wait_for(lambda: len(ht.dead_letters(wd.data)) >= 120, 15)
        recs = ht.dead_letters(wd.data)
        c.check(dl and [r["event"]["message"] for r in recs] == refused,
                "the refused batch is in the dead-letter file, one record per event, in order",
                f"{len(recs)} records")
        c.check(recs and all(r["output"] == "collector" and r["status"] == 400 and
                             r["reason"].startswith("HTTP 400: mapping error") and
                             r["event"]["input"]["id"] == "app" for r in recs),
                "each record names the output, the status and the reason",
                str({k: v for k, v in recs[0].items() if k != "event"}) if recs else "")
        c.check(tt.wait_for(lambda: ht.metric(port, "logferry_dead_letter_events_total") == 120, 5),
                "logferry_dead_letter_events_total counts the 120 events",
                str(ht.metric(port, "logferry_dead_letter_events_total")))
        acked = ht.metric(port, "logferry_events_acked_total")
        c.check(acked == 200, "dead-lettered events are not counted as acknowledged", str(acked))
        later = lines_of("later", 30)
        ht.write_lines(wd.path("a.log"), later)
        tt.wait_for(lambda: len(rx.accepted()) >= 230, 15)
        got = [e["message"] for e in rx.accepted()]
        c.check(sorted(got[200:]) == sorted(later) and not set(got) & set(refused),
                "lines after the refused batch flow; the refused ones are not resent",
                f"{len(got)} accepted")
        size = os.path.getsize(wd.path("a.log"))
        reg = tt.wait_for(lambda: [r for r in (tt.read_registry(wd.data) or [])
                                   if r["offset"] == size], 5)
        c.check(reg, "the registry moves past the dead-lettered batch to the end of the file",
                str(tt.read_registry(wd.data)))
        c.check("HTTP 400: mapping error" in agent.stderr() and "dead letters" in agent.stderr(),
                "the refusal is logged with its status, reason and where the events went")
        rc = agent.stop()
        c.check(rc == 0, "the daemon stops cleanly", f"rc {rc}")
    finally:
        if agent is not None and agent.alive():
            agent.stop()
        rx.stop()
        wd.cleanup()


def once_all_refused(c):
    wd = tt.Workdir("http-once-400")
    rx = ht.Receiver(os.path.join(wd.root, "rx"))
    try:
        rx.control(status=400)
        lines = lines_of("once", 1200)
        ht.write_lines(wd.path("a.log"), lines)
        cfg = ht.write_config(wd, [f"url: {rx.url()}", "compression: gzip"])
        rc, err = ht.run_once(cfg)
        recs = ht.dead_letters(wd.data)
        c.check(rc == 0, "--once exits 0 when every event is dead-lettered", f"rc {rc}")
        c.check(sorted(r["event"]["message"] for r in recs) == sorted(lines),
                "--once: every refused event is in the dead letters once", f"{len(recs)} records")
        reg = tt.read_registry(wd.data) or []
        c.check(reg and reg[0]["offset"] == os.path.getsize(wd.path("a.log")),
                "--once: the registry records the whole file as done", str(reg))
    finally:
        rx.stop()
        wd.cleanup()


def once_gives_up(c):
    """--once against a collector that keeps failing: exit 1, the registry stays put."""
    wd = tt.Workdir("http-once-503")
    rx = ht.Receiver(os.path.join(wd.root, "rx"))
    try:
        rx.control(status=503)
        ht.write_lines(wd.path("a.log"), lines_of("x", 10))
        cfg = ht.write_config(wd, [f"url: {rx.url()}", "backoff: {initial: 1s, max: 8s}"])
        rc, err = ht.run_once(cfg, timeout=90)
        reg = tt.read_registry(wd.data) or []
        c.check(rc == 1, "--once exits 1 when a batch is still failing after its retries",
                f"rc {rc}")
        c.check(not [r for r in reg if r["offset"] > 0], "--once: the registry does not move",
                str(reg))
    finally:
        rx.stop()
        wd.cleanup()


def main():
    c = tt.Checks()
    daemon(c)
    once_all_refused(c)
    if tt.SOAK:
        once_gives_up(c)
    c.finish()


if __name__ == "__main__":
    main()
