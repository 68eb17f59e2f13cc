#!/usr/bin/env python3
"""A full disk under data_dir with a journald input's cursor in the registry (a real 1 MiB
tmpfs, filled up; tail_enospc.py does the same for files alone):

  the daemon reads a journal and a file input into a file output elsewhere; the registry
  holds the journal's cursor; data_dir fills up, and 64 new files (more changes than the
  registry's last page has room for) make its write fail: new journal entries still flow
  to the output, the failure is logged, the last good registry stays whole byte for byte
  (the journal's record in it included); once space is back the registry catches up (the
  journal's offset and cursor at its last entry), and a restart reads no entry again and
  loses none.

Exits 77 (skipped) when the machine does not allow mounting a tmpfs."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import journaltest as jt  # noqa: E402
import tail_enospc as te  # noqa: E402
import tailtest as tt  # noqa: E402


def config(wd, jdir):
    text = jt.config_text(wd.data, [{"id": "journal", "directory": jdir}],
                          jt.file_output(wd.out))
    return text.replace("inputs:\n", "inputs:\n  - id: files\n    paths: [" +
                        tt.yaml_str(wd.path("*.log")) + "]\n", 1)


def journal_offsets(data):
    return [r["offset"] for r in jt.journal_registry(data, "journal")]


def main():
    c = tt.Checks()
    tt.skip_without_tmpfs()
    problem = jt.missing_tools()
    if problem:
        print(f"FAIL: {problem}")
        sys.exit(1)
    wd = tt.Workdir("jenospc")
    fs = tt.Tmpfs(os.path.join(wd.root, "datafs"), "1m")
    a = None
    try:
        wd.data = fs.where
        jdir = os.path.join(wd.root, "journal")
        j = jt.Journal(jdir)
        boot = jt.Boot("7a" * 16, 1_701_000_000_000_000)
        first = j.append(jt.numbered(boot, "one", 0, 100, _SYSTEMD_UNIT="a.service"))
        cfg = jt.write_config(os.path.join(wd.root, "c.yml"), config(wd, jdir))
        a = tt.PipedAgent(cfg, wd, "run1")
        tt.wait_events(wd.out, 100, 30)
        c.check(tt.wait_for(lambda: journal_offsets(fs.where) == [100], 30),
                "the registry holds the journal at its 100th entry", str(journal_offsets(fs.where)))
        good = te.registry_file(fs.where)
        filler = te.fill(fs.where)
        second = j.append(jt.numbered(boot, "two", 100, 100, _SYSTEMD_UNIT="a.service"))
        burst = [wd.path(f"burst-{i:02d}.log") for i in range(64)]
        for i, b in enumerate(burst):
            with open(b, "w") as f:
                f.write(f"burst {i:02d}\n")
        got = tt.wait_events(wd.out, 264, 30)
        c.check(got == 264, "new journal entries (and the files) still flow to the output",
                f"{got} of 264")
        line = a.wait_log("No space left on device", 30)
        c.check(line is not None and "error tail: registry: write " in line and
                "registry: registry" not in line,
                "the failed registry write is logged with its cause, once named", f"{line!r}")
        c.check(te.registry_file(fs.where) == good,
                "the last good registry, the journal's record in it, is kept whole")
        c.check(a.alive(), "the agent keeps running")
        os.unlink(filler)
        c.check(tt.wait_for(lambda: journal_offsets(fs.where) == [200], 30),
                "once space is back the journal's record catches up to its 200th entry",
                str(journal_offsets(fs.where)))
        rec = jt.journal_registry(fs.where, "journal")
        last = second[-1]
        want = f"b={last.boot_id};m={last.monotonic:x};t={last.realtime:x}"
        c.check(rec and rec[0]["path"] == want, "with the cursor of the last entry",
                f"{rec} want {want}")
        c.check(a.stop() == 0, "SIGTERM exits 0", f"rc={a.rc}")
        a = tt.PipedAgent(cfg, wd, "run2")
        third = j.append(jt.numbered(boot, "three", 200, 10, _SYSTEMD_UNIT="a.service"))
        tt.wait_events(wd.out, 274, 30)
        tt.wait_for(lambda: journal_offsets(fs.where) == [210], 30)
        c.check(a.stop() == 0, "the restart runs and exits 0", f"rc={a.rc}")
        events = tt.read_events(wd.out)
        msgs = [e["message"] for e in events if e["input"]["id"] == "journal"]
        want_msgs = [x.first("MESSAGE").decode() for x in first + second + third]
        c.check(msgs == want_msgs, "the journal's entries: nothing lost or read twice",
                f"{len(msgs)} events for {len(want_msgs)}")
        c.check(sum(1 for e in events if e["input"]["id"] == "files") == 64,
                "each new file's line arrives once")
    finally:
        if a is not None and a.alive():
            a.kill9()
        fs.umount()
        if c.failed == 0:
            wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
