#!/usr/bin/env python3
"""Out of file descriptors (EMFILE): the agent runs under RLIMIT_NOFILE 64 (prlimit) and
follows 500 files, each written before and after start-up. Files that cannot be opened
wait (a warning, then another try); idle files are closed (close_inactive 1s) to make room;
every line of all 500 files arrives, none twice, each file in order, and SIGTERM exits 0.
LF_SOAK=1: 2000 files.

Known to fail today (listed in XFAIL_TESTS): a glob scan whose opendir fails with EMFILE
is taken as "every file vanished", so open files are marked gone (counted as rotations) and
hold their descriptors, and the files not yet opened are never read."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402

FILES = 2000 if tt.SOAK else 500
PER_FILE = 20


def main():
    c = tt.Checks()
    wd = tt.Workdir("emfile")
    paths = [wd.path(f"f{k:04d}.log") for k in range(FILES)]
    expected = {}
    for k, p in enumerate(paths):
        expected[p] = [f"f{k:04d} {i:03d}" for i in range(PER_FILE)]
        with open(p, "w") as f:
            f.write("".join(x + "\n" for x in expected[p][:PER_FILE // 2]))
    config = tt.write_config(wd, [{"id": "many", "paths": [wd.path("*.log")],
                                   "close_inactive": "1s"}])
    t0 = time.monotonic()
    a = tt.PipedAgent(config, wd, "emfile", prefix=["prlimit", "--nofile=64:64", "--"])
    line = a.wait_log("Too many open files", 60)
    c.check(line is not None, "the agent hits EMFILE and says so", f"{line!r}")
    for p in paths:
        with open(p, "a") as f:
            f.write("".join(x + "\n" for x in expected[p][PER_FILE // 2:]))
    total = FILES * PER_FILE
    got = tt.wait_events(wd.out, total, 240 if tt.SOAK else 90)
    took = time.monotonic() - t0
    c.check(got >= total, f"every line of {FILES} files arrives", f"{got} of {total} in {took:.0f} s")
    c.check(a.alive(), "the agent is still running")
    rc = a.stop()
    c.check(rc == 0, "SIGTERM exits 0", f"rc={rc}")
    by = tt.messages_by_path(tt.read_events(wd.out))
    bad = [p for p in paths if by.get(p) != expected[p]]
    c.check(not bad, "each file whole, once, in order",
            f"{len(bad)} files differ" + (f", e.g. {bad[0]}: {len(by.get(bad[0], []))} events"
                                         if bad else ""))
    recs = tt.read_registry(wd.data) or []
    c.check(len(recs) == FILES and all(r["offset"] == os.path.getsize(r["path"]) for r in recs),
            "the registry holds every file at its end", f"{len(recs)} entries")
    wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
