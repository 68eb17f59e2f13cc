#!/usr/bin/env python3
"""registry.clean_removed: at the next start, a file deleted while the agent was stopped is
forgotten, and so is one renamed out of the globs (no longer at its last known path, as
logrotate's old copies are: this is what keeps the registry bounded); a file renamed
within the globs is continued, not read again; a file still in place is kept."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402


def main():
    c = tt.Checks()
    wd = tt.Workdir("clean")
    for name in ("keep.log", "gone.log", "moved.log", "away.log"):
        with open(wd.path(name), "w") as f:
            f.write(f"first line of {name}\n")
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}])
    agent = tt.Agent(config, wd, "first")
    tt.wait_events(wd.out, 4, 10)
    c.check(agent.stop() == 0, "the first run stops cleanly")
    paths = sorted(r["path"] for r in tt.read_registry(wd.data) or [])
    c.check(len(paths) == 4, "the registry knows the four files", repr(paths))
    os.unlink(wd.path("gone.log"))
    os.rename(wd.path("moved.log"), wd.path("moved-again.log"))
    os.rename(wd.path("away.log"), wd.path("away.old"))  # out of the globs, still there
    agent = tt.Agent(config, wd, "second")
    # Up, with the renamed file found and opened, before it is stopped.
    tt.wait_stderr(agent, "following 1 inputs")
    found = tt.wait_for(lambda: all(tt.fd_position(agent.pid, wd.path(n)) is not None
                                    for n in ("keep.log", "moved-again.log")), 30, step=0.1)
    c.check(found, "the second run opens the kept and the renamed file")
    c.check(agent.stop() == 0, "the second run stops cleanly")
    recs = tt.read_registry(wd.data) or []
    names = sorted(os.path.basename(r["path"]) for r in recs)
    c.check(names == ["keep.log", "moved-again.log"],
            "deleted and renamed-away files are forgotten, the others kept", repr(names))
    events = tt.read_events(wd.out)
    c.check(len(events) == 4, "nothing was read twice after the rename",
            f"{len(events)} events: {[e['message'] for e in events]}")
    err = open(os.path.join(wd.root, "second.stderr")).read()
    c.check("forgot 2 files that no longer exist" in err, "the start-up says what it forgot",
            " | ".join(err.strip().splitlines()))
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
