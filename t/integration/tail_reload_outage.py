#!/usr/bin/env python3
"""SIGHUP reloads while outputs fail (SPEC.md "Reload": a reload never waits for an output to
recover). Each case runs its own daemon:
- fix_url:  20,000 lines to an http output whose URL points at a dead port and 100 lines to a
            file output; a SIGHUP with the URL fixed: everything is delivered within 2 s of the
            SIGHUP, nothing lost, nothing twice;
- all_down: every output down; a reload that adds an input applies at once (RELOADING=1 then
            READY=1 fast) and, once the collectors come up, every line of both inputs arrives
            once;
- input:    an input changed (a field added) while its http output is down: the reload
            applies at once, the file output of the other input keeps receiving, and once the
            collector is up every line arrives once, those read after the reload with the field;
- full:     the spool full (the collector down) and a SIGHUP that fixes the URL: no deadlock,
            the reload applies at once and every line arrives;
- twice:    with the spool on and one output failing (503), three SIGHUPs that change nothing:
            the healthy file output receives each line exactly once (never the backlog again),
            and the failing one gets everything once it recovers;
- positions: the same across a restart: each output's own position in the spool (a line
            of the cursor file) keeps the healthy output from getting the backlog again."""
import collections
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import reloadtest as rt  # noqa: E402
import tailtest as tt  # noqa: E402


def got(rx):
    return [e["message"] for e in rx.accepted()]


def stop_all(rig, receivers):
    """The end of every case, passed or not: the agent and the collectors stop (by PID)."""
    if rig.agent.alive():
        rig.stop()
    for r in receivers:
        if r is not None:
            r.stop()


def http_output(port):
    return {"type": "http", "url": f"http://127.0.0.1:{port}/ingest", "compression": "none",
            "timeout": "2s", "backoff": "{initial: 100ms, max: 500ms}"}


def config(wd, inputs, outputs, queue="{batch: {flush_interval: 100ms}}"):
    """rt.config_text() with a queue of our own (the spool cases)."""
    text = rt.config_text(wd, inputs, outputs)
    return text.replace("queue: {batch: {flush_interval: 100ms}}", f"queue: {queue}")


def counted(messages):
    """(lines received at least once, lines received more than once)."""
    n = collections.Counter(messages)
    return set(n), sorted(m for m, k in n.items() if k > 1)


def check_all_once(c, what, expected, got):
    seen, dups = counted(got)
    missing = set(expected) - seen
    c.check(not missing and not dups and len(got) == len(expected),
            f"{what}: every line arrives exactly once",
            f"{len(got)} received for {len(expected)}, {len(missing)} missing, "
            f"{len(dups)} twice (e.g. {dups[:2]})")


def sighup_ready(rig):
    """SIGHUP, then the seconds until READY=1 (None when the notes are not RELOADING, READY)."""
    t0 = time.monotonic()
    os.kill(rig.agent.pid, signal.SIGHUP)
    first = rig.recv()
    second = rig.recv()
    took = time.monotonic() - t0
    ok = re.fullmatch(r"RELOADING=1\nMONOTONIC_USEC=\d+", first) and second == "READY=1"
    return took if ok else None


def fix_url(c):
    wd = tt.Workdir("reload-fix-url")
    port, dead = tt.free_port(), tt.free_port()
    big, small = rt.Writer(wd.path("big.log"), "big"), rt.Writer(wd.path("small.log"), "small")
    big.write(20000)
    small.write(100)
    ins = [("big", [big.path], {"outputs": "[collector]"}),
           ("small", [small.path], {"outputs": "[local]"})]
    rig = rt.Rig(wd, config(wd, ins, [("collector", http_output(dead)),
                                      ("local", rt.file_output(wd.out))]))
    rx = None
    try:
        time.sleep(1.5)  # the output fails, retries; the queue fills up
        rx = ht.Receiver(os.path.join(wd.root, "rx"), port=port)
        rig.write(config(wd, ins, [("collector", http_output(port)),
                                   ("local", rt.file_output(wd.out))]))
        t0 = time.monotonic()
        os.kill(rig.agent.pid, signal.SIGHUP)
        done = tt.wait_for(lambda: len(rx.accepted()) >= 20000 and
                           len(rt.messages(wd.out)) >= 100, 20, step=0.02)
        took = time.monotonic() - t0
        c.check(done and took < 2.0, "fix_url: everything is delivered within 2 s of the SIGHUP",
                f"{took:.2f} s; http {len(rx.accepted())}/20000, file "
                f"{len(rt.messages(wd.out))}/100")
        time.sleep(0.5)  # anything sent twice would show by now
        check_all_once(c, "fix_url: http", big.lines, got(rx))
        check_all_once(c, "fix_url: file", small.lines, rt.messages(wd.out))
        return rt.finish(c, rig, wd)
    finally:
        stop_all(rig, [rx])


