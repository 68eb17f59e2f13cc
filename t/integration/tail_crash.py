#!/usr/bin/env python3
"""Crashes: 500,000 numbered lines are written to 4 files at about 50,000 lines/s while the
agent is SIGKILLed at 10 random moments and restarted at once with the same data_dir; at the
end it is stopped gracefully. Asserted: zero lost lines, order within each file by first
arrival, no torn event in the output, exit 0 at the end. Printed: duplicates (allowed by
at-least-once: events since the last registry flush are read again)."""
import os
import random
import threading
import time

import tailtest as tt

FILES = 4
TOTAL = 2000000 if tt.SOAK else 500000
RATE = 50000
KILLS = 30 if tt.SOAK else 10


def writer(paths, done, rng):
    handles = [open(p, "ab", buffering=0) for p in paths]
    chunk = RATE // 100  # every 10 ms
    start = time.monotonic()
    n = 0
    while n < TOTAL:
        for k, f in enumerate(handles):
            lines = []
            for i in range(n + k, min(n + chunk, TOTAL), FILES):
                lines.append(f"f{k} {i:08d} {'z' * (i % 50)}\n")
            f.write("".join(lines).encode())
        n = min(n + chunk, TOTAL)
        ahead = start + n / RATE - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
    for f in handles:
        f.close()
    done.set()


def main():
    c = tt.Checks()
    rng = random.Random(int(os.environ.get("LF_SEED", "7")))
    wd = tt.Workdir("crash")
    paths = [wd.path(f"f{k}.log") for k in range(FILES)]
    for p in paths:
        open(p, "w").close()
    config = tt.write_config(wd, [{"id": "crash", "paths": [wd.path("*.log")]}])
    span = TOTAL / RATE + 4  # the writing, and a little after it
    moments = sorted(rng.uniform(0.3, span) for _ in range(KILLS))
    agent = tt.Agent(config, wd, "crash")
    done = threading.Event()
    t0 = time.monotonic()
    th = threading.Thread(target=writer, args=(paths, done, rng))
    th.start()
    rcs = []
    for m in moments:
        delay = t0 + m - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        rcs.append(agent.kill9())
        agent = tt.Agent(config, wd, "crash")
    print("SIGKILL at s: " + " ".join(f"{m:.2f}" for m in moments))
    th.join()
    print(f"wrote {TOTAL} lines to {FILES} files in {time.monotonic() - t0:.1f} s")
    c.check(all(rc == -9 for rc in rcs), "each kill found the agent running",
            f"exit statuses {sorted(set(rcs))}")
    got = tt.wait_events(wd.out, TOTAL, 120)
    # Everything acknowledged: each file's registry offset at its size.
    for p in paths:
        tt.wait_registry_offset(wd.data, p, os.path.getsize(p), 30)
    rc = agent.stop()
    c.check(rc == 0, "the final SIGTERM exits 0", f"rc={rc}")
    torn = []
    events = tt.read_events(wd.out, torn)
    c.check(not torn, "no torn event in the output", f"{len(torn)}" +
            (f": {torn[0]}" if torn else ""))
    lost = 0
    dups = 0
    order = 0
    by = tt.messages_by_path(events)
    for k, p in enumerate(paths):
        expected = [f"f{k} {i:08d} {'z' * (i % 50)}" for i in range(k, TOTAL, FILES)]
        missing, d, o = tt.compare_streams(expected, by.get(p, []))
        lost += len(missing)
        dups += d
        order += o
        if missing:
            print(f"{p}: {len(missing)} lost, first {missing[0]!r}")
    print(f"{len(events)} events for {TOTAL} lines (seen {got} before the stop): lost {lost}, "
          f"duplicates {dups} ({100.0 * dups / TOTAL:.2f}%), out of order {order}")
    c.check(lost == 0, f"zero lost lines after {KILLS} SIGKILLs", f"{lost} lost")
    c.check(order == 0, "first arrivals in file order", f"{order} out of order")
    wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
