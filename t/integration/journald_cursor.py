#!/usr/bin/env python3
"""The journald input's position in the registry (journaltest.py, reloadtest.Rig: a daemon
with /metrics, reloaded with real SIGHUPs).

registry    after the daemon read 200 entries and stopped: one record of the input with
            device 0, inode 0, fp_len 0 (no entry before the last shares its cursor's
            values), offset 200, a stream id, and as path the last entry's cursor
            b=<boot id>;m=<monotonic hex>;t=<realtime hex>
vacuumed    while it is stopped, system.journal is archived, new entries start a new one,
            and the archived file (holding the saved cursor's entry) is deleted: at the next
            start one warning with the contract's text, logferry_journal_cursor_lost_total
            {input="journal"} 1, the remaining entries read from the oldest, once each (a
            new stream: log.offset from 0 again); 3 s later nothing more (no loop, no second
            warning), and new entries still arrive
reload      SIGHUP with the input unchanged: no entry read again; SIGHUP with another
            `units:`: reading goes on after the acknowledged position with the new filter
            (only the unit's entries written after it), nothing read twice"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import journaltest as jt  # noqa: E402
import reloadtest as rt  # noqa: E402
import tailtest as tt  # noqa: E402

LOST = "logferry_journal_cursor_lost_total"


def cursor_of(entry):
    return f"b={entry.boot_id};m={entry.monotonic:x};t={entry.realtime:x}"


def parse_cursor(path):
    parts = dict(p.split("=", 1) for p in path.split(";") if "=" in p)
    try:
        return parts.get("b"), int(parts.get("m", "x"), 16), int(parts.get("t", "x"), 16)
    except ValueError:
        return None


def check_record(c, data, count, last, what):
    """The input's one registry record: returns it (or None)."""
    recs = jt.journal_registry(data, "journal")
    if not c.check(len(recs) == 1, f"{what}: one registry record with device 0, inode 0",
                   f"{tt.read_registry(data)}"):
        return None
    r = recs[0]
    c.check(r["offset"] == count, f"{what}: offset {count}", f"{r}")
    # fp_len: how many entries before the last one carry its three cursor values (none
    # here); fp_hash: the agent's hash of the input's filters (a changed filter is seen)
    c.check(r["fp_len"] == 0 and len(r["fp_hash"]) == 16, f"{what}: fp_len 0 (no entry "
            "shares the cursor's values), fp_hash 16 hex digits", f"{r}")
    c.check(parse_cursor(r["path"]) == (last.boot_id, last.monotonic, last.realtime),
            f"{what}: path is the last entry's cursor", f"{r['path']!r} != {cursor_of(last)}")
    c.check(r["stream"] is not None and len(r["stream"]) == 16 and int(r["stream"], 16) != 0,
            f"{what}: a stream id", f"{r['stream']}")
    return r


def text(wd, jdir, units=None):
    inp = {"id": "journal", "directory": jdir}
    if units:
        inp["units"] = units
    return jt.config_text(wd.data, [inp], jt.file_output(wd.out), metrics=True)


def wait_input_events(out, n, timeout=20):
    tt.wait_events(out, n, timeout)
    time.sleep(0.3)
    return tt.read_events(out)


