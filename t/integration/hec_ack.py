"""The splunk_hec output with indexer acknowledgement against the stand-in HEC with
acknowledgement on. First ack: false: every request is refused 400 code 10 (no channel),
retried, the error says to set ack: true; a reload that sets it delivers. Then every
request carries one X-Splunk-Request-Channel (a UUID), HEC's 200 gives an ackId, and a
batch counts as delivered only once /services/collector/ack says its id is indexed. Acks
that come 2 s late: the registry does not move while HEC holds the events unindexed, then
does, and the outstanding ids are asked for together, not one request per batch. An ackId
that never comes (ack_timeout 3s): the batch is sent again (HEC's at-least-once: its events
stored twice) while the other batches of the same poll are indexed once, and counted
delivered once, by the second ackId; nothing lost. A stop with an ack out waits for it."""
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hectest  # noqa: E402
import httptest as ht  # noqa: E402
import tailtest as tt  # noqa: E402

TOKEN = "ack-token-0f0f0f"
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def main():
    c = tt.Checks()
    wd = tt.Workdir("hec-ack")
    hec = hectest.Hec(os.path.join(wd.root, "rx"), TOKEN, ack=True)
    agent = None
    try:
        log = wd.path("a.log")
        open(log, "w").close()
        cfg = hectest.config(wd, hec, [f"token: {TOKEN}", "ack: false", "ack_interval: 200ms",
                                       "ack_timeout: 3s", "backoff: {initial: 100ms, max: 500ms}"],
                             metrics=True)
        agent = tt.Agent(cfg, wd)
        port = ht.metrics_port(agent) if tt.wait_stderr(agent, "metrics on") else None

        # Without ack, a token that wants it refuses every request: no channel.
        early = hectest.lines("early", 10)
        ht.write_lines(log, early)
        said = tt.wait_stderr(agent, "set ack: true", 10)
        c.check(said and "HTTP 400: Data channel is missing (HEC code 10)" in agent.stderr() and
                hec.stored() == [], "ack: false against a token with acknowledgement: 400 code "
                "10, retried, the error says to set ack: true", agent.stderr()[-300:])
        tt.edit_config(cfg, "ack: false", "ack: true")
        agent.proc.send_signal(signal.SIGHUP)
        c.check(tt.wait_registry_offset(wd.data, log, os.path.getsize(log), 10) ==
                os.path.getsize(log) and hec.messages() == early,
                "a reload with ack: true delivers them", str(len(hec.messages())))
        n_reqs = len(hec.requests())

        # Acks 2 s late.
        hec.control(ack_delay=2)
        first = hectest.lines("late", 250)
        ht.write_lines(log, first)
        size = os.path.getsize(log)
        stored = tt.wait_for(lambda: len(hec.stored()) >= len(early) + len(first), 10)
        t_stored = time.monotonic()
        c.check(stored, "HEC takes the lines", f"{len(hec.stored())} stored")
        time.sleep(1.0)
        c.check((tt.registry_offset(wd.data, log) or 0) < size,
                "1 s after HEC took them, unindexed, the registry has not moved to the end",
                str(tt.registry_offset(wd.data, log)))
        moved = tt.wait_registry_offset(wd.data, log, size, 10)
        late = time.monotonic() - t_stored
        c.check(moved == size and late >= 1.0, "once HEC says they are indexed, it moves",
                f"offset {moved} of {size}, {late:.1f} s after HEC took them")
        reqs = hec.requests()[n_reqs:]
        events = [r for r in reqs if r["path"] == "/services/collector/event"]
        polls = [r for r in reqs if r["path"] == "/services/collector/ack"]
        channels = {r["channel"] for r in reqs}
        c.check(len(channels) == 1 and UUID.match(next(iter(channels)) or ""),
                "one channel, a UUID, on every request", str(channels))
        c.check(events and all(r["status"] == 200 and "ack_id" in r for r in events),
                "each batch's answer carries an ackId", str(events[:1]))
        c.check(polls and all(p["encoding"] == "" and p["status"] == 200 for p in polls),
                "acks are asked for in plain JSON (the events gzip'd)", str(polls[:1]))
        asked = sorted({i for p in polls for i in p.get("asked", [])})
        c.check(asked == sorted(r["ack_id"] for r in events) and
                max((len(p["asked"]) for p in polls), default=0) > 1 and len(polls) < 30,
                "outstanding ackIds are asked for together, every ack_interval",
                f"{len(events)} batches, {len(polls)} polls, largest {max((len(p['asked']) for p in polls), default=0)}")

        # Acks for some ids only: the first batch's never comes, so it goes again after
        # ack_timeout; the others are indexed on time.
        hec.control(ack_delay=0.2, never=1)
        second = hectest.lines("never", 250)
        before = len(hec.stored())
        ht.write_lines(log, second)
        size = os.path.getsize(log)
        moved = tt.wait_registry_offset(wd.data, log, size, 12)
        c.check(moved == size, "the registry reaches the end once the batch sent again is "
                "acknowledged", f"offset {moved} of {size}")
        got = hec.messages()[before:]
        twice = sorted(m for m in set(got) if got.count(m) == 2)
        at = second.index(twice[0]) if twice else 0  # one batch: a run of lines
        c.check(sorted(set(got)) == sorted(second) and twice == second[at:at + len(twice)] and
                len(twice) == len(got) - len(second) and 0 < len(twice) < len(second),
                "the unacknowledged batch alone is sent again: its lines twice (at least "
                "once), the others once", f"{len(got)} stored for {len(second)} lines, "
                f"{len(twice)} twice")
        c.check("not indexed within 3000 ms" in agent.stderr(), "the timeout is logged",
                agent.stderr()[-300:])
        acked = ht.metric(port, "logferry_events_acked_total") if port else None
        c.check(acked == len(early) + len(first) + len(second),
                "events are counted delivered once each, never for the lost ackId", str(acked))

        # A stop while an ack is out waits for it (up to shutdown_timeout).
        hec.control(ack_delay=1)
        ht.write_lines(log, hectest.lines("stop", 30))
        tt.wait_for(lambda: len(hec.stored()) >= before + len(got) + 30, 5)
        rc = agent.stop()
        c.check(rc == 0 and agent.stop_seconds < 3, "the daemon stops cleanly once the ack is in",
                f"rc {rc} after {agent.stop_seconds:.1f} s")
        c.check(tt.registry_offset(wd.data, log) == os.path.getsize(log),
                "and the registry holds the end of the file")
        errors = [ln for ln in agent.stderr().splitlines()
                  if re.search(r"Z error ", ln) and "(HEC code 10)" not in ln]
        c.check(not errors, "no error logged but the missing channel's", "\n".join(errors)[:500])
    finally:
        if agent is not None and agent.alive():
            agent.stop()
        hec.stop()
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
