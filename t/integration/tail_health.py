#!/usr/bin/env python3
"""Failing deliveries are reported, not hidden:

  once_fails    `--once` whose file output cannot write (RLIMIT_FSIZE of 4 KiB, lowered
                with prlimit: every batch fails with EFBIG) retries, gives up after its
                retry budget, exits 1 with "backfill incomplete" and acknowledges nothing:
                a second run with room reads every line, exactly once, in order
  healthz_outage  an output outage is not a liveness failure: with metrics.stuck_after 3s,
                while the file output cannot write for 12 s (four times the deadline past
                which a silent thread is stuck: the lane retrying is idle, not stuck),
                every /healthz probe answers 200 "ok", /metrics shows the errors; once
                the output can write every line arrives once, in order

The two run side by side (both mostly wait)."""
import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402


def case_once_fails(c):
    wd = tt.Workdir("oncefail")
    log = wd.path("app.log")
    expected = [f"line {i:04d} " + "w" * 500 for i in range(100)]
    with open(log, "w") as f:
        f.write("\n".join(expected) + "\n")
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}],
                             shutdown_timeout="1s")
    t0 = time.monotonic()
    a = tt.PipedAgent(config, wd, "once1", args=["--once"],
                      prefix=["prlimit", "--fsize=4096:unlimited", "--"])
    rc = a.wait(180)
    took = time.monotonic() - t0
    err = a.stderr()
    c.check(rc == 1, "once_fails: --once exits 1 when delivery fails", f"rc={rc} after {took:.0f} s")
    c.check("backfill incomplete" in err and "batch will be retried" in err,
            "once_fails: the log says the batch was retried and the backfill is incomplete",
            " | ".join(l for l in err.splitlines() if "incomplete" in l or "error" in l)[-400:])
    c.check(tt.count_lines(wd.out) == 0, "once_fails: no event in the output",
            f"{tt.count_lines(wd.out)} lines")
    recs = tt.read_registry(wd.data) or []
    c.check(all(r["offset"] == 0 for r in recs), "once_fails: no offset recorded past the failure",
            f"{recs}")
    a = tt.PipedAgent(config, wd, "once2", args=["--once"])
    rc = a.wait(120)
    msgs = [e["message"] for e in tt.read_events(wd.out)]
    c.check(rc == 0 and msgs == expected, "once_fails: a second run delivers every line once",
            f"rc={rc}, {len(msgs)} events")
    wd.cleanup()


def case_healthz(c):
    wd = tt.Workdir("healthz")
    log = wd.path("app.log")
    open(log, "w").close()
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}])
    tt.edit_config(config, 'metrics: {listen: ""}',
                   'metrics: {listen: "127.0.0.1:0", stuck_after: 3s}')
    a = tt.PipedAgent(config, wd, "healthz")
    line = a.wait_log("metrics on http://", 30) or ""
    m = re.search(r"http://127\.0\.0\.1:(\d+)/metrics", line)
    if not c.check(m is not None, "healthz_outage: the log says where metrics are served", line):
        a.stop()
        return
    base = f"http://127.0.0.1:{m.group(1)}"
    st, body = tt.http_get(base + "/healthz")
    c.check(st == 200 and body == "ok\n", "healthz_outage: 200 while the output works",
            f"{st} {body!r}")
    c.check(tt.set_rlimit_fsize(a.pid, 1) == 0, "healthz_outage: prlimit lowered RLIMIT_FSIZE")
    expected = [f"line {i:04d}" for i in range(200)]
    with open(log, "a") as f:
        f.write("".join(x + "\n" for x in expected))
    t0 = time.monotonic()
    seen = {}
    while time.monotonic() - t0 < 12:
        st, body = tt.http_get(base + "/healthz")
        seen.setdefault((st, body), time.monotonic() - t0)
        time.sleep(0.25)
    c.check(list(seen) == [(200, "ok\n")],
            "healthz_outage: /healthz answers 200 ok through 12 s of failed deliveries",
            "; ".join(f"{k} first at {v:.0f} s" for k, v in seen.items()))
    page = tt.http_get(base + "/metrics")[1]
    errors = tt.metric_value(page, "output_errors_total", 'output="local"')
    acked = tt.metric_value(page, "events_acked_total", 'output="local"')
    c.check(errors is not None and errors > 0 and acked == 0,
            "healthz_outage: /metrics shows errors and nothing acknowledged",
            f"output_errors_total {errors}, events_acked_total {acked}")
    tt.set_rlimit_fsize(a.pid, None)
    got = tt.wait_events(wd.out, 200, 60)
    st, body = tt.http_get(base + "/healthz")
    c.check(st == 200, "healthz_outage: 200 once the output delivers", f"{got} events, {st}")
    c.check(a.stop() == 0, "healthz_outage: SIGTERM exits 0", f"rc={a.rc}")
    msgs = [e["message"] for e in tt.read_events(wd.out)]
    c.check(msgs == expected, "healthz_outage: every line once, in order", f"{len(msgs)} events")
    wd.cleanup()


def main():
    c = tt.Checks()
    t0 = time.monotonic()
    th = threading.Thread(target=case_once_fails, args=(c,))
    th.start()
    case_healthz(c)
    th.join()
    print(f"both cases: {time.monotonic() - t0:.0f} s")
    c.finish()


if __name__ == "__main__":
    main()
