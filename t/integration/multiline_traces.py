#!/usr/bin/env python3
"""The multiline presets and the "record starts with" pattern on real traces, through the
real binary: `logferry --preview` on each trace of t/data/multiline/ must give exactly the
record count of that folder's README.md, each event must be exactly its record's lines
joined by "\\n" with the first line's offset, and no event may begin with a line that
belongs inside a trace."""
import json
import os
import re
import subprocess
import sys
import tempfile

LOGFERRY = os.environ.get("LOGFERRY", "./logferry")
SRCDIR = os.environ.get("LF_SRCDIR", ".")
DATA = os.path.join(SRCDIR, "t", "data", "multiline")

ISO_T = r"^\d{4}-\d{2}-\d{2}T"
ISO_SP = r"^\d{4}-\d{2}-\d{2} "
GO_LOG = r"^\d{4}/\d{2}/\d{2} "
GO_LOG_OR_PANIC = r"^(\d{4}/\d{2}/\d{2} |panic:)"

# (file, multiline settings as YAML flow mapping, record start regex, events, never first)
CASES = [
    ("java.log", "{preset: java}", ISO_T, 60,
     ["\tat ", "Caused by:", "\t... ", "\tSuppressed:", "java.lang."]),
    ("python.log", "{preset: python}", ISO_SP, 60,
     ["  File ", "Traceback ", "During handling", "The above exception", "KeyError"]),
    ("ruby.log", "{preset: ruby}", ISO_T, 60, ["app.rb:", "/usr/lib/ruby/"]),
    ("go.log", "{preset: go}", GO_LOG_OR_PANIC, 66,
     ["goroutine ", "\t/", "main.", "created by "]),
    ("java.log", "{pattern: '%s', negate: true, match: after}" % ISO_T, ISO_T, 60, []),
    ("python.log", "{pattern: '%s', negate: true, match: after}" % ISO_SP, ISO_SP, 60, []),
    ("node.log", "{pattern: '%s', negate: true, match: after}" % ISO_T, ISO_T, 60,
     ["    at ", "  [cause]:"]),
    ("ruby.log", "{pattern: '%s', negate: true, match: after}" % ISO_T, ISO_T, 60, []),
    ("go.log", "{pattern: '%s', negate: true, match: after}" % GO_LOG, GO_LOG, 63, []),
    ("go.log", "{pattern: '%s', negate: true, match: after}" % GO_LOG_OR_PANIC,
     GO_LOG_OR_PANIC, 66, []),
]


def records(path, start):
    """The expected events: (offset, message) per record."""
    data = open(path, "rb").read().decode("utf-8")
    out = []
    offset = 0
    for line in data.split("\n")[:-1]:
        if not out or re.match(start, line):
            out.append([offset, [line]])
        else:
            out[-1][1].append(line)
        offset += len(line.encode("utf-8")) + 1
    return [(off, "\n".join(lines), len(lines) > 1) for off, lines in out]


def preview(tmp, conf, path):
    cfg = os.path.join(tmp, "ml.yml")
    with open(cfg, "w") as f:
        f.write("inputs:\n"
                "  - id: traces\n"
                "    paths: [%s]\n"
                "    parsers:\n"
                "      - multiline: %s\n"
                "outputs:\n"
                "  - {name: local, type: file, path: %s}\n" % (path, conf, tmp))
    res = subprocess.run([LOGFERRY, "-c", cfg, "--preview", "traces", path],
                         capture_output=True, timeout=60)
    if res.returncode != 0:
        sys.exit("FAIL: --preview %s with %s: exit %d: %s"
                 % (path, conf, res.returncode, res.stderr.decode(errors="replace")))
    return [json.loads(line) for line in res.stdout.decode("utf-8").splitlines()]


def main():
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, conf, start, want, never_first in CASES:
            path = os.path.join(DATA, name)
            events = preview(tmp, conf, path)
            expect = records(path, start)
            problems = []
            if len(events) != want:
                problems.append("%d events, want %d" % (len(events), want))
            if len(expect) != want:
                problems.append("the fixture has %d records, want %d" % (len(expect), want))
            for i, (ev, (off, msg, multi)) in enumerate(zip(events, expect)):
                flags = ev["log"].get("flags", [])
                if ev["message"] != msg or ev["log"]["offset"] != off:
                    problems.append("event %d: offset %d %r, want offset %d %r"
                                    % (i, ev["log"]["offset"], ev["message"][:60], off,
                                       msg[:60]))
                    break
                if ("multiline" in flags) != multi or "truncated" in flags:
                    problems.append("event %d: flags %s" % (i, flags))
                    break
            for ev in events:
                bad = [p for p in never_first if ev["message"].startswith(p)]
                if bad:
                    problems.append("an event starts with %r: %r" % (bad[0],
                                                                      ev["message"][:60]))
                    break
            status = "ok" if not problems else "FAIL"
            print("%s: %s %s: %d events" % (status, name, conf, len(events)))
            for p in problems:
                print("    " + p)
            failures += bool(problems)
    if failures:
        sys.exit("%d of %d cases failed" % (failures, len(CASES)))


if __name__ == "__main__":
    main()
