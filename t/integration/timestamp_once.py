#!/usr/bin/env python3
"""The timestamp stage through the real binary: `logferry --once` over real files, with
dissect, ndjson and the message itself feeding it. Each event's @timestamp must be exactly
the line's own time (Europe/Berlin across both DST changes, an offset in the line, unix
milliseconds in a nested member, a year-less syslog time placed against the read time); a
line whose time does not parse keeps the read time and carries error.message; and config
mistakes (unknown zone, unknown directive) exit 2 naming FILE:LINE:COL.
Expected instants come from Python's zoneinfo, not from the agent."""
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from zoneinfo import ZoneInfo

LOGFERRY = os.environ.get("LOGFERRY", "./logferry")
BERLIN = ZoneInfo("Europe/Berlin")
UTC = dt.timezone.utc


def iso_ms(t):
    """The agent's @timestamp text: UTC, milliseconds (floored)."""
    t = t.astimezone(UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def berlin(*a):
    return dt.datetime(*a, tzinfo=BERLIN)  # fold=0: gap shifts forward, overlap is earlier


APP_LINES = [
    ("2026-11-30 12:00:01.123 ERROR [db] timeout", berlin(2026, 11, 30, 12, 0, 1, 123000)),
    ("2026-03-29 02:30:00.250 INFO [web] in the spring gap", berlin(2026, 3, 29, 2, 30, 0, 250000)),
    ("2026-10-25 02:30:00.999 INFO [web] in the autumn overlap",
     berlin(2026, 10, 25, 2, 30, 0, 999000)),
    ("2024-02-29 23:59:59.000999 WARN [cron] leap day", berlin(2024, 2, 29, 23, 59, 59, 999)),
    ("2023-02-29 10:00:00.000 WARN [cron] no such day", None),
    ("yesterday-ish 10:00 ERROR [x] not a time", None),
]

JSON_LINES = [
    ({"j": {"t": 1733011681123, "v": 1}}, dt.datetime(2024, 12, 1, 0, 8, 1, 123000, tzinfo=UTC)),
    ({"j": {"t": "2026-11-30T01:02:03.5-05:00"}},
     dt.datetime(2026, 11, 30, 6, 2, 3, 500000, tzinfo=UTC)),
    # unix_ms comes before unix in the list, and reads it first: the order is the user's
    ({"j": {"t": "1733011681"}}, dt.datetime(1970, 1, 21, 1, 23, 31, 681000, tzinfo=UTC)),
    ({"j": {"x": 1}}, None),
]


def syslog_expected(mon, day, hh, mm, ss, now):
    """The latest year that puts the time at most one day after the read time."""
    for year in range(now.year + 1, now.year - 9, -1):
        try:
            t = dt.datetime(year, mon, day, hh, mm, ss, tzinfo=UTC)
        except ValueError:
            continue
        if t <= now + dt.timedelta(days=1):
            return t
    raise AssertionError("no year")


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def run(root, conf):
    p = subprocess.run([LOGFERRY, "-c", conf, "--once"], capture_output=True, text=True)
    return p.returncode, [json.loads(x) for x in p.stdout.splitlines() if x], p.stderr


def main():
    failed = []
    n_events = 0

    def check(what, got, want):
        if got != want:
            failed.append(f"{what}: got {got!r}, want {want!r}")

    with tempfile.TemporaryDirectory(prefix="lf-ts-") as root:
        app = os.path.join(root, "app.log")
        write(app, "".join(line + "\n" for line, _ in APP_LINES))
        js = os.path.join(root, "json.log")
        write(js, "".join(json.dumps(o) + "\n" for o, _ in JSON_LINES))
        sl = os.path.join(root, "syslog.log")
        write(sl, "Dec 31 23:59:59\nJan  1 00:00:00\nDec  1 00:08:01\n")
        conf = os.path.join(root, "ts.yml")
        write(conf, f"""data_dir: {root}/data
inputs:
  - id: app
    paths: ["{app}"]
    parsers:
      - dissect: {{tokenizer: '%{{ts}} %{{+ts}} %{{level}} [%{{component}}] %{{msg}}'}}
      - timestamp: {{field: ts, formats: ['%Y-%m-%d %H:%M:%S.%f'], timezone: Europe/Berlin,
                     remove_field: true}}
  - id: json
    paths: ["{js}"]
    parsers:
      - ndjson: {{}}
      - timestamp: {{field: j.t, formats: [rfc3339, unix_ms, unix], remove_field: true}}
  - id: sys
    paths: ["{sl}"]
    parsers:
      - timestamp: {{field: message, formats: [rfc3164]}}
outputs:
  - name: c
    type: console
""")
        before = dt.datetime.now(UTC)
        rc, events, err = run(root, conf)
        n_events = len(events)
        after = dt.datetime.now(UTC)
        check("exit code", rc, 0)
        by_input = {}
        for e in events:
            by_input.setdefault(e["input"]["id"], []).append(e)
        check("events", {k: len(v) for k, v in by_input.items()},
              {"app": len(APP_LINES), "json": len(JSON_LINES), "sys": 3})

        def read_time_ok(e):
            t = dt.datetime.strptime(e["@timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
            return before - dt.timedelta(seconds=1) <= t <= after + dt.timedelta(seconds=1)

        for (line, want), e in zip(APP_LINES, by_input.get("app", [])):
            if want is not None:
                check(line, e["@timestamp"], iso_ms(want))
                check(line + " ts removed", "ts" in e, False)
                check(line + " no error", "error" in e, False)
            else:
                check(line + " keeps the read time", read_time_ok(e), True)
                check(line + " error", e.get("error"),
                      {"message": "timestamp: ts matches none of the formats"})
                check(line + " ts kept", "ts" in e, True)
        for (obj, want), e in zip(JSON_LINES, by_input.get("json", [])):
            if want is not None:
                check(json.dumps(obj), e["@timestamp"], iso_ms(want))
                check(json.dumps(obj) + " j.t removed", "t" in e["j"], False)
            else:
                check(json.dumps(obj) + " keeps the read time", read_time_ok(e), True)
                check(json.dumps(obj) + " error", e.get("error"),
                      {"message": "timestamp: j.t is missing"})
        now = before
        for e, (mon, day, hh, mm, ss) in zip(by_input.get("sys", []),
                                             [(12, 31, 23, 59, 59), (1, 1, 0, 0, 0),
                                              (12, 1, 0, 8, 1)]):
            want = syslog_expected(mon, day, hh, mm, ss, now)
            check(e["message"], e["@timestamp"], iso_ms(want))

        bad = os.path.join(root, "bad.yml")
        write(bad, f"""data_dir: {root}/data2
inputs:
  - id: app
    paths: ["{app}"]
    parsers:
      - timestamp: {{formats: [rfc3339, '%Y %Q'], timezone: Mars/Olympus_Mons}}
outputs:
  - name: c
    type: console
""")
        rc, events, err = run(root, bad)
        check("bad config exit code", rc, 2)
        check("bad config events", events, [])
        check("bad config errors", err.strip().splitlines(), [
            f"{bad}:6:40: inputs[0].parsers[0].timestamp.formats[1]: invalid value \"%Y %Q\": "
            "unknown directive; known: %Y %y %m %b %h %B %d %e %j %H %I %p %M %S %f %a %A %z %Z "
            "%T %F %n %t %%",
            f"{bad}:6:60: inputs[0].parsers[0].timestamp.timezone: invalid value "
            "\"Mars/Olympus_Mons\": expected a tzdata zone name (such as Europe/Berlin; see "
            "/usr/share/zoneinfo), UTC, Local, or an offset such as +01:00",
        ])
    for f in failed:
        print("FAIL", f)
    if not failed:
        print(f"ok: {n_events} events checked, config errors checked")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
