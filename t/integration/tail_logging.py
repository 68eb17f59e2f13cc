#!/usr/bin/env python3
"""The agent's own log (docs/configuration.md "logging"):

  json_format   logging.format: json: every stderr line of a whole daemon run (start,
                a warning about a FIFO whose name holds a quote, a backslash, a tab and a
                newline, SIGTERM, stop) is one JSON object with exactly the fields time
                (UTC, ms), level, component and msg; the FIFO's path comes back intact
  log_level     --log-level overrides logging.level: with warn, no info line and the
                warning shown; with error, nothing at all for a clean run; logging.level
                alone is obeyed too; an unknown level exits 2 with a message"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402

TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def run(wd, config, tag, args=()):
    """One daemon run: wait for the event, then SIGTERM. Returns (rc, stderr lines)."""
    a = tt.PipedAgent(config, wd, tag, args=args)
    ok = tt.wait_events(wd.out, 1, 30) >= 1
    tt.wait_for(lambda: [r["offset"] for r in tt.read_registry(wd.data) or []] == [6], 30)
    rc = a.stop()
    lines = a.stderr().splitlines()
    for name in os.listdir(wd.out) if os.path.isdir(wd.out) else []:
        os.unlink(os.path.join(wd.out, name))
    for name in os.listdir(wd.data) if os.path.isdir(wd.data) else []:
        os.unlink(os.path.join(wd.data, name))
    return rc if ok else f"{rc}, no event", lines


def setup(name, fifo):
    wd = tt.Workdir(name)
    with open(wd.path("app.log"), "w") as f:
        f.write("hello\n")
    odd = wd.path(fifo)
    os.mkfifo(odd)
    return wd, odd


def case_json(c):
    wd, odd = setup("logjson", 'odd "q" \\ \t\nname.log')
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}],
                             extra="logging: {format: json}")
    rc, lines = run(wd, config, "json")
    c.check(rc == 0, "json_format: the run exits 0", f"rc={rc}")
    bad = []
    recs = []
    for ln in lines:
        try:
            r = json.loads(ln)
        except ValueError:
            bad.append(ln)
            continue
        recs.append(r)
        if (not isinstance(r, dict) or sorted(r) != ["component", "level", "msg", "time"] or
                not TIME_RE.match(str(r.get("time"))) or
                r.get("level") not in ("error", "warn", "info", "debug") or
                not isinstance(r.get("msg"), str) or not r.get("component")):
            bad.append(ln)
    c.check(len(lines) >= 4 and not bad,
            "json_format: every line is a JSON object with time, level, component, msg",
            f"{len(lines)} lines, bad: {bad[:2]}")
    warn = [r for r in recs if r.get("level") == "warn" and odd in r.get("msg", "")]
    c.check(len(warn) == 1, "json_format: the FIFO warning carries the odd path intact",
            f"{[r.get('msg') for r in recs if r.get('level') == 'warn']}")
    c.check(any(r.get("level") == "info" and r.get("msg", "").startswith("stopped:")
                for r in recs), "json_format: the stop is logged as info")
    wd.cleanup()


def levels(lines):
    out = []
    for ln in lines:
        m = re.match(r"^\S+ (error|warn|info|debug)\s", ln)
        out.append(m.group(1) if m else "?")
    return out


def case_log_level(c):
    wd, odd = setup("loglevel", "pipe.log")
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}],
                             extra="logging: {level: debug}")
    rc, lines = run(wd, config, "warn", ["--log-level", "warn"])
    lv = levels(lines)
    c.check(rc == 0 and lv == ["warn"] and "not a regular file" in lines[0],
            "log_level: --log-level warn over logging.level debug: only the warning",
            f"rc={rc} {lines}")
    rc, lines = run(wd, config, "error", ["--log-level", "error"])
    c.check(rc == 0 and lines == [], "log_level: --log-level error: a clean run says nothing",
            f"rc={rc} {lines}")
    rc, lines = run(wd, config, "info", ["--log-level", "info"])
    lv = levels(lines)
    c.check(rc == 0 and "info" in lv and "warn" in lv and not {"debug", "?"} & set(lv),
            "log_level: --log-level info: info and warnings", f"rc={rc} {sorted(set(lv))}")
    config2 = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}],
                              extra="logging: {level: warn}")
    rc, lines = run(wd, config2, "cfgwarn")
    c.check(rc == 0 and levels(lines) == ["warn"], "log_level: logging.level warn alone",
            f"rc={rc} {lines}")
    a = tt.PipedAgent(config2, wd, "badlevel", args=["--log-level", "loud"])
    rc = a.wait(30)
    err = a.stderr()
    c.check(rc == 2 and "--log-level" in err and "loud" in err,
            "log_level: an unknown level exits 2 and says so", f"rc={rc} {err.strip()}")
    wd.cleanup()


def main():
    c = tt.Checks()
    case_json(c)
    case_log_level(c)
    c.finish()


if __name__ == "__main__":
    main()
