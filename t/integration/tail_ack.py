#!/usr/bin/env python3
"""Acknowledgements and file identity under the daemon: content replaced in place
(copytruncate followed by quick regrowth, in an open file and in a file closed for
inactivity), a container partial flushed after later events of its file, a stderr partial
held across a kill -9 while later stdout lines were acknowledged, rename rotation
with events in flight, and descriptors let go of (an unterminated last line, a file renamed
out of the globs). Every line written must arrive exactly once, the registry must end at
each file's size, and no entry may be left for a file that is gone."""
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402


def write_lines(path, prefix, n, mode="a"):
    lines = [f"{prefix}-{i:05d} the quick brown fox jumps over the lazy dog" for i in range(n)]
    with open(path, mode) as f:
        f.write("".join(line + "\n" for line in lines))
    return lines


def registry_offset(wd, path):
    for r in tt.read_registry(wd.data) or []:
        if r["path"] == path:
            return r["offset"]
    return None


def wait_registry(wd, path, offset, timeout=15):
    return tt.wait_for(lambda: registry_offset(wd, path) == offset, timeout)


def open_fds(pid, path):
    """How many of pid's descriptors lead to path (or to path deleted)."""
    n = 0
    d = f"/proc/{pid}/fd"
    for fd in os.listdir(d):
        try:
            target = os.readlink(os.path.join(d, fd))
        except OSError:
            continue
        if target == path or target == path + " (deleted)":
            n += 1
    return n


def check_stream(c, wd, expected, name):
    msgs = [e["message"] for e in tt.read_events(wd.out)]
    missing, dups, order = tt.compare_streams(expected, msgs)
    c.check(not missing and dups == 0 and order == 0, name,
            f"{len(expected)} written, {len(missing)} missing (first {missing[:2]}), "
            f"{dups} duplicated, {order} out of order")


def finish(c, wd, agent, log, expected, name):
    """Waits for every line and the registry at the end of log, stops, checks the stream."""
    tt.wait_events(wd.out, len(expected), 15)
    wait_registry(wd, log, os.path.getsize(log))
    rc = agent.stop()
    c.check(rc == 0, f"{name}: SIGTERM exits 0", f"rc={rc}")
    check_stream(c, wd, expected, f"{name}: every line once, in order")
    wd.cleanup()


def copytruncate(c):
    """Write 500, let them be delivered, copy away + truncate, 100 more, delivered, copy +
    truncate again, 300 more: the new content is longer than what was read of the old one
    before any poll can see the file shrink."""
    wd = tt.Workdir("ack-ct")
    log = wd.path("app.log")
    open(log, "w").close()
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}])
    agent = tt.Agent(config, wd, "ct")
    expected = write_lines(log, "a", 500)
    c.check(wait_registry(wd, log, os.path.getsize(log)), "phase 1 delivered")
    shutil.copy(log, wd.path("app.1.old"))
    os.truncate(log, 0)
    expected += write_lines(log, "b", 100)
    c.check(wait_registry(wd, log, os.path.getsize(log)), "phase 2 delivered")
    shutil.copy(log, wd.path("app.2.old"))
    os.truncate(log, 0)
    expected += write_lines(log, "c", 300)
    tt.wait_events(wd.out, len(expected), 10)
    c.check(wait_registry(wd, log, os.path.getsize(log)), "phase 3 acknowledged to the end")
    # Regrowth inside 10 ms: truncate and write more than was read, at once.
    t0 = time.monotonic()
    os.truncate(log, 0)
    expected += write_lines(log, "d", 600)
    print(f"regrowth written {(time.monotonic() - t0) * 1000:.1f} ms after the truncation")
    finish(c, wd, agent, log, expected, "copytruncate with quick regrowth")


def replaced_while_closed(c):
    """A file closed for inactivity whose content is replaced by more than was read (same
    inode) is read again from 0 when it is reopened."""
    wd = tt.Workdir("ack-closed")
    log = wd.path("app.log")
    open(log, "w").close()
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")],
                                   "close_inactive": "1s"}])
    agent = tt.Agent(config, wd, "closed")
    expected = write_lines(log, "a", 300)
    c.check(wait_registry(wd, log, os.path.getsize(log)), "first content delivered")
    c.check(tt.wait_for(lambda: open_fds(agent.pid, log) == 0, 15),
            "the idle file is closed after close_inactive")
    with open(log, "r+") as f:
        f.truncate(0)
        new = [f"b-{i:05d} other content, longer than the first" for i in range(500)]
        f.write("".join(line + "\n" for line in new))
    expected += new
    finish(c, wd, agent, log, expected, "content replaced while closed, read again from 0")


