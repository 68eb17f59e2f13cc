#!/usr/bin/env python3
"""Without inotify the agent polls (docs/tailing.md "Finding files"): it says so once and
loses nothing. The agent runs in its own user namespace (unshare -U -r) whose inotify
limits are lowered there only (/proc/sys/user/max_inotify_*), so the machine's other
processes keep theirs:

  no_inotify     max_inotify_instances 0: inotify is unavailable
  few_watches    max_inotify_watches 2 for 5 directories: it runs out of watches

In each: lines appended to files in 5 directories, a rename rotation with writes through
the old descriptor after the rename, a new file in every directory, a deleted file. Every
line arrives exactly once, and the fallback is logged exactly once.
Exits 77 (skipped) when user namespaces are not available."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402

DIRS = 5


def userns_prefix(key, value):
    script = f'echo {value} > /proc/sys/user/{key} && exec "$0" "$@"'
    return ["unshare", "-U", "-r", "sh", "-c", script]


def write(path, msgs, handle=None):
    f = handle or open(path, "a")
    f.write("".join(m + "\n" for m in msgs))
    f.flush()
    if handle is None:
        f.close()


def run_case(c, name, key, value):
    wd = tt.Workdir(name)
    dirs = [wd.path(f"d{k}") for k in range(DIRS)]
    for d in dirs:
        os.makedirs(d)
    config = tt.write_config(wd, [{"id": "poll", "paths": [wd.path("*", "*.log")]}])
    expected = []
    # Phase 1: files present at start-up.
    for k, d in enumerate(dirs):
        msgs = [f"{name} d{k} start {i:04d}" for i in range(50)]
        write(os.path.join(d, "app.log"), msgs)
        expected += msgs
    a = tt.PipedAgent(config, wd, name, prefix=userns_prefix(key, value))
    n = tt.wait_events(wd.out, len(expected), 30)
    c.check(n == len(expected), f"{name}: files present at start-up are read", f"{n}")
    # Phase 2: appends, then a rename rotation with writes through the old descriptor.
    handles = []
    for k, d in enumerate(dirs):
        path = os.path.join(d, "app.log")
        h = open(path, "a")
        msgs = [f"{name} d{k} before {i:04d}" for i in range(50)]
        write(path, msgs, h)
        expected += msgs
        handles.append(h)
    n = tt.wait_events(wd.out, len(expected), 30)
    for k, d in enumerate(dirs):
        os.rename(os.path.join(d, "app.log"), os.path.join(d, "app.log.1"))
        msgs = [f"{name} d{k} old-after-rename {i:04d}" for i in range(30)]
        write(None, msgs, handles[k])
        expected += msgs
        msgs = [f"{name} d{k} new {i:04d}" for i in range(40)]
        write(os.path.join(d, "app.log"), msgs)
        expected += msgs
    for h in handles:
        h.close()
    # Phase 3: a new file everywhere; one deleted after it was read.
    for k, d in enumerate(dirs):
        msgs = [f"{name} d{k} extra {i:04d}" for i in range(10)]
        write(os.path.join(d, "extra.log"), msgs)
        expected += msgs
    n = tt.wait_events(wd.out, len(expected), 60)
    c.check(n >= len(expected), f"{name}: appends, rotations and new files all arrive",
            f"{n} of {len(expected)}")
    os.unlink(os.path.join(dirs[0], "extra.log"))
    c.check(tt.wait_for(lambda: not any("extra.log" in t and "/d0/" in t
                                        for t in tt.fd_targets(a.pid)), 30),
            f"{name}: a deleted file is closed without a watcher")
    c.check(a.stop() == 0, f"{name}: SIGTERM exits 0", f"rc={a.rc}")
    msgs = [e["message"] for e in tt.read_events(wd.out)]
    missing, dups, _ = tt.compare_streams(expected, msgs)
    c.check(not missing and not dups, f"{name}: every line exactly once",
            f"{len(missing)} missing{' e.g. ' + missing[0] if missing else ''}, {dups} doubled")
    err = a.stderr()
    told = err.count("polled")
    c.check(told == 1, f"{name}: the fallback to polling is logged once",
            f"{told} lines: " + " | ".join(l for l in err.splitlines() if "polled" in l)[:300])
    wd.cleanup()


def main():
    c = tt.Checks()
    probe = subprocess.run(userns_prefix("max_inotify_instances", 0) + ["true"],
                           stderr=subprocess.PIPE)
    if probe.returncode != 0:
        print("SKIP: no user namespace with its own inotify limits here: " +
              probe.stderr.decode(errors="replace").strip())
        sys.exit(tt.SKIP)
    run_case(c, "no_inotify", "max_inotify_instances", 0)
    run_case(c, "few_watches", "max_inotify_watches", 2)
    c.finish()


if __name__ == "__main__":
    main()
