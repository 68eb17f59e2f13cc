#!/usr/bin/env python3
"""The regex, access_log and fields stages through the real binary: `logferry --preview` on
real files (an nginx combined log with IPv6 clients, escaped quotes, `-` fields, a raw
invalid byte and lines that are not access logs; an application log) must give exactly the
events written out below, in order; a pattern PCRE2 refuses must stop the run with exit 2
and `FILE:LINE:COL: ... PCRE2's message at offset N`."""
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

LOGFERRY = os.environ.get("LOGFERRY", "./logferry")

ACCESS = (
    b'203.0.113.9 - - [30/Nov/2026:13:55:36 +0100] "GET /index.html?q=1 HTTP/1.1" 200 2326 '
    b'"https://example.com/start" "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 '
    b'Firefox/120.0"\n'
    b'2001:db8::7 - ann [30/Nov/2026:13:55:37 +0100] "POST /api/v1/login HTTP/2.0" 401 - "-" '
    b'"curl/8.4.0 \\"quoted\\""\n'
    b'::1 - - [30/Nov/2026:13:55:38 +0000] "GET /caf\xff HTTP/1.1" 404 0 "" "-"\n'
    b'this is not an access log line\n'
    b'\n'
)

APP = (
    b"2026-11-30 12:00:01.123 ERROR [db] timeout after 5000 ms\n"
    b"2026-11-30 12:00:02.007 INFO [web] GET /health 200 in 12 ms\n"
    b"2026-11-30 12:00:03.500 DEBUG [web] cache warm\n"
    b"--- not a record ---\n"
)

# where each line of ACCESS starts
OFF = [sum(len(l) + 1 for l in ACCESS.split(b"\n")[:i]) for i in range(5)]


def log(path, offset):
    return {"file": {"path": path}, "offset": offset}


def want_access(path):
    """The events of ACCESS under access_log + fields, without @timestamp for the lines
    that keep the read time (None there)."""
    return [
        ("2026-11-30T12:55:36.000Z", {
            "message": ACCESS.split(b"\n")[0].decode(),
            "log": log(path, OFF[0]),
            "source": {"address": "203.0.113.9"},
            "http": {"request": {"method": "GET", "referrer": "https://example.com/start"},
                     "version": "1.1",
                     "response": {"status_code": 200, "body": {"bytes": 2326}}},
            "url": {"original": "/index.html?q=1"},
            "user_agent": {"original": "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) "
                                       "Gecko/20100101 Firefox/120.0"},
            "client": {"ip": "203.0.113.9"},
            "labels": {"env": "prod"},
        }),
        ("2026-11-30T12:55:37.000Z", {
            "message": ACCESS.split(b"\n")[1].decode(),
            "log": log(path, OFF[1]),
            "source": {"address": "2001:db8::7"},
            "user": {"name": "ann"},
            "http": {"request": {"method": "POST"}, "version": "2.0",
                     "response": {"status_code": 401, "body": {"bytes": 0}}},
            "url": {"original": "/api/v1/login"},
            "user_agent": {"original": 'curl/8.4.0 "quoted"'},
            "client": {"ip": "2001:db8::7"},
            "labels": {"env": "prod"},
        }),
        ("2026-11-30T13:55:38.000Z", {
            "message": '::1 - - [30/Nov/2026:13:55:38 +0000] "GET /caf\ufffd HTTP/1.1" 404 0 "" "-"',
            "log": log(path, OFF[2]),
            "source": {"address": "::1"},
            "http": {"request": {"method": "GET", "referrer": ""}, "version": "1.1",
                     "response": {"status_code": 404, "body": {"bytes": 0}}},
            "url": {"original": "/caf\ufffd"},
            "client": {"ip": "::1"},
            "labels": {"env": "prod"},
        }),
        (None, {
            "message": "this is not an access log line",
            "log": log(path, OFF[3]),
            "error": {"message": "access_log: the line is not in combined log format"},
            "labels": {"env": "prod"},
        }),
        (None, {
            "message": "",
            "log": log(path, OFF[4]),
            "error": {"message": "access_log: the line is not in combined log format"},
            "labels": {"env": "prod"},
        }),
    ]


