#!/usr/bin/env python3
"""A full disk (ENOSPC, a real 1 MiB tmpfs mounted for the test and filled up):

  data_dir_full   data_dir on the full tmpfs: events keep flowing to the output, the
                  registry write fails with a logged error naming the cause (64 new files
                  at once: more changes than the journal's last page has room for), the
                  last good registry stays whole (byte for byte) and no registry.tmp is
                  left; once space is back the registry catches up, and a restart
                  duplicates nothing
  output_full     the file output's directory on the tmpfs, full but for 64 KiB (so that a
                  batch's write stops halfway): nothing is acknowledged
                  (the registry, on another disk, stays at 0), the log says the batch will
                  be retried; once space is back every line arrives once, in order, and
                  no torn event is left in the output

Exits 77 (skipped) when the machine does not allow mounting a tmpfs."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402


def fill(directory):
    """Fills the file system of directory; returns the filler's path."""
    path = os.path.join(directory, "filler")
    chunk = b"\0" * 65536
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                f.write(chunk)
        except OSError:
            pass
        try:
            while True:
                f.write(b"\0" * 512)
        except OSError:
            pass
    return path


def registry_file(d):
    try:
        with open(os.path.join(d, "registry"), "rb") as f:
            return f.read()
    except OSError:
        return None


def case_data_dir_full(c, wd):
    fs = tt.Tmpfs(os.path.join(wd.root, "datafs"), "1m")
    a = None
    try:
        wd.data = fs.where
        log = wd.path("app.log")
        open(log, "w").close()
        config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}])
        a = tt.PipedAgent(config, wd, "datafull")
        part1 = [f"one {i:04d}" for i in range(100)]
        with open(log, "a") as f:
            f.write("".join(x + "\n" for x in part1))
        size1 = os.path.getsize(log)
        tt.wait_events(wd.out, 100, 30)
        c.check(tt.wait_for(lambda: [r["offset"] for r in tt.read_registry(fs.where) or []]
                            == [size1], 30), "data_dir_full: the registry reaches the end")
        good = registry_file(fs.where)
        filler = fill(fs.where)
        part2 = [f"two {i:04d}" for i in range(100)]
        with open(log, "a") as f:
            f.write("".join(x + "\n" for x in part2))
        size2 = os.path.getsize(log)
        burst = [wd.path(f"burst-{i:02d}.log") for i in range(64)]
        for i, b in enumerate(burst):
            with open(b, "w") as f:
                f.write(f"burst {i:02d}\n")
        got = tt.wait_events(wd.out, 264, 30)
        c.check(got == 264, "data_dir_full: events still flow to the output", f"{got}")
        line = a.wait_log("No space left on device", 30)
        c.check(line is not None and "registry" in line,
                "data_dir_full: the failed registry write is logged with its cause", f"{line!r}")
        c.check(registry_file(fs.where) == good, "data_dir_full: the last good registry is kept whole")
        c.check(not os.path.exists(os.path.join(fs.where, "registry.tmp")),
                "data_dir_full: no registry.tmp is left behind")
        c.check(a.alive(), "data_dir_full: the agent keeps running")
        os.unlink(filler)
        def offsets():
            return {r["path"]: r["offset"] for r in tt.read_registry(fs.where) or []}
        want = {log: size2, **{b: os.path.getsize(b) for b in burst}}
        c.check(tt.wait_for(lambda: offsets() == want, 30),
                "data_dir_full: once space is back the registry catches up",
                f"{offsets().get(log)} want {size2}, {len(offsets())} entries")
        c.check(a.stop() == 0, "data_dir_full: SIGTERM exits 0", f"rc={a.rc}")
        a = tt.PipedAgent(config, wd, "datafull2")
        part3 = [f"three {i:04d}" for i in range(10)]
        with open(log, "a") as f:
            f.write("".join(x + "\n" for x in part3))
        tt.wait_events(wd.out, 274, 30)
        size3 = os.path.getsize(log)
        tt.wait_for(lambda: offsets().get(log) == size3, 30)
        c.check(a.stop() == 0, "data_dir_full: the restart runs and exits 0", f"rc={a.rc}")
        by = tt.messages_by_path(tt.read_events(wd.out))
        msgs = by.get(log, [])
        c.check(msgs == part1 + part2 + part3, "data_dir_full: nothing lost or doubled",
                f"{len(msgs)} events for {len(part1 + part2 + part3)}")
        c.check(all(by.get(b) == [f"burst {i:02d}"] for i, b in enumerate(burst)),
                "data_dir_full: each new file's line arrives once",
                f"{sum(len(by.get(b, [])) for b in burst)} events from 64 files")
    finally:
        if a is not None and a.alive():
            a.kill9()
        fs.umount()


def case_output_full(c, wd):
    fs = tt.Tmpfs(os.path.join(wd.root, "outfs"), "1m")
    a = None
    try:
        wd.out = fs.where
        log = wd.path("app.log")
        open(log, "w").close()
        config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}])
        filler = fill(fs.where)
        # Leave 64 KiB: a batch's write then stops halfway, which must leave no torn event.
        os.truncate(filler, os.path.getsize(filler) - 65536)
        a = tt.PipedAgent(config, wd, "outfull")
        expected = [f"line {i:05d} " + "q" * 80 for i in range(3000)]  # ~280 KB
        with open(log, "a") as f:
            f.write("".join(x + "\n" for x in expected))
        line = a.wait_log("batch will be retried", 30)
        c.check(line is not None and "No space left on device" in line,
                "output_full: the log says the write failed and will be retried", f"{line!r}")
        c.check(a.wait_log("retry 2", 30) is not None, "output_full: and retries")
        recs = tt.read_registry(wd.data) or []
        c.check(all(r["offset"] == 0 for r in recs) and a.alive(),
                "output_full: nothing is acknowledged while the disk is full", f"{recs}")
        os.unlink(filler)
        got = tt.wait_events(wd.out, len(expected), 60)
        size = os.path.getsize(log)
        tt.wait_for(lambda: [r["offset"] for r in tt.read_registry(wd.data) or []] == [size], 30)
        c.check(a.stop() == 0, "output_full: SIGTERM exits 0", f"rc={a.rc}")
        torn = []
        msgs = [e["message"] for e in tt.read_events(wd.out, torn)]
        c.check(not torn, "output_full: no torn event in the output", f"{torn[:1]}")
        c.check(msgs == expected, "output_full: once space is back every line arrives once, "
                "in order", f"{len(msgs)} events of {len(expected)} (seen {got})")
        recs = tt.read_registry(wd.data) or []
        c.check([r["offset"] for r in recs] == [size], "output_full: the registry at the end",
                f"{recs}")
    finally:
        if a is not None and a.alive():
            a.kill9()
        fs.umount()


def main():
    c = tt.Checks()
    tt.skip_without_tmpfs()
    for name, fn in (("data_dir_full", case_data_dir_full), ("output_full", case_output_full)):
        print(f"== {name}")
        wd = tt.Workdir(name)
        try:
            fn(c, wd)
        finally:
            wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
