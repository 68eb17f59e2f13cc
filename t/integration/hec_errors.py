"""The splunk_hec output's daemon, behind the disk spool, through what goes wrong: a wrong
token (403 code 4) is retried with an error that names the token problem and never the
token, nothing stored, nothing lost once a reload (SIGHUP) gives the right one; then HEC
down for 10 s while lines keep coming: once it is back on its port every line is stored
(no loss; a request the outage cut may be stored twice, HEC's at-least-once)."""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hectest  # noqa: E402
import httptest as ht  # noqa: E402
import tailtest as tt  # noqa: E402

WRONG = "wrong-token-7a7a7a"
RIGHT = "right-token-5b5b5b"


def main():
    c = tt.Checks()
    wd = tt.Workdir("hec-errors")
    hec = hectest.Hec(os.path.join(wd.root, "rx"), RIGHT)
    agent = None
    os.environ["HEC_TOKEN"] = WRONG
    os.environ["HEC_TOKEN_NEW"] = RIGHT
    try:
        log = wd.path("a.log")
        first = hectest.lines("token", 120)
        ht.write_lines(log, first)
        cfg = hectest.config(wd, hec, ["token: \"${HEC_TOKEN}\"",
                                       "backoff: {initial: 100ms, max: 300ms}", "timeout: 2s"],
                             spool=True)
        agent = tt.Agent(cfg, wd)
        said = tt.wait_stderr(agent, "Splunk refused the token", 10)
        time.sleep(0.5)  # a few retries more, all refused
        err = agent.stderr()
        refused = [r for r in hec.requests() if r["status"] == 403 and r["code"] == 4]
        c.check(said and "HTTP 403: Invalid token (HEC code 4)" in err and len(refused) >= 2,
                "a wrong token: 403 code 4, retried, the error names the token problem",
                f"{len(refused)} requests refused; {err[-300:]}")
        c.check(WRONG not in err and RIGHT not in err, "no token in the log")
        c.check(hec.stored() == [], "nothing stored with a wrong token")
        tt.edit_config(cfg, "${HEC_TOKEN}", "${HEC_TOKEN_NEW}")
        agent.proc.send_signal(signal.SIGHUP)
        ok = tt.wait_for(lambda: len(set(hec.messages())) >= len(first), 10)
        c.check(ok and sorted(set(hec.messages())) == sorted(first),
                "after the reload with the right token every line arrives",
                f"{len(set(hec.messages()))} of {len(first)}")

        # HEC down 10 s while lines keep coming.
        hec.stop()
        t0 = time.monotonic()
        second = hectest.lines("outage", 400)
        for k in range(0, len(second), 50):
            ht.write_lines(log, second[k:k + 50])
            time.sleep(1.0)
        time.sleep(max(0.0, 10.0 - (time.monotonic() - t0)))
        hec.start()
        size = os.path.getsize(log)
        tt.wait_for(lambda: set(second) <= set(hec.messages()), 12, step=0.2)
        got = hec.messages()
        missing = set(second) - set(got)
        c.check(not missing, "HEC down 10 s: every line arrives once it is back",
                f"{len(missing)} missing, {len(got) - len(set(got))} stored twice")
        c.check(tt.wait_registry_offset(wd.data, log, size, 5) == size,
                "the registry reaches the end of the file")
        err = agent.stderr()
        c.check("will retry" in err and WRONG not in err and RIGHT not in err,
                "the outage is logged as retries; still no token in the log")
        rc = agent.stop()
        c.check(rc == 0, "the daemon stops cleanly", f"rc {rc}")
        c.check(ht.dead_letters(wd.data) == [], "nothing is dead-lettered")
        c.check(os.path.isdir(os.path.join(wd.data, "spool")), "the batches went through the spool")
    finally:
        if agent is not None and agent.alive():
            agent.stop()
        hec.stop()
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
