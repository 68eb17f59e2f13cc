#!/usr/bin/env python3
"""Stages in the daemon: a pending multiline event goes out when its timeout passes with no
new line, the registry never passes its first line while it is held, and filtered lines
still move the registry."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402


def main():
    c = tt.Checks()
    wd = tt.Workdir("stages")
    log = wd.path("logs", "app.log")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    open(log, "w").close()
    parsers = ("\n      - multiline: {type: pattern, pattern: '^\\[', negate: true, "
               "match: after, timeout: 1s}\n      - exclude_lines: ['^\\[DBG']")
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("logs", "*.log")],
                                   "parsers": parsers}])
    agent = tt.Agent(config, wd, "stages")
    time.sleep(0.5)
    first = "[1] first\n  detail a\n  detail b\n"
    with open(log, "a") as f:
        f.write(first + "[2] second\n  detail c\n")
    # [1] is complete once [2] starts; [2] is held until its timeout (1 s).
    got1 = tt.wait_events(wd.out, 1, 5)
    c.check(got1 >= 1, "the event a new first line completes goes out at once", f"{got1} events")
    time.sleep(0.5)
    recs = tt.read_registry(wd.data) or []
    held = len(first)
    c.check(any(r["offset"] == held for r in recs),
            "while [2] is held the registry stays at its first line",
            f"registry {[r['offset'] for r in recs]}, first held byte {held}")
    got2 = tt.wait_events(wd.out, 2, 5)
    c.check(got2 == 2, "the held event goes out after its timeout with no new line",
            f"{got2} events")
    events = tt.read_events(wd.out)
    msgs = [e["message"] for e in events]
    c.check(msgs == ["[1] first\n  detail a\n  detail b", "[2] second\n  detail c"],
            "the joined messages are exact", repr(msgs))
    c.check(all(e["log"].get("flags") == ["multiline"] for e in events),
            "joined events carry the multiline flag", repr([e["log"].get("flags") for e in events]))
    c.check([e["log"]["offset"] for e in events] == [0, held], "each event has its first line's offset",
            repr([e["log"]["offset"] for e in events]))
    with open(log, "a") as f:
        f.write("[DBG] noise\n")
    end = os.path.getsize(log)
    time.sleep(2.0)  # the timeout ends the dropped event too; then the registry moves
    recs = tt.read_registry(wd.data) or []
    c.check(any(r["offset"] == end for r in recs), "a filtered event still moves the registry",
            f"registry {[r['offset'] for r in recs]}, file size {end}")
    c.check(tt.count_lines(wd.out) == 2, "the filtered event is not sent",
            f"{tt.count_lines(wd.out)} events")
    rc = agent.stop()
    c.check(rc == 0, "SIGTERM exits 0", f"rc={rc}")
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