def all_down(c):
    wd = tt.Workdir("reload-all-down")
    p1, p2 = tt.free_port(), tt.free_port()
    a, b = rt.Writer(wd.path("a.log"), "a"), rt.Writer(wd.path("b.log"), "b")
    a.write(5000)
    outs = [("one", http_output(p1)), ("two", http_output(p2))]
    ia = ("a", [a.path], {})
    rig = rt.Rig(wd, config(wd, [ia], outs), notify=True)
    rxs = []
    try:
        time.sleep(1.0)
        b.write(300)
        rig.write(config(wd, [ia, ("b", [b.path], {})], outs))
        took = sighup_ready(rig)
        c.check(took is not None and took < 1.0,
                "all_down: with every output down a reload answers RELOADING=1, READY=1 at once",
                "notes out of order" if took is None else f"{took * 1000:.0f} ms")
        ok, bad = rig.reloads()
        c.check(ok == 1 and bad == 0, "all_down: the reload is counted as applied", f"{ok}/{bad}")
        a.write(200)
        b.write(200)
        rxs = [ht.Receiver(os.path.join(wd.root, f"rx{i}"), port=p) for i, p in ((1, p1), (2, p2))]
        want = a.lines + b.lines
        tt.wait_for(lambda: all(len(r.accepted()) >= len(want) for r in rxs), 30, step=0.1)
        time.sleep(0.5)
        for i, r in enumerate(rxs, 1):
            check_all_once(c, f"all_down: output {i} once it is up", want,
                           got(r))
        return rt.finish(c, rig, wd)
    finally:
        stop_all(rig, rxs)


def input_changed(c):
    wd = tt.Workdir("reload-input")
    port = tt.free_port()
    a, b = rt.Writer(wd.path("a.log"), "a"), rt.Writer(wd.path("b.log"), "b")
    a.write(3000)
    b.write(100)
    outs = [("collector", http_output(port)), ("local", rt.file_output(wd.out))]
    ib = ("b", [b.path], {"outputs": "[local]"})
    rig = rt.Rig(wd, config(wd, [("a", [a.path], {"outputs": "[collector]"}), ib], outs))
    rx = None
    try:
        tt.wait_for(lambda: len(rt.messages(wd.out)) >= 100, 10)
        time.sleep(1.0)
        before = len(a.lines)
        changed = ("a", [a.path], {"outputs": "[collector]", "fields": "{v: 2}"})
        rig.write(config(wd, [changed, ib], outs))
        (ok, bad), took = rig.reload(timeout=10)
        c.check(ok == 1 and bad == 0 and took < 1.0,
                "input: changing an input while its output is down applies at once",
                f"{ok}/{bad} in {took:.2f} s")
        a.write(500)
        b.write(100)
        moved = tt.wait_for(lambda: len(rt.messages(wd.out)) >= 200, 5)
        c.check(moved, "input: the other input's file output keeps receiving",
                f"{len(rt.messages(wd.out))}/200")
        rx = ht.Receiver(os.path.join(wd.root, "rx"), port=port)
        tt.wait_for(lambda: len(rx.accepted()) >= len(a.lines), 30, step=0.1)
        time.sleep(0.5)
        events = rx.accepted()
        check_all_once(c, "input: the changed input", a.lines, [e["message"] for e in events])
        late = [e for e in events if e["message"] in set(a.lines[before:])]
        c.check(late and all(e.get("fields", {}).get("v") == 2 for e in late),
                "input: lines read after the reload carry the new field",
                str(late[:1]))
        check_all_once(c, "input: the other input", b.lines, rt.messages(wd.out))
        return rt.finish(c, rig, wd)
    finally:
        stop_all(rig, [rx])


def full_spool(c):
    wd = tt.Workdir("reload-full")
    port, dead = tt.free_port(), tt.free_port()
    a = rt.Writer(wd.path("a.log"), "a")
    queue = "{batch: {flush_interval: 100ms, max_events: 200}, spool: {enabled: true, " \
            "max_bytes: 256KiB}}"
    ins = [("a", [a.path], {})]
    for _ in range(10):
        a.write(2000, "-padding-to-make-the-lines-longer-" + "x" * 60)
    rig = rt.Rig(wd, config(wd, ins, [("collector", http_output(dead))], queue))
    rx = None
    try:
        full = tt.wait_for(lambda: (rt.sample(rig.metrics(), "logferry_spool_bytes") or 0)
                           >= 200 * 1024, 20, step=0.1)
        c.check(full, "full: the spool fills up while the collector is down",
                str(rt.sample(rig.metrics(), "logferry_spool_bytes")))
        time.sleep(0.5)
        rx = ht.Receiver(os.path.join(wd.root, "rx"), port=port)
        rig.write(config(wd, ins, [("collector", http_output(port))], queue))
        (ok, bad), took = rig.reload(timeout=10)
        c.check(ok == 1 and bad == 0 and took < 1.0, "full: a reload with the spool full applies "
                "at once (no deadlock)", f"{ok}/{bad} in {took:.2f} s")
        tt.wait_for(lambda: len({e["message"] for e in rx.accepted()}) >= len(a.lines), 60,
                    step=0.2)
        seen, _ = counted(got(rx))
        c.check(seen == set(a.lines), "full: every line arrives",
                f"{len(seen)}/{len(a.lines)}")
        return rt.finish(c, rig, wd)
    finally:
        stop_all(rig, [rx])


