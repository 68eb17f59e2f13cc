#!/usr/bin/env python3
"""Soak (make check-soak only; not in the default make check): a mixed run of 10 minutes
(LF_SOAK_SECONDS overrides it). 10 files take about 2,000 lines/s in all; each is rotated by
rename every 0.5-1.5 s (a few lines more through the old descriptor; the glob matches the
rotated names; rotated copies beyond the 40th deleted), and every 60 s the file output fails for 10 s (the agent's
RLIMIT_FSIZE lowered with prlimit); a SIGHUP reload (the same file: every input unchanged)
every 20 s, outages included. Asserted: RSS at the end (after the last outage has
drained) within 5% of RSS after the warm-up (the first outage included), every line
delivered, SIGTERM exits 0. Printed: both RSS figures and the duplicates. ASan's
quarantine is turned down in the agent's environment so that RSS measures the agent."""
import os
import random
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402

SECONDS = int(os.environ.get("LF_SOAK_SECONDS", "600"))
FILES = 10
RATE = 2000
OUTAGE_EVERY = 60
OUTAGE_FOR = 10
# RSS climbs in steps while the first two outages fill the queue and drain (sampled every
# 20 s in a 240 s run: 11.3 MB, 15.2 MB after the first outage, 18.6 MB after the second,
# then flat through the next two), so the warm-up ends after the second outage's catch-up.
WARMUP = min(150, SECONDS // 3)
KEEP = 40  # rotated generations kept (about 40 s): longer than an outage and its catch-up


def writer(wd, stop, written, rng):
    paths = [wd.path(f"s{k:02d}.log") for k in range(FILES)]
    handles = [open(p, "a", buffering=1) for p in paths]
    gen = [0] * FILES
    next_rot = [time.monotonic() + rng.uniform(0.5, 1.5) for _ in range(FILES)]
    n = [0] * FILES
    t0 = time.monotonic()
    sent = 0
    while not stop.is_set():
        now = time.monotonic()
        for k in range(FILES):
            chunk = "".join(f"s{k:02d} {n[k] + i:09d} {'m' * ((n[k] + i) % 40)}\n"
                            for i in range(RATE // FILES // 50))
            handles[k].write(chunk)
            n[k] += RATE // FILES // 50
            if now >= next_rot[k]:
                gen[k] += 1
                os.rename(paths[k], f"{paths[k]}.{gen[k]}")
                extra = "".join(f"s{k:02d} {n[k] + i:09d} tail\n" for i in range(3))
                handles[k].write(extra)
                n[k] += 3
                handles[k].close()
                handles[k] = open(paths[k], "a", buffering=1)
                old = f"{paths[k]}.{gen[k] - KEEP}"
                if gen[k] > KEEP and os.path.exists(old):
                    os.unlink(old)
                next_rot[k] = now + rng.uniform(0.5, 1.5)
        sent += 1
        ahead = t0 + sent / 50 - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
    for h in handles:
        h.close()
    written.extend(n)


def main():
    c = tt.Checks()
    rng = random.Random(int(os.environ.get("LF_SEED", "5")))
    wd = tt.Workdir("soakmixed")
    # The rotated names match too: a file created and rotated away while the agent waits
    # for the output is still found under its new name.
    config = tt.write_config(wd, [{"id": "soak", "paths": [wd.path("*.log*")]}])
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=1").lstrip(":")
    a = tt.PipedAgent(config, wd, "soak", env=env)
    stop = threading.Event()
    written = []
    th = threading.Thread(target=writer, args=(wd, stop, written, rng))
    t0 = time.monotonic()
    th.start()
    rss_warm = None
    outages = 0
    hups = 0
    next_outage = t0 + 20
    next_hup = t0 + 10
    while time.monotonic() - t0 < SECONDS:
        now = time.monotonic()
        if now >= next_outage and now - t0 < SECONDS - 2 * OUTAGE_FOR:
            tt.set_rlimit_fsize(a.pid, 1)
            time.sleep(OUTAGE_FOR)
            tt.set_rlimit_fsize(a.pid, None)
            outages += 1
            next_outage = time.monotonic() + OUTAGE_EVERY - OUTAGE_FOR
        if time.monotonic() >= next_hup:
            os.kill(a.pid, signal.SIGHUP)  # folded with the next if an outage holds it up
            hups += 1
            next_hup = time.monotonic() + 20
        if rss_warm is None and time.monotonic() - t0 >= WARMUP:
            rss_warm = tt.proc_status_kib(a.pid, "VmRSS")
        time.sleep(0.5)
        if not a.alive():
            break
    stop.set()
    th.join()
    total = sum(written)
    got = tt.wait_events(wd.out, total, 180)
    time.sleep(2)
    rss_end = tt.proc_status_kib(a.pid, "VmRSS")
    print(f"{SECONDS} s, {outages} output outages, {total} lines written, {got} events seen; "
          f"RSS after warm-up {rss_warm} KiB, at the end {rss_end} KiB")
    c.check(a.alive(), "the agent ran the whole time")
    applied = a.log_count("applied in")
    c.check(hups > 0 and 0 < applied <= hups, "SIGHUP reloads were applied along the way",
            f"{hups} SIGHUPs, {applied} reloads applied")
    c.check(rss_warm and rss_end and rss_end <= rss_warm * 1.05,
            "RSS at the end within 5% of RSS after warm-up", f"{rss_warm} -> {rss_end} KiB")
    c.check(a.stop(timeout=60) == 0, "SIGTERM exits 0", f"rc={a.rc}")
    msgs = [e["message"] for e in tt.read_events(wd.out)]
    lost = dups = 0
    for k in range(FILES):
        mine = [m for m in msgs if m.startswith(f"s{k:02d} ")]
        seen = set(mine)
        dups += len(mine) - len(seen)
        for i in range(written[k]):
            base = f"s{k:02d} {i:09d} "
            if base + "m" * (i % 40) not in seen and base + "tail" not in seen:
                lost += 1
    print(f"lost {lost}, duplicates {dups}")
    c.check(lost == 0, "every line delivered", f"{lost} lost of {total}")
    wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