def main():
    c, wd, _ = jt.begin("jcursor")
    jdir = os.path.join(wd.root, "journal")
    j = jt.Journal(jdir)
    boot = jt.Boot("5e" * 16, 1_700_800_000_000_000)
    j.append(jt.numbered(boot, "old", 0, 200, _SYSTEMD_UNIT="a.service", PRIORITY=6))

    # a first run reads all, stops
    rig = rt.Rig(wd, text(wd, jdir), tag="first")
    events = wait_input_events(wd.out, 200)
    jt.check_events(c, events, jt.expected_events(j.entries), "first run")
    tt.wait_for(lambda: [r["offset"] for r in jt.journal_registry(wd.data, "journal")] == [200],
                10, 0.1)
    rc = rig.stop()
    c.check(rc == 0, "first run: SIGTERM exits 0", f"rc={rc}")
    first = check_record(c, wd.data, 200, j.entries[-1], "after the first run")
    saved = first["path"] if first else "?"

    # vacuumed while stopped
    archived = j.rotate()
    boot.skip_to(boot.realtime + 60_000_000)
    kept = j.append(jt.numbered(boot, "new", 0, 150, _SYSTEMD_UNIT="a.service", PRIORITY=6))
    os.unlink(archived)
    c.check(jt.same_entries(kept, jt.readback(directory=jdir)) is None,
            "the journal now holds only the 150 new entries")
    rig = rt.Rig(wd, text(wd, jdir), tag="second")
    events = wait_input_events(wd.out, 350)
    warn = (f"input journal: journal position {saved} no longer exists (vacuumed or rotated "
            "away); reading on from the oldest entry after it")
    err = rig.agent.stderr()
    c.check(err.count(warn) == 1 and any(warn in ln for ln in jt.log_lines(err, "warn")),
            "one warning: " + warn, err[-1500:])
    body = rig.metrics()
    c.check(rt.sample(body, LOST, '{input="journal"}') == 1, f'{LOST}{{input="journal"}} 1',
            "\n".join(ln for ln in body.splitlines() if "journal" in ln)[:800])
    jt.check_events(c, events[200:], jt.expected_events(kept),
                    "after the vacuum: the remaining entries from the oldest, once each "
                    "(a new stream)")
    time.sleep(3)
    c.check(tt.count_lines(wd.out) == 350, "3 s later: nothing read again (no loop)",
            f"{tt.count_lines(wd.out)} lines")
    c.check(rig.agent.stderr().count("no longer exists") == 1, "3 s later: no second warning")
    c.check(rt.sample(rig.metrics(), LOST, '{input="journal"}') == 1, "3 s later: the metric "
            "is still 1")
    more = j.append(jt.numbered(boot, "new", 150, 20, _SYSTEMD_UNIT="a.service", PRIORITY=6))
    events = wait_input_events(wd.out, 370)
    jt.check_events(c, events[350:], jt.expected_events(more), "new entries go on arriving",
                    offsets=False)
    offs = [e["log"]["offset"] for e in events[200:]]
    c.check(offs == list(range(170)), "the new stream's log.offset 0..169", f"{offs[:5]}...")
    tt.wait_for(lambda: [r["offset"] for r in jt.journal_registry(wd.data, "journal")] == [170],
                10, 0.1)
    rec = check_record(c, wd.data, 170, more[-1], "after the vacuum")
    c.check(rec is not None and first is not None and rec["stream"] != first["stream"],
            "after the vacuum: another stream id than before",
            f"{first and first['stream']} -> {rec and rec['stream']}")

    # reload, unchanged: nothing again
    (ok, bad), _ = rig.reload()
    c.check(ok >= 1 and bad == 0, "SIGHUP (unchanged): reloaded", f"ok={ok} error={bad}")
    more = j.append(jt.numbered(boot, "reload", 0, 30, _SYSTEMD_UNIT="a.service", PRIORITY=6))
    events = wait_input_events(wd.out, 400)
    jt.check_events(c, events[370:], jt.expected_events(more),
                    "after the unchanged reload: only the new entries", offsets=False)
    offs = [e["log"]["offset"] for e in events[370:]]
    c.check(offs == list(range(170, 200)), "after the unchanged reload: the same stream goes on",
            f"{offs[:3]}...")
    tt.wait_for(lambda: [r["offset"] for r in jt.journal_registry(wd.data, "journal")] == [200],
                10, 0.1)

    # reload with units: b.service only, from the acknowledged position
    rig.write(text(wd, jdir, units=["b.service"]))
    (ok2, bad2), _ = rig.reload()
    c.check(ok2 == ok + 1 and bad2 == 0, "SIGHUP (units changed): reloaded",
            f"ok={ok2} error={bad2}")
    # the batch ends with an a.service entry: sd-journal 252 with a match can stop short of
    # the last matching entry written while it reads (until the file gets another entry),
    # which is not what this case is about
    mixed = []
    for i in range(41):
        unit = "b.service" if i % 3 == 0 else "a.service"
        mixed += jt.numbered(boot, f"units-{unit}", i, 1, _SYSTEMD_UNIT=unit, PRIORITY=6)
    j.append(mixed)
    want = [e for e in mixed if e.first("_SYSTEMD_UNIT") == b"b.service"]
    events = wait_input_events(wd.out, 400 + len(want))
    time.sleep(1)
    events = tt.read_events(wd.out)
    jt.check_events(c, events[400:], jt.expected_events(want),
                    "after the units reload: only b.service's new entries, nothing again",
                    offsets=False)
    rt.finish(c, rig, wd)  # exits


if __name__ == "__main__":
    sys.exit(main())