def want_app(path):
    return [
        {"message": "timeout after 5000 ms", "log": log(path, 0),
         "app": {"ts": "2026-11-30 12:00:01.123", "level": "ERROR", "component": "db"}},
        {"message": "GET /health 200 in 12 ms", "log": log(path, 57),
         "app": {"ts": "2026-11-30 12:00:02.007", "level": "INFO", "component": "web",
                 "status": 200, "ms": 12}},
    ]


def run(cfg, input_id, path):
    return subprocess.run([LOGFERRY, "-c", cfg, "--preview", input_id, path],
                          capture_output=True, timeout=60)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def main():
    failures = 0

    def check(what, got, want):
        nonlocal failures
        if got != want:
            failures += 1
            print("FAIL: %s\n  got  %r\n  want %r" % (what, got, want))

    with tempfile.TemporaryDirectory() as tmp:
        access = os.path.join(tmp, "access.log")
        app = os.path.join(tmp, "app.log")
        with open(access, "wb") as f:
            f.write(ACCESS)
        with open(app, "wb") as f:
            f.write(APP)
        cfg = os.path.join(tmp, "p.yml")
        write(cfg,
              "inputs:\n"
              "  - id: web\n"
              "    paths: [%s]\n"
              "    parsers:\n"
              "      - access_log: {format: combined}\n"
              "      - fields: {rename: {source.ip: client.ip}, add: {labels.env: prod}}\n"
              "  - id: app\n"
              "    paths: [%s]\n"
              "    parsers:\n"
              "      - regex:\n"
              "          pattern: '^(?<ts>\\S+ \\S+) (?<level>[A-Z]+) \\[(?<component>\\w+)\\]"
              " (?<message>(?:GET \\S+ (?<status:int>\\d+) in (?<ms>\\d+) ms|.*))$'\n"
              "          target: app\n"
              "          types: {ms: int}\n"
              "      - regex: {pattern: '^(?<lvl>INFO|ERROR)$', field: app.level,"
              " on_failure: drop}\n"
              "      - fields: {drop: [lvl], rename: {app.message: message}}\n"
              "outputs:\n"
              "  - {name: local, type: file, path: %s}\n" % (access, app, tmp))

        started = time.time()
        res = run(cfg, "web", access)
        check("web: exit", res.returncode, 0)
        events = [json.loads(l) for l in res.stdout.decode("utf-8").splitlines()]  # keeps order
        want = want_access(access)
        check("web: events", len(events), len(want))
        for i, (ev, (ts, members)) in enumerate(zip(events, want)):
            got_ts = ev.pop("@timestamp")
            if ts is not None:
                check("web[%d]: @timestamp" % i, got_ts, ts)
            else:
                read = datetime.datetime.strptime(got_ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                    tzinfo=datetime.timezone.utc).timestamp()
                check("web[%d]: @timestamp is the time read" % i, abs(read - started) < 120, True)
            ev.pop("host", None)
            members["input"] = {"id": "web"}
            check("web[%d]" % i, json.dumps(ev), json.dumps(members))

        res = run(cfg, "app", app)
        check("app: exit", res.returncode, 0)
        events = [json.loads(l) for l in res.stdout.decode("utf-8").splitlines()]  # keeps order
        want = want_app(app)
        check("app: events (DEBUG and the non-record dropped)", len(events), len(want))
        for i, (ev, members) in enumerate(zip(events, want)):
            ev.pop("@timestamp")
            ev.pop("host", None)
            members["input"] = {"id": "app"}
            check("app[%d]" % i, json.dumps(ev), json.dumps(members))

        bad = os.path.join(tmp, "bad.yml")
        write(bad,
              "inputs:\n"
              "  - id: app\n"
              "    paths: [%s]\n"
              "    parsers:\n"
              "      - regex: {pattern: '^(?<ts:int>\\d+) (?<lvl>[A-Z+)'}\n"
              "outputs:\n"
              "  - {name: local, type: file, path: %s}\n" % (app, tmp))
        res = run(bad, "app", app)
        check("bad pattern: exit", res.returncode, 2)
        check("bad pattern: message", res.stderr.decode(),
              "%s:5:9: inputs[0].parsers[0]: regex: invalid pattern: missing terminating ] "
              "for character class at offset 29\n" % bad)
        check("bad pattern: no events", res.stdout, b"")

    if failures:
        sys.exit(1)
    print("PASS: regex, access_log and fields through --preview")


if __name__ == "__main__":
    main()
