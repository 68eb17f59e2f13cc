#!/usr/bin/env python3
"""SIGHUP reloads that change things (SPEC.md "Reload"), on one running daemon, one after
the other while lines keep being written:
- an added input: its files' lines arrive within 2 s of the SIGHUP;
- a removed input: its earlier lines all arrived, and none appended after the reload;
- a changed input (exclude_lines added): it continues where it was with the new
  setting, no line lost or doubled;
- a changed output (the file output's path): events after the reload land in the new
  directory, nothing lost or doubled across the switch;
- broken files (a YAML syntax error, an unknown output name): the old config keeps running,
  each problem is logged as FILE:LINE:COL, the error count grows, /healthz stays 200;
- a storm of 10 SIGHUPs in one second: the agent survives, counts what it did, lines flow."""
import os
import re
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reloadtest as rt  # noqa: E402
import tailtest as tt  # noqa: E402


class Steady:
    """Writes a few lines to a file every 20 ms from a thread until stopped."""

    def __init__(self, writer, tag=""):
        self.w = writer
        self.tag = tag
        self.halt = threading.Event()
        self.t = threading.Thread(target=self.run)
        self.t.start()

    def run(self):
        while not self.halt.is_set():
            self.w.write(5, self.tag)
            time.sleep(0.02)

    def stop(self):
        self.halt.set()
        self.t.join()


