#!/usr/bin/env python3
"""Broken registries: a truncated (torn) and a bit-flipped registry make the daemon and
--once refuse to start (exit 1) with a message that names the problem and says how to
recover, and leave the file byte for byte as it was. With --registry-reset-broken the bad
file is moved aside to registry.broken-<UTC time> (its bytes kept, the new name logged),
the agent starts with an empty registry and reads the log again from 0 (duplicates, no
loss). A registry that cannot be read for a system reason (here: a directory) is not
"broken content": the flag does not move it and the agent still refuses."""
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402

LINES = 100


def registry_bytes(wd):
    with open(os.path.join(wd.data, "registry"), "rb") as f:
        return f.read()


def put_registry(wd, data):
    with open(os.path.join(wd.data, "registry"), "wb") as f:
        f.write(data)


def refused(c, config, wd, tag, args, want, before):
    a = tt.PipedAgent(config, wd, tag, args=args)
    rc = a.wait(30)
    err = a.stderr()
    c.check(rc == 1, f"{tag}: exits 1", f"rc={rc}")
    c.check(want in err and "move it aside" in err and "--registry-reset-broken" in err,
            f"{tag}: the message says what is wrong and how to recover",
            err.strip()[-400:])
    c.check(registry_bytes(wd) == before, f"{tag}: the registry file is left as it was")
    c.check(not glob.glob(os.path.join(wd.data, "registry.broken-*")),
            f"{tag}: nothing is moved aside without the flag")


def main():
    c = tt.Checks()
    wd = tt.Workdir("regbroken")
    log = wd.path("app.log")
    expected = [f"line {i:04d}" for i in range(LINES)]
    with open(log, "w") as f:
        f.write("\n".join(expected) + "\n")
    size = os.path.getsize(log)
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}])

    a = tt.PipedAgent(config, wd, "first")
    tt.wait_events(wd.out, LINES, 60)
    tt.wait_for(lambda: [r["offset"] for r in tt.read_registry(wd.data) or []] == [size], 30)
    c.check(a.stop() == 0, "first run: SIGTERM exits 0")
    good = registry_bytes(wd)
    recs = tt.read_registry(wd.data) or []
    c.check([r["offset"] for r in recs] == [size], "first run: the registry holds the end",
            f"{recs}")

    # A torn write: the file ends inside a record.
    torn = good[:len(good) - 20]
    put_registry(wd, torn)
    refused(c, config, wd, "truncated-daemon", [], "truncated", torn)

    # One flipped bit in the offset field of the record.
    line2 = good.index(b"\n") + 1
    fields = good[line2:].split(b"\t")
    at = line2 + sum(len(x) + 1 for x in fields[:5])  # first byte of the offset field
    flipped = bytearray(good)
    flipped[at] ^= 0x01
    flipped = bytes(flipped)
    put_registry(wd, flipped)
    refused(c, config, wd, "bitflip-daemon", [], "checksum mismatch", flipped)
    refused(c, config, wd, "bitflip-once", ["--once"], "checksum mismatch", flipped)

    # --registry-reset-broken: moved aside, started empty, the log read again from 0.
    a = tt.PipedAgent(config, wd, "reset-daemon", args=["--registry-reset-broken"])
    line = a.wait_log("moved aside to", 30)
    aside = glob.glob(os.path.join(wd.data, "registry.broken-*"))
    c.check(line is not None and len(aside) == 1 and aside[0] in line,
            "reset: the log names the file the broken registry was moved to",
            f"{line!r} {aside}")
    if aside:
        with open(aside[0], "rb") as f:
            c.check(f.read() == flipped, "reset: the broken file keeps its bytes")
        c.check(os.path.basename(aside[0]).startswith("registry.broken-2") and
                aside[0].endswith("Z"), "reset: named registry.broken-<UTC time>", aside[0])
    got = tt.wait_events(wd.out, 2 * LINES, 60)
    c.check(got == 2 * LINES, "reset: the file is read again from 0 (duplicates, no loss)",
            f"{got} events for 2x{LINES}")
    tt.wait_for(lambda: [r["offset"] for r in tt.read_registry(wd.data) or []] == [size], 30)
    c.check(a.stop() == 0, "reset: the agent runs and SIGTERM exits 0", f"rc={a.rc}")
    recs = tt.read_registry(wd.data) or []
    c.check([r["offset"] for r in recs] == [size], "reset: a new valid registry at the end",
            f"{recs}")
    msgs = [e["message"] for e in tt.read_events(wd.out)]
    c.check(msgs == expected + expected, "reset: both passes whole and in order",
            f"{len(msgs)} events")

    # --once with the flag, on a truncated file: moved aside (a second name), exit 0.
    put_registry(wd, torn)
    a = tt.PipedAgent(config, wd, "reset-once", args=["--once", "--registry-reset-broken"])
    rc = a.wait(60)
    aside = sorted(glob.glob(os.path.join(wd.data, "registry.broken-*")))
    c.check(rc == 0 and len(aside) == 2, "reset --once: exit 0, a second file moved aside",
            f"rc={rc} {aside} {a.stderr()[-300:]}")
    c.check(tt.count_lines(wd.out) == 3 * LINES, "reset --once: read again from 0",
            f"{tt.count_lines(wd.out)} events")

    # A registry that cannot be read (a directory): not broken content; never moved.
    os.unlink(os.path.join(wd.data, "registry"))
    os.mkdir(os.path.join(wd.data, "registry"))
    a = tt.PipedAgent(config, wd, "unreadable", args=["--registry-reset-broken"])
    rc = a.wait(30)
    c.check(rc == 1 and os.path.isdir(os.path.join(wd.data, "registry")) and
            len(glob.glob(os.path.join(wd.data, "registry.broken-*"))) == 2,
            "an unreadable registry is refused and not moved, even with the flag",
            f"rc={rc} {a.stderr().strip()[-200:]}")
    wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
