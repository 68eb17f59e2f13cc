#!/usr/bin/env python3
"""A backfill that cannot succeed stops retrying: `--once` into a file output that can take
none of three batches of long lines (RLIMIT_FSIZE 4 KiB, EFBIG) while a batch of short
lines after them fits. The first batch spends the retry budget (30 s); the two after it are
given up on at their first failure instead of spending 30 s each, so the run ends after
about 30 s, not 90 s. The run exits 1 saying how many events are waiting, the short lines
are delivered, and the registry does not pass the first long line."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402


def main():
    c = tt.Checks()
    wd = tt.Workdir("once-giveup")
    log = wd.path("app.log")
    long_lines = [f"long-{i} " + "x" * 600 for i in range(30)]
    short_lines = [f"short-{i}" for i in range(10)]
    with open(log, "w") as f:
        f.write("".join(line + "\n" for line in long_lines + short_lines))
    config = tt.write_once_config(wd, 10)
    os.makedirs(wd.data)
    start = time.monotonic()
    r = subprocess.run([tt.LOGFERRY, "-c", config, "--once"], capture_output=True, text=True,
                       preexec_fn=tt.limit_fsize_4k, timeout=300)
    took = time.monotonic() - start
    c.check(r.returncode == 1, "the run exits 1", f"rc={r.returncode} {r.stderr[-300:]!r}")
    c.check("30 events are waiting" in r.stderr, "it says 30 events are waiting",
            r.stderr[-400:])
    given_up = [ln for ln in r.stderr.splitlines() if "backfill incomplete" not in ln]
    budget = sum("not delivered: still failing after retries" in ln for ln in given_up)
    doomed = sum("not delivered: an earlier batch was given up on, so this one is too" in ln
                 for ln in given_up)
    # The log folds a repeated line, so the second batch given up at once may not show.
    c.check(budget == 1 and doomed >= 1,
            "one batch spends the retry budget, the ones after it are given up on at once",
            f"{budget} spent the budget, {doomed} given up at once")
    c.check(took < 75, "the run ends after one retry budget (30 s), not three (90 s)",
            f"{took:.1f} s")
    got = [e["message"] for e in tt.read_events(wd.out)]
    c.check(got == short_lines, "the short lines after them are delivered, no long one",
            f"{len(got)} events")
    recs = tt.read_registry(wd.data) or []
    c.check([x["offset"] for x in recs] == [0], "the registry does not pass the first long line",
            repr(recs))
    wd.cleanup()
    return c.finish()


if __name__ == "__main__":
    main()
