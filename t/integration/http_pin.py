#!/usr/bin/env python3
"""A batch given up on at shutdown pins its file's offset in the daemon (once_pin.py is the
`--once` side). An http output sends up to 4 batches at a time (max_in_flight: 4); the
collector answers 503 to every request holding one marked line, and 200 to the others, so
the batches cut after the refused one are delivered while it waits in backoff. SIGTERM:
shutdown_timeout gives the refused batch up. The registry must not pass its first line,
and after a restart, with the collector healthy again, every line has arrived (the ones
after the refused batch may come twice; none may be missing). How the answers of the
refused batch and of the later ones meet at shutdown is a matter of timing, so the rounds
are repeated (LF_SOAK=1: more of them)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import tailtest as tt  # noqa: E402

ROUNDS = 60 if tt.SOAK else 20
LINES = 60           # 6 batches of 10: all of them alive at once (the cap is 6)
MARKED = 25          # in the third batch: two batches before it, three after


def one_round(c, k):
    wd = tt.Workdir(f"http-pin-{k}")
    rx = ht.Receiver(os.path.join(wd.root, "rx"))
    agent = None
    try:
        token = f"refuse-me-{k}"
        lines = [f"round {k} line {i:04d}" + (f" {token}" if i == MARKED else "")
                 for i in range(LINES)]
        log = wd.path("app.log")
        ht.write_lines(log, lines)
        marked_at = sum(len(l) + 1 for l in lines[:MARKED])  # the marked line's offset
        rx.control(refuse=token)
        cfg = ht.write_config(wd, [f"url: {rx.url()}", "compression: none", "timeout: 2s",
                                   "max_in_flight: 4",
                                   "backoff: {initial: 50ms, max: 200ms}"],
                              batch="flush_interval: 100ms, max_events: 10")
        tt.edit_config(cfg, "shutdown_timeout: 5s", "shutdown_timeout: 1s")
        agent = tt.Agent(cfg, wd, "first")
        # Every batch but the refused one is delivered while it is refused again and again.
        def others_delivered():
            refused = [r for r in rx.requests() if r.get("refused")]
            return len(refused) >= 2 and len(rx.accepted()) >= LINES - refused[0]["lines"]
        tt.wait_for(others_delivered, 30, step=0.1)
        refused = [r for r in rx.requests() if r.get("refused")]
        got = [e["message"] for e in rx.accepted()]
        n_refused = refused[0]["lines"] if refused else 0
        c.check(refused and len(set(got)) == LINES - n_refused and lines[MARKED] not in got,
                f"round {k}: the batches after the refused one are delivered",
                f"{len(set(got))} of {LINES} lines, {len(refused)} refusals of a batch of "
                f"{n_refused}")
        rc = agent.stop()
        c.check(rc == 0, f"round {k}: SIGTERM gives the refused batch up and exits 0",
                f"rc {rc}; {[l for l in agent.stderr().splitlines() if 'given up' in l][:1]}")
        offs = [r["offset"] for r in tt.read_registry(wd.data) or []]
        c.check(len(offs) == 1 and offs[0] <= marked_at,
                f"round {k}: the registry stops before the refused line",
                f"offsets {offs}, refused line at {marked_at}")
        rx.control()  # healthy again
        agent = tt.Agent(cfg, wd, "second")
        tt.wait_for(lambda: set(lines) <= {e["message"] for e in rx.accepted()}, 15, step=0.1)
        size = os.path.getsize(log)
        tt.wait_registry_offset(wd.data, log, size, 15)
        rc = agent.stop()
        got = [e["message"] for e in rx.accepted()]
        missing = [l for l in lines if l not in set(got)]
        c.check(not missing and rc == 0, f"round {k}: after the restart nothing is lost",
                f"{len(missing)} of {LINES} missing"
                + (f", first {missing[0]!r}" if missing else "") + f", rc {rc}")
        c.check(tt.registry_offset(wd.data, log) == size,
                f"round {k}: the registry reaches the end", str(tt.read_registry(wd.data)))
    finally:
        if agent is not None and agent.alive():
            agent.stop()
        rx.stop()
        wd.cleanup()


def main():
    c = tt.Checks()
    for k in range(ROUNDS):
        one_round(c, k)
    c.finish()


if __name__ == "__main__":
    main()
