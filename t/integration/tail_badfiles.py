#!/usr/bin/env python3
"""Files the daemon cannot or should not read, all matching its glob: a permission-denied
file (the agent runs as uid/gid 65534 via setpriv when the test runs as root), a file
replaced by a directory, a FIFO, and a 2 GiB sparse file without a newline read with
max_line_bytes 1MiB. Expected: a warning naming each path, no crash, the good file still
read in full, at most one (truncated) event from the sparse file, peak RSS under 64 MiB,
and exit 0 on SIGTERM."""
import os
import time

import tailtest as tt

RSS_LIMIT_KIB = 64 * 1024
SPARSE = 2 << 30
NOBODY = 65534


def main():
    c = tt.Checks()
    wd = tt.Workdir("badfiles")
    prefix = None
    if os.geteuid() == 0:
        prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        os.chmod(wd.root, 0o755)
        for d in (wd.data, wd.out):
            os.makedirs(d)
            os.chown(d, NOBODY, NOBODY)
        print("running the agent as uid 65534 (setpriv)")
    good = wd.path("good.log")
    secret = wd.path("secret.log")
    fifo = wd.path("pipe.log")
    dirlike = wd.path("becomes-dir.log")
    sparse = wd.path("sparse.log")
    good_lines = [f"good line {i:04d}" for i in range(100)]
    with open(good, "w") as f:
        f.write("".join(x + "\n" for x in good_lines[:50]))
    with open(secret, "w") as f:
        f.write("a secret line\n")
    os.chmod(secret, 0o000 if os.geteuid() != 0 else 0o600)
    os.mkfifo(fifo)
    dir_lines = [f"before it became a directory {i}" for i in range(10)]
    with open(dirlike, "w") as f:
        f.write("".join(x + "\n" for x in dir_lines))
    with open(sparse, "wb") as f:
        f.truncate(SPARSE)
    config = tt.write_config(wd, [{"id": "bad", "paths": [wd.path("*.log")],
                                   "max_line_bytes": "1MiB"}], shutdown_timeout="10s")
    agent = tt.Agent(config, wd, "badfiles", argv_prefix=prefix)
    got = tt.wait_events(wd.out, 60, 30)
    c.check(got >= 60, "the readable files are read next to the bad ones", f"{got} events")
    os.unlink(dirlike)
    os.mkdir(dirlike)  # replaced by a directory
    with open(good, "a") as f:
        f.write("".join(x + "\n" for x in good_lines[50:]))
    # Until the sparse file has been read to its end (or 120 s): the reading position of the
    # agent's descriptor on it (/proc/PID/fdinfo), the furthest seen. A file never opened, or
    # given up on part way, never gets there.
    furthest = [None]

    def sparse_done():
        pos = tt.fd_position(agent.pid, sparse)
        if pos is not None and (furthest[0] is None or pos > furthest[0]):
            furthest[0] = pos
        return furthest[0] is not None and furthest[0] >= SPARSE
    t0 = time.monotonic()
    tt.wait_for(sparse_done, 120, step=0.1)
    print(f"sparse file: read position {furthest[0]} of {SPARSE} after "
          f"{time.monotonic() - t0:.1f} s")
    c.check(furthest[0] == SPARSE, "the 2 GiB sparse file is read to its end",
            f"furthest read position {furthest[0]} of {SPARSE}")
    # The directory replacing a file and the other bad files are met by the next scans.
    for path in (secret, fifo, dirlike):
        tt.wait_stderr(agent, path, 30)
    c.check(agent.alive(), "the agent is still running (no crash)")
    rss = agent.rss_peak_kib()
    print(f"peak RSS (VmHWM): {rss} KiB, limit {RSS_LIMIT_KIB} KiB")
    c.check(rss is not None and rss < RSS_LIMIT_KIB, "peak RSS under 64 MiB", f"{rss} KiB")
    rc = agent.stop()
    c.check(rc == 0, "SIGTERM exits 0", f"rc={rc}")
    events = tt.read_events(wd.out)
    by = tt.messages_by_path(events)
    missing, dups, order = tt.compare_streams(good_lines, by.get(good, []))
    c.check(not missing and dups == 0 and order == 0, "the good file is read fully, once",
            f"missing {len(missing)}, duplicates {dups}, out of order {order}")
    dm, _, _ = tt.compare_streams(dir_lines, by.get(dirlike, []))
    c.check(not dm, "lines of the file later replaced by a directory arrived",
            f"{len(dm)} missing")
    c.check(secret not in by and fifo not in by, "nothing came from the unreadable file or FIFO")
    sp = [e for e in events if e["log"]["file"]["path"] == sparse]
    flags = [e["log"].get("flags", []) for e in sp]
    print(f"sparse file: {len(sp)} events, sizes {[len(e['message']) for e in sp]}, "
          f"flags {flags}")
    c.check(len(sp) <= 1, "at most one event from the 2 GiB line", f"{len(sp)} events")
    c.check(all("truncated" in f for f in flags), "an event from it is flagged truncated")
    c.check(all(len(e["message"].encode()) <= 1 << 20 for e in sp),
            "an event from it is at most max_line_bytes")
    err = agent.stderr()
    for path, what in ((secret, "permission-denied file"), (fifo, "FIFO"),
                       (dirlike, "file replaced by a directory")):
        lines = [ln for ln in err.splitlines() if path in ln and
                 (" warn " in ln or " error " in ln)]
        c.check(bool(lines), f"a warning names the {what}",
                lines[0] if lines else f"no warning mentions {path}")
    c.check("sanitizer" not in err.lower() and "runtime error" not in err,
            "no sanitizer report")
    wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
