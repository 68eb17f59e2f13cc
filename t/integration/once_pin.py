#!/usr/bin/env python3
"""A batch given up on pins its file's offset: `--once` into a file output that cannot take
the first batch (RLIMIT_FSIZE, EFBIG until the retry budget runs out) while the second
batch fits. The run exits 1 saying how many events are waiting, the registry does not pass
the first undelivered line, and a second run without the limit delivers the long lines."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402


def main():
    c = tt.Checks()
    wd = tt.Workdir("once-pin")
    log = wd.path("app.log")
    long_lines = [f"long-{i} " + "x" * 600 for i in range(10)]
    short_lines = [f"short-{i}" for i in range(10)]
    with open(log, "w") as f:
        f.write("".join(line + "\n" for line in long_lines + short_lines))
    config = tt.write_once_config(wd, 10)
    os.makedirs(wd.data)  # the registry is written before the limit matters (small)
    r = subprocess.run([tt.LOGFERRY, "-c", config, "--once"], capture_output=True, text=True,
                       preexec_fn=tt.limit_fsize_4k, timeout=120)
    c.check(r.returncode == 1, "the run with a batch given up on exits 1",
            f"rc={r.returncode} stderr tail: {r.stderr[-300:]!r}")
    c.check("10 events are waiting" in r.stderr,
            "it says how many events are waiting", r.stderr[-400:])
    recs = tt.read_registry(wd.data) or []
    offs = [x["offset"] for x in recs]
    c.check(offs == [0], "the registry does not pass the first undelivered line", repr(offs))
    first = [e["message"] for e in tt.read_events(wd.out)]
    c.check(not any(m.startswith("long-") for m in first), "no long line was written",
            f"{len(first)} events")
    r2 = subprocess.run([tt.LOGFERRY, "-c", config, "--once"], capture_output=True, text=True,
                        timeout=120)
    c.check(r2.returncode == 0, "a second run without the limit exits 0",
            f"rc={r2.returncode} {r2.stderr[-300:]!r}")
    got = [e["message"] for e in tt.read_events(wd.out)]
    c.check(all(m in got for m in long_lines), "the long lines arrive in the second run",
            f"{sum(m in got for m in long_lines)} of 10")
    c.check(all(m in got for m in short_lines), "every short line arrived",
            f"{sum(m in got for m in short_lines)} of 10")
    recs = tt.read_registry(wd.data) or []
    c.check([x["offset"] for x in recs] == [os.path.getsize(log)],
            "after the second run the registry is at the end", repr(recs))
    wd.cleanup()
    return c.finish()


if __name__ == "__main__":
    main()