def reload_twice(c):
    wd = tt.Workdir("reload-twice")
    a = rt.Writer(wd.path("a.log"), "a")
    rx = ht.Receiver(os.path.join(wd.root, "rx"))
    rx.control(status=503, count=0)
    queue = "{batch: {flush_interval: 100ms}, spool: {enabled: true}}"
    text = config(wd, [("a", [a.path], {})],
                  [("local", rt.file_output(wd.out)), ("slow", http_output(rx.port))], queue)
    a.write(3000)
    rig = rt.Rig(wd, text)
    try:
        tt.wait_for(lambda: len(rt.messages(wd.out)) >= 3000, 20)
        for i in range(3):
            (ok, bad), _ = rig.reload(timeout=10)
            c.check(ok == i + 1 and bad == 0, f"twice: unchanged reload {i + 1} applies",
                    f"{ok}/{bad}")
            time.sleep(0.7)
        check_all_once(c, "twice: the healthy file output across three reloads", a.lines,
                       rt.messages(wd.out))
        rx.control(status=200)
        tt.wait_for(lambda: len(rx.accepted()) >= 3000, 30, step=0.1)
        time.sleep(0.5)
        seen, _ = counted(got(rx))
        c.check(seen == set(a.lines), "twice: the failing output gets every line once it recovers",
                f"{len(seen)}/3000")
        return rt.finish(c, rig, wd)
    finally:
        stop_all(rig, [rx])


def positions(c):
    wd = tt.Workdir("reload-positions")
    a = rt.Writer(wd.path("a.log"), "a")
    rx = ht.Receiver(os.path.join(wd.root, "rx"))
    rx.control(status=503, count=0)
    queue = "{batch: {flush_interval: 100ms, max_events: 500}, spool: {enabled: true}}"
    text = config(wd, [("a", [a.path], {})],
                  [("local", rt.file_output(wd.out)), ("slow", http_output(rx.port))], queue)
    text = text.replace("shutdown_timeout: 10s", "shutdown_timeout: 2s")
    a.write(3000)
    rig = rt.Rig(wd, text)
    try:
        tt.wait_for(lambda: len(rt.messages(wd.out)) >= 3000, 20)
        rc = rig.stop()
        try:
            with open(os.path.join(wd.data, "spool", "cursor")) as f:
                cursor = f.read()
        except FileNotFoundError:
            cursor = "(no cursor file)"
        c.check(re.search(r"^output [0-9a-f]{16} \d+ local$", cursor, re.M) is not None,
                "positions: the cursor file holds the healthy output's own position",
                repr(cursor))
        rig = rt.Rig(wd, text, tag="again")
        time.sleep(2.0)  # the spool is read again from where the failing output is
        check_all_once(c, "positions: the healthy output across a restart (the failing one "
                       "holds the spool back)", a.lines, rt.messages(wd.out))
        rx.control(status=200)
        a.write(100)
        tt.wait_for(lambda: len(rt.messages(wd.out)) >= 3100 and len(rx.accepted()) >= 3100,
                    30, step=0.1)
        check_all_once(c, "positions: the healthy output after the failing one recovers",
                       a.lines, rt.messages(wd.out))
        seen, _ = counted(got(rx))
        c.check(rc == 0 and seen == set(a.lines),
                "positions: the failing output gets every line once it recovers",
                f"rc={rc}, {len(seen)}/3100")
        return rt.finish(c, rig, wd)
    finally:
        stop_all(rig, [rx])


CASES = {"fix_url": fix_url, "all_down": all_down, "input": input_changed, "full": full_spool,
         "twice": reload_twice, "positions": positions}


def main():
    names = sys.argv[1:] or list(CASES)
    rc = 0
    for name in names:
        print(f"-- {name}")
        try:
            CASES[name](tt.Checks())
        except SystemExit as e:  # Checks.finish() exits with the case's outcome
            rc |= 1 if e.code else 0
    return rc


if __name__ == "__main__":
    sys.exit(main())
