#!/usr/bin/env python3
"""The file output's retention: `rotate_keep` keeps the newest rotated files and `max_age`
removes rotated files older than that, in the daemon and in `--once`; what is kept is
exactly the newest events, in order; files of another name are never touched.

Daemon: a 1 KiB rotate_bytes and lines written in 12 rounds make a file per round; with
rotate_keep 3 the directory ends with 3 rotated files and the current one, holding the
last lines written, every one of them. An output file planted 2 h old goes (max_age 1h),
one planted 10 min old stays until rotate_keep counts it out, a foreign file stays.
--once: 100 lines in batches of 10 into rotate_keep 2."""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402

NAME = re.compile(r"^logferry-\d{8}T\d{6}-\d{6}\.ndjson$")


def plant(directory, name, age_s):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write('{"message":"planted"}\n')
    t = time.time() - age_s
    os.utime(path, (t, t))


def output_files(directory):
    if not os.path.isdir(directory):
        return []
    return sorted(n for n in os.listdir(directory) if NAME.match(n))


def messages(directory, names):
    got = []
    for n in names:
        got += [e["message"] for e in tt.read_events_file(os.path.join(directory, n))]
    return got


def write_config(wd, keep, max_age, once=False):
    cfg = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}])
    tt.edit_config(cfg, "    compression: none\n",
                   "    compression: none\n    rotate_bytes: 1KiB\n"
                   f"    rotate_keep: {keep}\n    max_age: {max_age}\n")
    if once:
        tt.edit_config(cfg, "queue: {batch: {flush_interval: 100ms}}",
                       "queue: {batch: {flush_interval: 100ms, max_events: 10}}")
    return cfg


def daemon(c):
    wd = tt.Workdir("retention-daemon")
    os.makedirs(wd.out)
    plant(wd.out, "logferry-20200101T000000-000000.ndjson", 2 * 3600)
    plant(wd.out, "logferry-20200101T000001-000000.ndjson", 600)
    plant(wd.out, "notes-20200101T000000-000000.ndjson", 2 * 3600)
    cfg = write_config(wd, 3, "1h")
    agent = tt.Agent(cfg, wd)
    log = wd.path("app.log")
    written = []
    for r in range(12):
        lines = [f"round {r:02d} line {i:02d} " + "x" * 60 for i in range(15)]
        with open(log, "a") as f:
            f.write("".join(ln + "\n" for ln in lines))
        written += lines
        # each round is acknowledged (and its file written) before the next begins
        tt.wait_registry_offset(wd.data, log, os.path.getsize(log), timeout=20)
    rc = agent.stop()
    c.check(rc == 0, "the agent stops cleanly", f"rc={rc} {agent.stderr()[-300:]!r}")
    names = output_files(wd.out)
    c.check("logferry-20200101T000000-000000.ndjson" not in names,
            "an output file 2 h old is removed (max_age 1h)", repr(names))
    c.check(os.path.exists(os.path.join(wd.out, "notes-20200101T000000-000000.ndjson")),
            "a file of another name stays", repr(os.listdir(wd.out)))
    c.check(len(names) == 4, "3 rotated files and the current one are left",
            f"{len(names)}: {names}")
    got = messages(wd.out, names)
    c.check("planted" not in got, "the planted 10 min old file was counted out by rotate_keep",
            repr(names))
    c.check(len(got) > 0 and got == written[-len(got):],
            "what is left is the newest events, every one, in order",
            f"{len(got)} events, last {got[-1:]!r}")
    wd.cleanup()


def once(c):
    wd = tt.Workdir("retention-once")
    lines = [f"backfill line {i:03d} " + "y" * 80 for i in range(100)]
    with open(wd.path("app.log"), "w") as f:
        f.write("".join(ln + "\n" for ln in lines))
    cfg = write_config(wd, 2, "0", once=True)
    r = subprocess.run([tt.LOGFERRY, "-c", cfg, "--once"], capture_output=True, text=True,
                       timeout=120)
    c.check(r.returncode == 0, "--once exits 0", f"rc={r.returncode} {r.stderr[-300:]!r}")
    names = output_files(wd.out)
    c.check(len(names) == 3, "--once leaves 2 rotated files and the last one",
            f"{len(names)}: {names}")
    got = messages(wd.out, names)
    c.check(len(got) >= 20 and got == lines[-len(got):],
            "--once: the newest events, every one, in order", f"{len(got)} events")
    wd.cleanup()


def main():
    c = tt.Checks()
    daemon(c)
    once(c)
    return c.finish()


if __name__ == "__main__":
    main()
