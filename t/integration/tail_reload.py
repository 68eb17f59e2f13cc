#!/usr/bin/env python3
"""SIGHUP reloads during a steady run with unchanged inputs (SPEC.md "Reload"): 200,000 lines
written steadily across four files (one input with a multiline parser, whose pending events
must survive each reload) while the config is reloaded 50 times, the same file or a touched
one: nothing lost, nothing duplicated, the registry at every file's end; under systemd each
reload says RELOADING=1 with MONOTONIC_USEC, then READY=1. With LF_SOAK=1: 2,000,000 lines
and 200 reloads."""
import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reloadtest as rt  # noqa: E402
import tailtest as tt  # noqa: E402

LINES = 2000000 if tt.SOAK else 200000
RELOADS = 200 if tt.SOAK else 50
FILES = 4


def main():
    c = tt.Checks()
    wd = tt.Workdir("reload")
    plain = [wd.path(f"p{i}.log") for i in range(FILES - 1)]
    multi = wd.path("m.log")
    inputs = [("plain", [wd.path("p*.log")], {}),
              ("multi", [multi], {"parsers": "\n      - multiline: {pattern: '^ ', "
                                                "match: after, timeout: 2s}"})]
    text = rt.config_text(wd, inputs, [("local", rt.file_output(wd.out))])
    rig = rt.Rig(wd, text, notify=True)
    c.check(rig.notes[0] == "READY=1", "READY=1 at start", repr(rig.notes[0]))
    writers = [rt.Writer(p, f"p{i}") for i, p in enumerate(plain)]
    mw = rt.Writer(multi, "m")
    expected_multi = []
    per_round = LINES // 400
    stop = threading.Event()

    def write():
        # 400 rounds spread over the run; the multiline file gets head + continuation pairs.
        for r in range(400):
            if stop.is_set():
                break
            for w in writers:
                w.write(per_round // FILES)
            with open(multi, "a") as f:
                for _ in range(per_round // FILES // 2):
                    head = f"m-{mw.n:07d}"
                    mw.n += 1
                    f.write(f"{head}\n continued {head}\n")
                    expected_multi.append(f"{head}\n continued {head}")
            time.sleep(0.03)
    t = threading.Thread(target=write)
    t.start()
    ok_notes = 0
    bad_notes = []
    times = []
    for i in range(RELOADS):
        if i % 2:
            rig.write(text + f"# touched {i}\n")  # a new file, the same inputs
        before = rig.reloads()
        t0 = time.monotonic()
        os.kill(rig.agent.pid, 1)
        first = rig.recv()
        second = rig.recv()
        times.append(time.monotonic() - t0)
        m = re.fullmatch(r"RELOADING=1\nMONOTONIC_USEC=(\d+)", first)
        if m and second == "READY=1" and abs(int(m.group(1)) / 1e6 - time.monotonic()) < 60:
            ok_notes += 1
        else:
            bad_notes.append((first, second))
        tt.wait_for(lambda: rig.reloads()[0] > before[0], 10, step=0.01)
        time.sleep(0.1)
    t.join()
    ok, bad = rig.reloads()
    c.check(ok == RELOADS and bad == 0, f"{RELOADS} reloads counted as ok",
            f"ok={ok} error={bad}")
    c.check(ok_notes == RELOADS, "each reload: RELOADING=1 with MONOTONIC_USEC, then READY=1",
            f"{ok_notes} of {RELOADS}; {bad_notes[:2]}")
    times.sort()
    print(f"reload (SIGHUP to READY=1): median {times[len(times) // 2] * 1000:.1f} ms, "
          f"max {times[-1] * 1000:.1f} ms")
    plain_lines = [x for w in writers for x in w.lines]
    want = len(plain_lines) + len(expected_multi)
    got = tt.wait_events(wd.out, want, 120)
    time.sleep(1.0)  # the registry flush after the last answer
    msgs = rt.messages(wd.out)
    missing, dups, _ = tt.compare_streams(plain_lines + expected_multi, msgs)
    c.check(not missing and dups == 0 and len(msgs) == want,
            f"{want} events across the reloads: 0 lost, 0 duplicated",
            f"got {got}, missing {len(missing)} (first {missing[:2]}), dups {dups}")
    regs = {r["path"]: r["offset"] for r in (tt.read_registry(wd.data) or [])}
    ends = {p: os.path.getsize(p) for p in plain + [multi]}
    c.check(all(regs.get(p) == n for p, n in ends.items()),
            "the registry is at every file's end", f"registry {regs}, sizes {ends}")
    body = rig.metrics()
    read = sum(rt.sample(body, "logferry_bytes_read_total", f'{{input="{i}"}}') or 0
               for i in ("plain", "multi"))
    c.check(read == sum(ends.values()),
            "unchanged inputs kept their files and held events: no byte read twice",
            f"{read} bytes read, files hold {sum(ends.values())}")
    return rt.finish(c, rig, wd)


if __name__ == "__main__":
    sys.exit(main())
