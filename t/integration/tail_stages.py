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
               "match: after, timeout: 5s}\n      - exclude_lines: ['^\\[DBG']")
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("logs", "*.log")],
                                   "parsers": parsers}])
    agent = tt.Agent(config, wd, "stages")
    c.check(tt.wait_stderr(agent, "following 1 inputs"), "the agent starts", agent.stderr())
    first = "[1] first\n  detail a\n  detail b\n"
    with open(log, "a") as f:
        f.write(first + "[2] second\n  detail c\n")
    # [1] is complete once [2] starts; [2] is held until its timeout (5 s, a window wide
    # enough to see the registry at [2]'s first line on a loaded machine).
    t0 = time.monotonic()
    got1 = tt.wait_events(wd.out, 1, 30)
    c.check(got1 >= 1, "the event a new first line completes goes out at once", f"{got1} events")
    held = len(first)
    off = tt.wait_registry_offset(wd.data, log, held, 30)
    still = tt.count_lines(wd.out)
    c.check(off == held and still == 1,
            "while [2] is held the registry stays at its first line",
            f"registry {off}, first held byte {held}, {still} events out, "
            f"{time.monotonic() - t0:.1f} s after the write")
    got2 = tt.wait_events(wd.out, 2, 30)
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
    # The timeout ends the dropped event too; then the registry moves.
    off = tt.wait_registry_offset(wd.data, log, end, 30)
    c.check(off == end, "a filtered event still moves the registry",
            f"registry {off}, file size {end}")
    c.check(tt.count_lines(wd.out) == 2, "the filtered event is not sent",
            f"{tt.count_lines(wd.out)} events")
    rc = agent.stop()
    c.check(rc == 0, "SIGTERM exits 0", f"rc={rc}")
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
