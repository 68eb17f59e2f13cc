#!/usr/bin/env python3
"""Promises of docs/tailing.md and docs/configuration.md that no other test touched, each
against the real daemon on real files:

  start_at_end        start_at: end skips what a file held at start-up, reads what is
                      appended, and reads a file created later from 0
  ignore_older        a file not modified within ignore_older is never opened
  skip_empty_lines    empty lines are dropped (with skip_empty_lines) or sent as empty
                      messages (without), offsets unchanged
  truncated_stopped   a file truncated (and partly rewritten) while the agent was stopped is
                      read again from 0
  truncated_regrown   a file truncated below its fingerprint and rewritten past its saved
                      offset while the agent was stopped is read again from 0: the size
                      alone says "grown", the shorter head says "other content"
  deleted_file        a deleted file is read to its end, closed (no descriptor left in
                      /proc/PID/fd) and its registry entry dropped
  close_inactive      an idle file's descriptor is closed after close_inactive and the file
                      reopened when it grows
  max_open_files      never more files open than max_open_files; the others wait and are
                      opened oldest modification first

Run one case with: tail_promises.py CASE."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402


def lines(tag, n, width=0):
    return [f"{tag} {i:05d}" + ("x" * width) for i in range(n)]


def append(path, msgs):
    with open(path, "a") as f:
        f.write("".join(m + "\n" for m in msgs))


def fd_open(pid, path):
    return path in tt.fd_targets(pid) or (path + " (deleted)") in tt.fd_targets(pid)


def case_start_at_end(c):
    wd = tt.Workdir("startend")
    old = wd.path("app.log")
    before = lines("before", 50)
    append(old, before)
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")],
                                   "start_at": "end"}])
    a = tt.PipedAgent(config, wd, "startend")
    c.check(tt.wait_for(lambda: fd_open(a.pid, old), 30),
            "start_at_end: the existing file is opened")
    after = lines("after", 10)
    append(old, after)
    fresh = wd.path("new.log")
    later = lines("new", 5)
    append(fresh, later)
    tt.wait_events(wd.out, 15, 30)
    size = os.path.getsize(old)
    tt.wait_for(lambda: any(r["path"] == old and r["offset"] == size
                            for r in tt.read_registry(wd.data) or []), 30)
    c.check(a.stop() == 0, "start_at_end: SIGTERM exits 0", f"rc={a.rc}")
    by = tt.messages_by_path(tt.read_events(wd.out))
    c.check(by.get(old) == after, "start_at_end: only the lines appended after start-up",
            f"{len(by.get(old, []))} events, first {by.get(old, [None])[:1]}")
    c.check(by.get(fresh) == later, "start_at_end: a file created later is read from 0",
            f"{by.get(fresh)}")
    offs = [e["log"]["offset"] for e in tt.read_events(wd.out) if e["log"]["file"]["path"] == old]
    first = sum(len(m) + 1 for m in before)
    c.check(offs[:1] == [first], "start_at_end: the first event's offset is the old end",
            f"{offs[:1]} want {first}")
    wd.cleanup()


def case_ignore_older(c):
    wd = tt.Workdir("ignoreolder")
    old = wd.path("old.log")
    append(old, lines("old", 20))
    two_hours = time.time() - 7200
    os.utime(old, (two_hours, two_hours))
    fresh = wd.path("fresh.log")
    append(fresh, lines("fresh", 20))
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")],
                                   "ignore_older": "1h"}])
    a = tt.PipedAgent(config, wd, "ignoreolder")
    tt.wait_events(wd.out, 20, 30)
    # A file created after start-up: its arrival proves at least one later scan ran.
    late = wd.path("late.log")
    append(late, lines("late", 3))
    tt.wait_events(wd.out, 23, 30)
    opened_old = fd_open(a.pid, old)
    c.check(a.stop() == 0, "ignore_older: SIGTERM exits 0", f"rc={a.rc}")
    by = tt.messages_by_path(tt.read_events(wd.out))
    c.check(by.get(fresh) == lines("fresh", 20) and by.get(late) == lines("late", 3),
            "ignore_older: recent files are read", f"{ {k: len(v) for k, v in by.items()} }")
    c.check(old not in by and not opened_old,
            "ignore_older: a file older than ignore_older is not read",
            f"{len(by.get(old, []))} events from it, open={opened_old}")
    c.check(not any(r["path"] == old for r in tt.read_registry(wd.data) or []),
            "ignore_older: and gets no registry entry")
    wd.cleanup()


def case_skip_empty_lines(c):
    wd = tt.Workdir("skipempty")
    os.makedirs(wd.path("skip"))
    os.makedirs(wd.path("keep"))
    text = "first\n\nsecond\n\n\nthird\r\n\r\nfourth\n\n"
    for d in ("skip", "keep"):
        with open(wd.path(d, "app.log"), "w") as f:
            f.write(text)
    config = tt.write_config(wd, [
        {"id": "skip", "paths": [wd.path("skip", "*.log")], "skip_empty_lines": "true"},
        {"id": "keep", "paths": [wd.path("keep", "*.log")]}])
    a = tt.PipedAgent(config, wd, "skipempty")
    got = tt.wait_events(wd.out, 4 + 9, 30)
    time.sleep(0.5)  # nothing more is expected; a short grace for an extra event to show
    c.check(a.stop() == 0, "skip_empty_lines: SIGTERM exits 0", f"rc={a.rc}")
    evs = tt.read_events(wd.out)
    skip = [(e["message"], e["log"]["offset"]) for e in evs if e["input"]["id"] == "skip"]
    keep = [e["message"] for e in evs if e["input"]["id"] == "keep"]
    c.check(skip == [("first", 0), ("second", 7), ("third", 16), ("fourth", 25)],
            "skip_empty_lines: true drops empty lines, offsets unchanged", f"{skip}")
    c.check(keep == ["first", "", "second", "", "", "third", "", "fourth", ""],
            "skip_empty_lines: false sends empty messages", f"{keep} ({got} seen)")
    wd.cleanup()


def run_to_end(c, config, wd, log, events, label):
    """Runs the agent until the output holds `events` and the registry is at log's end (its
    only file), then stops it: a check that it exits 0. Returns the stopped agent."""
    a = tt.PipedAgent(config, wd, label.replace(" ", "-").replace(":", ""))
    tt.wait_events(wd.out, events, 30)
    size = os.path.getsize(log)
    tt.wait_for(lambda: [r["offset"] for r in tt.read_registry(wd.data) or []] == [size], 30)
    c.check(a.stop() == 0, f"{label} exits 0")
    return a


def case_truncated_stopped(c):
    wd = tt.Workdir("truncstop")
    log = wd.path("app.log")
    first = lines("line", 100, 30)  # 41 bytes each: the fingerprint's 1 KiB is 25 lines
    append(log, first)
    size = os.path.getsize(log)
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}])
    a = tt.PipedAgent(config, wd, "truncstop1")
    tt.wait_events(wd.out, 100, 30)
    tt.wait_for(lambda: [r["offset"] for r in tt.read_registry(wd.data) or []] == [size], 30)
    c.check(a.stop() == 0, "truncated_stopped: first run exits 0")
    # Same inode, same first KiB (same fingerprint), but shorter than the saved offset.
    with open(log, "r+") as f:
        f.truncate(0)
    append(log, first[:40])
    a = run_to_end(c, config, wd, log, 140, "truncated_stopped: second run")
    evs = tt.read_events(wd.out)
    second = [(e["message"], e["log"]["offset"]) for e in evs[100:]]
    want = [(m, i * 41) for i, m in enumerate(first[:40])]
    c.check(len(evs) == 140 and second == want,
            "truncated_stopped: the truncated file is read again from 0",
            f"{len(evs)} events; second run starts {second[:1]}")
    c.check("shorter than its saved offset" in a.stderr(),
            "truncated_stopped: the log says why", a.stderr()[-300:])
    wd.cleanup()


def case_truncated_regrown(c):
    wd = tt.Workdir("truncregrow")
    log = wd.path("app.log")
    first = lines("line", 10, 30)  # 410 bytes of whole lines
    with open(log, "w") as f:
        f.write("".join(m + "\n" for m in first) + "an unterminated last line " + "u" * 74)
    size = os.path.getsize(log)  # 510: the fingerprint covers it all, the offset stops at 410
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}])
    a = tt.PipedAgent(config, wd, "truncregrow1")
    tt.wait_events(wd.out, 10, 30)
    saved = sum(len(m) + 1 for m in first)
    tt.wait_for(lambda: [r["offset"] for r in tt.read_registry(wd.data) or []] == [saved], 30)
    c.check(a.stop() == 0, "truncated_regrown: first run exits 0")
    recs = tt.read_registry(wd.data) or []
    c.check([(r["offset"], r["fp_len"]) for r in recs] == [(saved, size)],
            "truncated_regrown: the registry holds the last whole line's end, the fingerprint "
            "the whole file", repr(recs))
    # Other content on the same inode: shorter than the fingerprint, longer than the offset.
    second = lines("new", 10, 36)  # 460 bytes
    with open(log, "r+") as f:
        f.truncate(0)
        f.write("".join(m + "\n" for m in second))
    a = run_to_end(c, config, wd, log, 20, "truncated_regrown: second run")
    evs = tt.read_events(wd.out)
    got = [(e["message"], e["log"]["offset"]) for e in evs[10:]]
    want = [(m, i * 46) for i, m in enumerate(second)]
    c.check(len(evs) == 20 and got == want,
            "truncated_regrown: the rewritten file is read again from 0",
            f"{len(evs)} events; second run starts {got[:1]}")
    c.check("with other content" in a.stderr(), "truncated_regrown: the log says why",
            a.stderr()[-300:])
    wd.cleanup()


def case_deleted_file(c):
    wd = tt.Workdir("deleted")
    log = wd.path("app.log")
    keep = wd.path("other.log")
    append(keep, ["other"])
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}])
    a = tt.PipedAgent(config, wd, "deleted")
    part1 = lines("a", 1000, 40)
    append(log, part1)
    tt.wait_events(wd.out, 1001, 30)
    c.check(tt.wait_for(lambda: len(tt.read_registry(wd.data) or []) == 2, 30),
            "deleted_file: both files are in the registry")
    part2 = lines("b", 20000, 40)
    append(log, part2)
    os.unlink(log)  # at once: most of part2 is still unread
    got = tt.wait_events(wd.out, 21001, 60)
    c.check(got == 21001, "deleted_file: read to its end after the unlink", f"{got} events")
    closed = tt.wait_for(lambda: not fd_open(a.pid, log), 30)
    c.check(closed, "deleted_file: then closed (no descriptor in /proc/PID/fd)",
            f"{[t for t in tt.fd_targets(a.pid) if 'app.log' in t]}")
    gone = tt.wait_for(lambda: [r["path"] for r in tt.read_registry(wd.data) or []] == [keep],
                       30)
    c.check(gone, "deleted_file: and its registry entry is dropped",
            f"{tt.read_registry(wd.data)}")
    c.check(a.stop() == 0, "deleted_file: SIGTERM exits 0", f"rc={a.rc}")
    by = tt.messages_by_path(tt.read_events(wd.out))
    c.check(by.get(log) == part1 + part2, "deleted_file: every line once, in order",
            f"{len(by.get(log, []))} of {len(part1) + len(part2)}")
    wd.cleanup()


def case_close_inactive(c):
    wd = tt.Workdir("inactive")
    log = wd.path("app.log")
    append(log, lines("a", 10))
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")],
                                   "close_inactive": "2s"}])
    a = tt.PipedAgent(config, wd, "inactive")
    c.check(tt.wait_for(lambda: fd_open(a.pid, log), 30), "close_inactive: the file is opened")
    tt.wait_events(wd.out, 10, 30)
    t0 = time.monotonic()
    closed = tt.wait_for(lambda: not fd_open(a.pid, log), 30)
    idle = time.monotonic() - t0
    c.check(closed, "close_inactive: closed when idle", f"after {idle:.1f} s")
    c.check(idle >= 0.5, "close_inactive: not long before it has been idle",
            f"closed {idle:.1f} s after the last line arrived (close_inactive 2s)")
    append(log, lines("b", 10))
    reopened = tt.wait_for(lambda: fd_open(a.pid, log), 30)
    got = tt.wait_events(wd.out, 20, 30)
    c.check(reopened and got == 20, "close_inactive: reopened when it grows, lines arrive",
            f"open={reopened}, {got} events")
    c.check(tt.wait_for(lambda: not fd_open(a.pid, log), 30),
            "close_inactive: closed again when idle again")
    c.check(a.stop() == 0, "close_inactive: SIGTERM exits 0", f"rc={a.rc}")
    msgs = [e["message"] for e in tt.read_events(wd.out)]
    c.check(msgs == lines("a", 10) + lines("b", 10), "close_inactive: nothing lost or doubled",
            f"{len(msgs)} events")
    wd.cleanup()


def case_max_open_files(c):
    wd = tt.Workdir("maxopen")
    n = 8
    names = [wd.path(f"f{k}.log") for k in range(n)]
    # Modification times in a shuffled order: f3 oldest, then f6, f0, ...
    age_order = [3, 6, 0, 5, 1, 7, 2, 4]
    base = time.time() - 1000
    for rank, k in enumerate(age_order):
        append(names[k], [f"f{k} {i:05d} " + "p" * 60 for i in range(3000)])
        os.utime(names[k], (base + rank * 10, base + rank * 10))
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")],
                                   "max_open_files": 2}])
    a = tt.PipedAgent(config, wd, "maxopen")
    peak = [0]

    def sample():
        peak[0] = max(peak[0], tt.open_under(a.pid, wd.logs))
        return tt.count_lines(wd.out) >= n * 3000
    tt.wait_for(sample, 90, 0.01)
    c.check(a.stop() == 0, "max_open_files: SIGTERM exits 0", f"rc={a.rc}")
    c.check(0 < peak[0] <= 2, "max_open_files: never more than 2 files open",
            f"peak {peak[0]} descriptors under logs/")
    evs = tt.read_events(wd.out)
    by = tt.messages_by_path(evs)
    c.check(all(len(by.get(p, [])) == 3000 for p in names), "max_open_files: nothing lost",
            f"{[len(by.get(p, [])) for p in names]}")
    first = {}
    for i, e in enumerate(evs):
        first.setdefault(e["log"]["file"]["path"], i)
    arrival = sorted(names, key=lambda p: first.get(p, 1 << 60))
    arrival_k = [int(os.path.basename(p)[1]) for p in arrival]
    # The two oldest start together (either may come first); after them, oldest first.
    ok = sorted(arrival_k[:2]) == sorted(age_order[:2]) and arrival_k[2:] == age_order[2:]
    c.check(ok, "max_open_files: the waiting files are opened oldest first",
            f"first arrivals {arrival_k}, ages {age_order}")
    wd.cleanup()


CASES = {
    "start_at_end": case_start_at_end,
    "ignore_older": case_ignore_older,
    "skip_empty_lines": case_skip_empty_lines,
    "truncated_stopped": case_truncated_stopped,
    "truncated_regrown": case_truncated_regrown,
    "deleted_file": case_deleted_file,
    "close_inactive": case_close_inactive,
    "max_open_files": case_max_open_files,
}


def main():
    c = tt.Checks()
    for name in sys.argv[1:] or list(CASES):
        t0 = time.monotonic()
        print(f"== {name}")
        CASES[name](c)
        print(f"   {name}: {time.monotonic() - t0:.1f} s")
    c.finish()


if __name__ == "__main__":
    main()