def container_partial(c):
    """A partial held by the container stage goes out after a later event of the file was
    acknowledged; the file is then deleted. The source must outlive that batch."""
    wd = tt.Workdir("ack-cri")
    log = wd.path("pod.log")
    open(log, "w").close()
    config = tt.write_config(wd, [{"id": "k8s", "paths": [wd.path("*.log")],
                                   "close_inactive": "1s",
                                   "parsers": "\n      - container: {format: cri}"}],
                             batch_flush="5s")  # the partial's batch waits while files are swept
    agent = tt.Agent(config, wd, "cri")
    with open(log, "a") as f:
        f.write("2026-11-30T10:00:00.000000000Z stdout P first half of a line \n")
        f.write("2026-11-30T10:00:00.100000000Z stderr F an error line\n")
    c.check(tt.wait_events(wd.out, 1, 10) == 1, "the stderr line goes out, the partial is held")
    time.sleep(1.0)  # its batch is acknowledged
    os.unlink(log)
    got = tt.wait_events(wd.out, 2, 15)
    c.check(got == 2, "the held partial goes out when the file ends", f"{got} events")
    c.check(tt.wait_for(lambda: not tt.read_registry(wd.data), 15),
            "the deleted file's registry entry is dropped", repr(tt.read_registry(wd.data)))
    rc = agent.stop()
    c.check(rc == 0, "container: SIGTERM exits 0 (no crash)", f"rc={rc}")
    msgs = sorted(e["message"] for e in tt.read_events(wd.out))
    c.check(msgs == ["an error line", "first half of a line "], "both events, exact", repr(msgs))
    wd.cleanup()


def container_stderr_partial(c):
    """A stderr partial held while a later stdout line is delivered and acknowledged; kill -9
    before the stderr line's last fragment is written, then that fragment: after the restart
    the whole stderr record arrives, once, never its last fragment alone. The registry must
    not pass the held partial, whichever stream it is on."""
    wd = tt.Workdir("ack-cri-err")
    log = wd.path("pod.log")
    open(log, "w").close()
    config = tt.write_config(wd, [{"id": "k8s", "paths": [wd.path("*.log")],
                                   "parsers": "\n      - container: {format: cri}"}])
    agent = tt.Agent(config, wd, "cri-err1")
    with open(log, "a") as f:
        f.write("2026-11-30T10:00:00.000000000Z stdout F before\n")
        f.write("2026-11-30T10:00:00.100000000Z stderr P first half of an error \n")
        f.write("2026-11-30T10:00:00.200000000Z stdout F a later stdout line\n")
    c.check(tt.wait_events(wd.out, 2, 10) == 2, "both stdout lines go out, the partial is held")
    held_at = len("2026-11-30T10:00:00.000000000Z stdout F before\n")
    # The registry saves what the answers allow (the partial's offset), flush after flush.
    c.check(wait_registry(wd, log, held_at), "the registry stops at the held stderr partial",
            f"offset {registry_offset(wd, log)}, partial at {held_at}")
    time.sleep(0.6)  # a few more flushes: none may pass it
    c.check(registry_offset(wd, log) == held_at, "it stays there while the partial is held",
            f"offset {registry_offset(wd, log)}")
    agent.kill9()
    with open(log, "a") as f:
        f.write("2026-11-30T10:00:01.000000000Z stderr F and its second half\n")
    agent = tt.Agent(config, wd, "cri-err2")
    tt.wait_for(lambda: "first half of an error and its second half" in
                [e["message"] for e in tt.read_events(wd.out)], 10)
    c.check(wait_registry(wd, log, os.path.getsize(log)), "the registry reaches the end")
    rc = agent.stop()
    c.check(rc == 0, "container stderr: SIGTERM exits 0", f"rc={rc}")
    msgs = [e["message"] for e in tt.read_events(wd.out)]
    c.check(msgs.count("first half of an error and its second half") == 1 and
            "and its second half" not in msgs,
            "after kill -9 the whole stderr record arrives once, not its last fragment alone",
            repr(msgs))
    c.check(msgs.count("before") == 1 and "a later stdout line" in msgs,
            "the stdout lines arrived (the one after the partial may come twice)", repr(msgs))
    wd.cleanup()


