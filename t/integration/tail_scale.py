#!/usr/bin/env python3
"""Scale: 5,000 files (LF_SOAK: 20,000) in a tree of 100 leaf directories, 3 levels deep, found
through a `**` glob, one line each. Asserted: every line arrives exactly once; exit 0 on
SIGTERM. Reported, not asserted: time to read them all, peak RSS (VmHWM) and CPU used over
10 s of idling afterwards (utime + stime from /proc/PID/stat)."""
import os
import time

import tailtest as tt

N = 20000 if tt.SOAK else 5000
IDLE_S = 10


def main():
    c = tt.Checks()
    wd = tt.Workdir("scale")
    expected = {}
    for i in range(N):
        d = wd.path(f"d{i % 5}", f"e{(i // 5) % 10}", f"f{(i // 50) % 2}")
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, f"file{i:05d}.log")
        with open(p, "w") as f:
            f.write(f"the only line of file {i:05d}\n")
        expected[p] = f"the only line of file {i:05d}"
    # The default scan_interval (10 s): idle cost is what an operator would see. The first
    # scan, at start-up, finds every file.
    config = tt.write_config(wd, [{"id": "scale", "paths": [wd.path("**", "*.log")],
                                   "scan_interval": "10s", "close_inactive": "5s"}])
    t0 = time.monotonic()
    agent = tt.Agent(config, wd, "scale")
    got = tt.wait_events(wd.out, N, 60)
    read_s = time.monotonic() - t0
    c.check(got >= N, f"all {N} files are found and read", f"{got} events in {read_s:.1f} s")
    time.sleep(1.0)
    ticks = os.sysconf("SC_CLK_TCK")
    cpu0 = agent.cpu_ticks()
    time.sleep(IDLE_S)
    cpu1 = agent.cpu_ticks()
    rss = agent.rss_peak_kib()
    idle_cpu = (cpu1 - cpu0) / ticks
    c.check(agent.alive(), "the agent is still running after idling")
    rc = agent.stop()
    c.check(rc == 0, "SIGTERM exits 0", f"rc={rc}")
    events = tt.read_events(wd.out)
    by = tt.messages_by_path(events)
    wrong = [p for p, m in expected.items() if by.get(p) != [m]]
    c.check(not wrong, "each file's line arrived exactly once",
            f"{len(wrong)} wrong" + (f", e.g. {wrong[0]}: {by.get(wrong[0])}" if wrong else ""))
    foreign = [p for p in by if p not in expected]
    c.check(not foreign, "no event from elsewhere", f"{len(foreign)}")
    print()
    print(f"| files | dirs | read all (s) | peak RSS (MiB) | idle CPU over {IDLE_S} s (s) |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    print(f"| {N} | 100 | {read_s:.1f} | {rss / 1024 if rss else 0:.1f} | {idle_cpu:.2f} |")
    print()
    wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
