#!/usr/bin/env python3
"""Graceful stop of the tailing daemon: SIGTERM and SIGINT exit 0 within shutdown_timeout
with the acknowledged offset saved in <data_dir>/registry; a restart reads only the lines
appended since (no duplicates after a graceful stop); a registry with a flipped byte makes
the agent refuse to start with exit 1 and a message naming the registry."""
import os
import signal
import time

import tailtest as tt

SHUTDOWN_S = 5


def append(path, first, n):
    with open(path, "a") as f:
        for i in range(first, first + n):
            f.write(f"line {i:06d} of the shutdown test\n")


def run_until(c, wd, config, want, sig, tag):
    agent = tt.Agent(config, wd, tag)
    got = tt.wait_events(wd.out, want, 30)
    c.check(got >= want, f"{tag}: {want} events arrive while following", f"{got} seen")
    time.sleep(0.5)  # let an ack and a registry flush or two happen before the signal
    rc = agent.stop(sig, timeout=SHUTDOWN_S + 10)
    name = signal.Signals(sig).name
    c.check(rc == 0, f"{tag}: {name} exits 0", f"rc={rc}, {agent.stop_seconds:.2f} s")
    c.check(agent.stop_seconds is not None and agent.stop_seconds < SHUTDOWN_S,
            f"{tag}: {name} stops within shutdown_timeout {SHUTDOWN_S}s",
            f"{agent.stop_seconds:.2f} s")
    return agent


def main():
    c = tt.Checks()
    wd = tt.Workdir("shutdown")
    log = wd.path("app.log")
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}],
                             shutdown_timeout=f"{SHUTDOWN_S}s")
    append(log, 0, 1000)

    run_until(c, wd, config, 1000, signal.SIGTERM, "first run")
    recs = tt.read_registry(wd.data)
    c.check(recs is not None, "the registry file exists after SIGTERM")
    size = os.path.getsize(log)
    offs = [r["offset"] for r in (recs or []) if r["path"] == log]
    c.check(offs == [size], "the registry holds the acknowledged offset = file size",
            f"registry {offs}, file {size} bytes")

    append(log, 1000, 500)
    run_until(c, wd, config, 1500, signal.SIGINT, "second run")
    time.sleep(0.3)
    events = tt.read_events(wd.out)
    msgs = [e["message"] for e in events]
    expected = [f"line {i:06d} of the shutdown test" for i in range(1500)]
    missing, dups, order = tt.compare_streams(expected, msgs)
    print(f"events: {len(events)} for 1500 lines written; missing {len(missing)}, "
          f"duplicates {dups}, out of order {order}")
    c.check(not missing, "every line arrived", f"{len(missing)} missing")
    c.check(dups == 0, "the restart read only new lines (no duplicate)", f"{dups} duplicates")
    c.check(order == 0, "lines arrived in file order")
    recs = tt.read_registry(wd.data)
    offs = [r["offset"] for r in (recs or []) if r["path"] == log]
    c.check(offs == [os.path.getsize(log)], "SIGINT saved the new offset",
            f"registry {offs}, file {os.path.getsize(log)} bytes")

    # A flipped byte in a record: the checksum no longer matches.
    reg = os.path.join(wd.data, "registry")
    with open(reg, "rb") as f:
        data = bytearray(f.read())
    nl = data.index(b"\n")
    data[nl + 1] ^= 0x01  # first byte of the first record (the input id)
    with open(reg, "wb") as f:
        f.write(data)
    before = tt.count_lines(wd.out)
    append(log, 1500, 10)
    agent = tt.Agent(config, wd, "corrupt")
    try:
        rc = agent.proc.wait(timeout=15)
    except Exception:
        rc = agent.stop(signal.SIGKILL)
    err = agent.stderr()
    last = [ln for ln in err.splitlines() if "registry" in ln.lower()]
    print("stderr about the registry:", last[-1] if last else "(none)")
    c.check(rc == 1, "a corrupt registry makes the agent exit 1", f"rc={rc}")
    c.check(any(reg in ln for ln in last),
            "the message names the registry file", last[-1] if last else err[-200:])
    time.sleep(0.3)
    c.check(tt.count_lines(wd.out) == before, "nothing was read with a corrupt registry",
            f"{tt.count_lines(wd.out) - before} new events")
    wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