def main():
    c = tt.Checks()
    wd = tt.Workdir("reload-change")
    out2 = os.path.join(wd.root, "out2")
    a, b, n = wd.path("a.log"), wd.path("b.log"), wd.path("new.log")
    wa, wb, wn = rt.Writer(a, "a"), rt.Writer(b, "b"), rt.Writer(n, "n")
    wa.write(100)
    wb.write(100)
    wn.write(100)
    ia = ("a", [a], {})
    ib = ("b", [b], {})
    inew = ("new", [n], {})
    local = ("local", rt.file_output(wd.out))
    cfg1 = rt.config_text(wd, [ia, ib], [local])
    rig = rt.Rig(wd, cfg1)
    tt.wait_events(wd.out, 200, 20)
    steady = Steady(wa)

    # An added input.
    rig.write(rt.config_text(wd, [ia, ib, inew], [local]))
    t0 = time.monotonic()
    os.kill(rig.agent.pid, signal.SIGHUP)
    arrived = tt.wait_for(lambda: sum(m.startswith("n-") for m in rt.messages(wd.out)) >= 100,
                          10, step=0.02)
    took = time.monotonic() - t0
    c.check(arrived and took < 2.0, "an added input's lines arrive within 2 s of the SIGHUP",
            f"{took:.2f} s")
    tt.wait_for(lambda: rig.reloads()[0] >= 1, 10)

    # A removed input.
    wb.write(50)
    tt.wait_for(lambda: set(wb.lines) <= set(rt.messages(wd.out)), 10)
    rig.write(rt.config_text(wd, [ia, inew], [local]))
    (ok, bad), _ = rig.reload()
    c.check(ok == 2 and bad == 0, "removing an input is a reload that succeeds", f"{ok}/{bad}")
    late = wb.write(50, "late")
    mark = len(wa.lines)
    tt.wait_for(lambda: set(wa.lines[:mark]) <= set(rt.messages(wd.out)), 10)
    time.sleep(1.5)  # a scan and several batch intervals
    msgs = set(rt.messages(wd.out))
    c.check(set(wb.lines) - set(late) <= msgs,
            "a removed input's lines from before the reload all arrived")
    c.check(not (set(late) & msgs), "none of its lines appended after the reload arrive",
            f"{len(set(late) & msgs)} arrived")

    # A changed input: exclude_lines added while lines keep coming.
    ia2 = ("a", [a], {"parsers": "\n      - exclude_lines: ['DROP']"})
    drop_writer = rt.Writer(a, "a")
    drop_writer.prefix = "aDROP"
    steady2 = Steady(drop_writer)
    time.sleep(0.5)
    rig.write(rt.config_text(wd, [ia2, inew], [local]))
    (ok, bad), _ = rig.reload()
    c.check(ok == 3 and bad == 0, "changing an input is a reload that succeeds", f"{ok}/{bad}")
    after_drop = len(drop_writer.lines)
    time.sleep(1.0)
    steady2.stop()
    snap = list(wa.lines)
    tt.wait_for(lambda: set(snap) <= set(rt.messages(wd.out)), 10)
    time.sleep(0.5)
    msgs = rt.messages(wd.out)
    missing, dups, _ = tt.compare_streams(snap, msgs)
    c.check(not missing and dups == 0,
            "the changed input continues from the registry: none lost, none doubled",
            f"missing {len(missing)} {missing[:2]}, dups {dups}")
    late_drops = set(drop_writer.lines[after_drop:])
    c.check(late_drops and not (late_drops & set(msgs)),
            "and with the new setting (lines written after it are excluded)",
            f"{len(late_drops & set(msgs))} of {len(late_drops)} arrived")
    d_dups = len([m for m in msgs if "DROP" in m]) - len({m for m in msgs if "DROP" in m})
    c.check(d_dups == 0, "no excluded-later line doubled either", str(d_dups))

    # A changed output: the file output's path.
    rig.write(rt.config_text(wd, [ia2, inew], [("local", rt.file_output(out2))]))
    (ok, bad), _ = rig.reload()
    c.check(ok == 4 and bad == 0, "changing an output is a reload that succeeds", f"{ok}/{bad}")
    after = len(wa.lines)
    time.sleep(1.0)
    steady.stop()
    tt.wait_for(lambda: set(wa.lines) <= set(rt.messages(wd.out) + rt.messages(out2)), 10)
    time.sleep(0.5)
    m1, m2 = rt.messages(wd.out), rt.messages(out2)
    missing, dups, _ = tt.compare_streams(wa.lines, m1 + m2)
    c.check(not missing and dups == 0, "across the output switch: none lost, none doubled",
            f"missing {len(missing)}, dups {dups}")
    in_old = set(wa.lines[after:]) & set(m1)
    c.check(len(wa.lines) > after and not in_old and set(wa.lines[after:]) <= set(m2),
            "events after the reload land in the new directory",
            f"{len(in_old)} of {len(wa.lines) - after} in the old one")

    # Broken files: the old config keeps running.
    good = rt.config_text(wd, [ia2, inew], [("local", rt.file_output(out2))])
    broken = {
        "a YAML syntax error": good.replace("inputs:\n", "inputs:\n  - id: [oops\n", 1),
        "an unknown output name": good.replace("    close_inactive: 5s\n",
                                               "    close_inactive: 5s\n    outputs: [nope]\n",
                                               1),
    }
    errors = 0
    broken["the same YAML syntax error again"] = broken["a YAML syntax error"]
    for what, text in broken.items():
        rig.write(text)
        log_before = rig.agent.stderr()
        (ok, bad), _ = rig.reload()
        errors += 1
        c.check(ok == 4 and bad == errors, f"{what}: the reload counts as an error",
                f"ok={ok} error={bad}")
        new_log = rig.agent.stderr()[len(log_before):]
        where = r"reload \d+: (" + re.escape(rig.config) + r":\d+:\d+: .*)"
        logged = re.findall(where, new_log)
        c.check(logged, f"{what}: logged as FILE:LINE:COL", new_log.strip()[:300])
        tc = subprocess.run([tt.LOGFERRY, "-c", rig.config, "--test-config"],
                            capture_output=True, text=True)
        c.check(tc.returncode == 2 and tc.stderr.splitlines() == logged,
                f"{what}: --test-config reports the same problems",
                f"rc={tc.returncode} {tc.stderr!r} vs {logged!r}")
        c.check(rig.healthz() == 200, f"{what}: /healthz stays 200")
        fresh = wn.write(20)
        c.check(tt.wait_for(lambda: set(fresh) <= set(rt.messages(out2)), 10),
                f"{what}: lines keep arriving under the old config")

    # A storm of SIGHUPs.
    rig.write(good)
    ok0, bad0 = rig.reloads()
    for i in range(10):
        os.kill(rig.agent.pid, signal.SIGHUP)
        time.sleep(0 if i < 5 else 0.15)  # five at once, then five spread
    tt.wait_for(lambda: rig.reloads()[0] > ok0, 10)
    time.sleep(1.0)
    ok, bad = rig.reloads()
    c.check(rig.agent.alive(), "a storm of 10 SIGHUPs in one second: the agent survives")
    c.check(1 <= ok - ok0 <= 10 and bad == bad0,
            "the storm's reloads are counted (coalesced, none failed)", f"{ok - ok0} ok")
    fresh = wn.write(20)
    c.check(tt.wait_for(lambda: set(fresh) <= set(rt.messages(out2)), 10),
            "lines keep flowing after the storm")
    return rt.finish(c, rig, wd)


if __name__ == "__main__":
    sys.exit(main())