def rename_in_flight(c):
    """100 lines, then a rename within the globs a few ms later, five times; stop, restart:
    nothing twice, nothing missing, the registry at every file's end and nothing in it for
    files that are gone."""
    wd = tt.Workdir("ack-mv")
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log*")]}],
                             batch_flush="300ms")
    log = wd.path("app.log")
    open(log, "w").close()
    agent = tt.Agent(config, wd, "mv1")
    time.sleep(1.0)
    expected = []
    for gen in range(5):
        expected += write_lines(log, f"g{gen}", 100)
        time.sleep(0.005)
        for k in range(gen, -1, -1):  # app.log.N -> app.log.N+1, then app.log -> app.log.1
            src = log if k == 0 else f"{log}.{k}"
            if os.path.exists(src):
                os.rename(src, f"{log}.{k + 1}")
        open(log, "w").close()
        time.sleep(0.3)
    tt.wait_events(wd.out, len(expected), 15)
    sizes = {f"{log}.{k}": os.path.getsize(f"{log}.{k}") for k in range(1, 6)}
    c.check(tt.wait_for(lambda: all(registry_offset(wd, p) == s for p, s in sizes.items()), 15),
            "the registry reaches the end of every rotated file",
            repr({p: registry_offset(wd, p) for p in sizes}))
    rc = agent.stop()
    c.check(rc == 0, "rename: SIGTERM exits 0", f"rc={rc}")
    recs = tt.read_registry(wd.data) or []
    at_end = all(any(r["path"] == p and r["offset"] == s for r in recs) for p, s in sizes.items())
    c.check(at_end, "after the stop the registry holds every rotated file at its end",
            repr([(r["path"], r["offset"]) for r in recs]))
    # Rotation ends: the oldest file goes away; its entry must not outlive it.
    os.unlink(f"{log}.5")
    agent = tt.Agent(config, wd, "mv2")
    time.sleep(3.0)
    rc = agent.stop()
    c.check(rc == 0, "rename: the second run exits 0", f"rc={rc}")
    check_stream(c, wd, expected, "rename rotation with events in flight: every line once")
    recs = tt.read_registry(wd.data) or []
    gone = [r["path"] for r in recs if not os.path.exists(r["path"])]
    c.check(not gone, "no registry entry for a file that is gone", repr(gone))
    c.check(len(recs) == 5, "one entry per file that exists (app.log, .1 to .4)",
            repr([(r["path"], r["offset"]) for r in recs]))
    wd.cleanup()


def descriptors(c):
    """An unterminated last line does not keep a file open past close_inactive, nor does a
    rename out of the globs."""
    wd = tt.Workdir("ack-fd")
    part = wd.path("part.log")
    moved = wd.path("moved.log")
    with open(part, "w") as f:
        f.write("complete line\nno newline yet")
    write_lines(moved, "m", 10)
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")],
                                   "close_inactive": "1s"}])
    agent = tt.Agent(config, wd, "fd")
    c.check(tt.wait_events(wd.out, 11, 10) == 11, "the complete lines arrive")
    away = os.path.join(wd.root, "moved.away")
    os.rename(moved, away)
    c.check(tt.wait_for(lambda: open_fds(agent.pid, part) == 0, 10),
            "a file whose last line has no newline is closed after close_inactive")
    c.check(tt.wait_for(lambda: open_fds(agent.pid, away) == 0, 10),
            "a file renamed out of the globs is closed after close_inactive")
    with open(part, "a") as f:
        f.write(", now it has one\n")
    got = tt.wait_events(wd.out, 12, 10)
    c.check(got == 12, "the completed line arrives once the file grows", f"{got} events")
    rc = agent.stop()
    c.check(rc == 0, "fd: SIGTERM exits 0", f"rc={rc}")
    msgs = [e["message"] for e in tt.read_events(wd.out) if e["log"]["file"]["path"] == part]
    c.check(msgs == ["complete line", "no newline yet, now it has one"],
            "the unterminated line is read whole, once", repr(msgs))
    wd.cleanup()


def main():
    c = tt.Checks()
    copytruncate(c)
    replaced_while_closed(c)
    container_partial(c)
    container_stderr_partial(c)
    rename_in_flight(c)
    descriptors(c)
    return c.finish()


if __name__ == "__main__":
    main()
