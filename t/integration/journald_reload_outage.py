#!/usr/bin/env python3
"""SIGHUP reloads of a journald input while its http output's collector is down
(docs/journald.md "Reload"; SPEC.md: a reload never waits for an output to recover). One
daemon, a journal of two units, the collector started only after both reloads:

fields   the input gains `fields` while nothing can be delivered: the reload applies at
         once (under a second); the same stream goes on, so once the collector is up
         every entry arrives exactly once, those read after the reload with the field;
units    then `units: [b.service]` while the collector is still down: applies at once; a
         new stream from the acknowledged position (nothing acknowledged yet: the oldest
         entry), so b.service's entries may arrive twice (read before the reload, and again
         under the new filter: the documented price of a filter change) but none is
         skipped, and a.service's entries written after the reload never arrive; once
         everything is delivered the registry holds the new stream at its last entry."""
import collections
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import journaltest as jt  # noqa: E402
import reloadtest as rt  # noqa: E402
import tailtest as tt  # noqa: E402


def config(wd, jdir, port, **more):
    inp = {"id": "journal", "directory": jdir}
    inp.update(more)
    out = ["  - name: collector", "    type: http",
           f"    url: http://127.0.0.1:{port}/ingest", "    compression: none",
           "    timeout: 2s", "    backoff: {initial: 100ms, max: 500ms}"]
    return jt.config_text(wd.data, [inp], out, metrics=True)


def msg(entry):
    return entry.first("MESSAGE").decode()


def unit_entries(boot, tag, start, count):
    """count entries alternating a.service and b.service."""
    out = []
    for i in range(start, start + count):
        unit = "b.service" if i % 2 else "a.service"
        out += jt.numbered(boot, f"{tag}-{unit}", i, 1, _SYSTEMD_UNIT=unit, PRIORITY=6)
    return out


def main():
    c, wd, _ = jt.begin("jreload-outage")
    jdir = os.path.join(wd.root, "journal")
    j = jt.Journal(jdir)
    boot = jt.Boot("6f" * 16, 1_700_900_000_000_000)
    first = j.append(unit_entries(boot, "first", 0, 200))
    port = tt.free_port()
    rig = rt.Rig(wd, config(wd, jdir, port), tag="agent")
    rx = None
    try:
        read = tt.wait_for(lambda: rt.sample(rig.metrics(), "logferry_events_read_total",
                                             '{input="journal"}') == 200, 20, 0.2)
        c.check(read, "the 200 entries are read while the collector is down")

        # fields: same stream
        rig.write(config(wd, jdir, port, fields="{v: 2}"))
        (ok, bad), took = rig.reload(timeout=10)
        c.check(ok == 1 and bad == 0 and took < 1.0,
                "fields: the reload applies at once while the output is down",
                f"{ok}/{bad} in {took:.2f} s")
        second = j.append(unit_entries(boot, "second", 200, 100))
        read = tt.wait_for(lambda: rt.sample(rig.metrics(), "logferry_events_read_total",
                                             '{input="journal"}') == 300, 20, 0.2)
        c.check(read, "fields: the entries written after it are read")

        # units: a new stream from the acknowledged position (the oldest entry)
        rig.write(config(wd, jdir, port, fields="{v: 2}", units=["b.service"]))
        (ok2, bad2), took = rig.reload(timeout=10)
        c.check(ok2 == 2 and bad2 == 0 and took < 1.0,
                "units: the reload applies at once while the output is still down",
                f"{ok2}/{bad2} in {took:.2f} s")
        third = j.append(unit_entries(boot, "third", 300, 41))

        rx = ht.Receiver(os.path.join(wd.root, "rx"), port=port)
        b_all = [e for e in first + second + third if e.first("_SYSTEMD_UNIT") == b"b.service"]
        want = set(msg(x) for x in first + second + b_all)
        tt.wait_for(lambda: want <= set(e["message"] for e in rx.accepted()), 30, 0.2)
        time.sleep(1.5)
        events = rx.accepted()
        n = collections.Counter(e["message"] for e in events)
        missing = want - set(n)
        c.check(not missing, "every entry of the first two batches and every b.service entry "
                "arrives: none skipped", f"{len(missing)} missing, such as "
                f"{sorted(missing)[:2]}")
        a_late = [msg(x) for x in third if x.first("_SYSTEMD_UNIT") == b"a.service"]
        c.check(not any(m in n for m in a_late),
                "units: a.service's entries written after the reload never arrive",
                str([m for m in a_late if m in n][:2]))
        twice = [m for m, k in n.items() if k > 1]
        c.check(all(m in set(msg(x) for x in b_all) for m in twice),
                "only b.service's entries may arrive twice (read again by the new filter)",
                str([m for m in twice if m not in set(msg(x) for x in b_all)][:2]))
        c.check(all(k <= 2 for k in n.values()), "and at most twice",
                str([m for m, k in n.items() if k > 2][:2]))
        after = [e for e in events if e["message"] in set(msg(x) for x in second)]
        c.check(after and all(e.get("fields", {}).get("v") == 2 for e in after),
                "fields: entries read after the first reload carry the field", str(after[:1]))
        b_third = [x for x in third if x.first("_SYSTEMD_UNIT") == b"b.service"]
        tt.wait_for(lambda: [r["offset"] for r in jt.journal_registry(wd.data, "journal")]
                    == [len(b_all)], 10, 0.2)
        rec = jt.journal_registry(wd.data, "journal")
        c.check([r["offset"] for r in rec] == [len(b_all)],
                "units: the registry holds the new stream at its last b.service entry",
                f"{rec} (want offset {len(b_all)}, last {msg(b_third[-1])})")
    finally:
        if rx is not None:
            rx.stop()
    rt.finish(c, rig, wd)  # exits


if __name__ == "__main__":
    sys.exit(main())
