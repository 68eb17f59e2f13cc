#!/usr/bin/env python3
"""The syslog stage through the real binary.

1. `logferry --once` over one file of real lines (Debian rsyslog's traditional and
   high-precision formats, auth.log sshd/sudo/CRON lines, a kernel line, RFC 5424 with
   structured data and a BOM, a line that is not syslog, an invalid byte, an empty line)
   to an uncompressed file output: every event's members must be exactly the expected ones,
   @timestamp the line's own time where the line has a zone, else the read time.
2. The default config (conf/logferry.yml) with LOGFERRY_LOGS pointing at a directory laid
   out like /var/log: syslog and auth.log go through the syslog and timestamp parsers (their
   program name as a member, their own time, read in the machine's zone, as @timestamp),
   other .log files stay plain, and every file is read once."""
import datetime
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

LOGFERRY = os.environ.get("LOGFERRY", "./logferry")
SRCDIR = os.environ.get("LF_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))

AUTH = "Dec  1 00:08:01 web-1 sshd[812]: Accepted publickey for deploy from 198.51.100.7 port 52214 ssh2"
SUDO = ("Dec  1 00:10:42 web-1 sudo:    alice : TTY=pts/0 ; PWD=/home/alice ; USER=root ; "
        "COMMAND=/usr/bin/apt update")
CRON = "Dec  1 00:17:01 web-1 CRON[5120]: pam_unix(cron:session): session closed for user root"
KERN = "2026-12-01T00:08:01.123456+01:00 web-1 kernel: [   12.345678] e1000e: eno1 NIC Link is Up"
R5424 = ('<165>1 2026-11-30T22:14:15.003Z mymachine.example.com evntslog 77 ID47 '
         '[exampleSDID@32473 iut="3" eventSource="Application"][meta x="a\\"b"] '
         '\ufeffAn application event')
PLAIN = "this line is not syslog"
BADBYTE = b"Dec  1 00:08:01 web-1 app[7]: bad \xff byte"
LINES = [AUTH.encode(), SUDO.encode(), CRON.encode(), KERN.encode(), R5424.encode(),
         PLAIN.encode(), BADBYTE, b""]

NOT_SYSLOG = "syslog: no RFC 3164 or RFC 3339 time where the header starts"
DEB = {"hostname": "web-1"}
WANT = [
    (dict(DEB, message="Accepted publickey for deploy from 198.51.100.7 port 52214 ssh2",
          timestamp="Dec  1 00:08:01", appname="sshd", procid="812"), None),
    (dict(DEB, message="   alice : TTY=pts/0 ; PWD=/home/alice ; USER=root ; COMMAND=/usr/bin/apt update",
          timestamp="Dec  1 00:10:42", appname="sudo"), None),
    (dict(DEB, message="pam_unix(cron:session): session closed for user root",
          timestamp="Dec  1 00:17:01", appname="CRON", procid="5120"), None),
    (dict(DEB, message="[   12.345678] e1000e: eno1 NIC Link is Up", appname="kernel"),
     "2026-11-30T23:08:01.123Z"),
    ({"message": "An application event", "priority": 165,
      "facility": {"code": 20, "name": "local4"}, "severity": {"code": 5, "name": "notice"},
      "version": 1, "hostname": "mymachine.example.com", "appname": "evntslog", "procid": "77",
      "msgid": "ID47", "structured_data": {
          "exampleSDID@32473": {"iut": "3", "eventSource": "Application"},
          "meta": {"x": 'a"b'}}}, "2026-11-30T22:14:15.003Z"),
    ({"message": PLAIN, "error": {"message": NOT_SYSLOG}}, None),
    (dict(DEB, message="bad \ufffd byte", timestamp="Dec  1 00:08:01", appname="app",
          procid="7"), None),
    ({"message": "", "error": {"message": NOT_SYSLOG}}, None),
]

failed = 0


def check(ok, name, detail=""):
    global failed
    print(f"{'ok' if ok else 'FAIL'}: {name}" + (f" ({detail})" if detail and not ok else ""))
    failed += 0 if ok else 1


def events_of(paths, compressed):
    raw = b""
    for p in sorted(paths):
        if compressed:
            raw += subprocess.run(["zstd", "-dc", p], capture_output=True, check=True).stdout
        else:
            with open(p, "rb") as f:
                raw += f.read()
    return [json.loads(line) for line in raw.decode("utf-8").splitlines()]


def read_time_ok(ts, t0, t1):
    t = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
    return t0 - 1 <= t <= t1 + 1


def exact_members(root):
    src = os.path.join(root, "auth.log")
    with open(src, "wb") as f:
        f.write(b"\n".join(LINES) + b"\n")
    out = os.path.join(root, "out")
    conf = os.path.join(root, "syslog.yml")
    with open(conf, "w") as f:
        f.write(f"data_dir: {root}/data\n"
                f"inputs:\n  - id: sys\n    paths: [\"{src}\"]\n"
                "    parsers:\n      - syslog: {format: auto}\n"
                f"outputs:\n  - {{name: local, type: file, path: {out}, compression: none}}\n"
                "metrics: {listen: \"\"}\n")
    t0 = time.time()
    r = subprocess.run([LOGFERRY, "-c", conf, "--once"], capture_output=True, text=True)
    t1 = time.time()
    check(r.returncode == 0, "--once with the syslog parser exits 0", r.stderr.strip())
    events = events_of(glob.glob(os.path.join(out, "*.ndjson")), False)
    check(len(events) == len(WANT), f"{len(WANT)} lines give {len(WANT)} events", str(len(events)))
    offset = 0
    for i, (ev, (want, ts)) in enumerate(zip(events, WANT)):
        got = {k: v for k, v in ev.items() if k not in ("@timestamp", "log", "input", "host")}
        check(got == want, f"line {i}: members are exactly the expected ones",
              f"got {json.dumps(got)}\n  want {json.dumps(want)}")
        if ts is not None:
            check(ev["@timestamp"] == ts, f"line {i}: @timestamp is the line's own time",
                  ev["@timestamp"])
        else:
            check(read_time_ok(ev["@timestamp"], t0, t1), f"line {i}: @timestamp is the read time",
                  ev["@timestamp"])
        check(ev["log"] == {"file": {"path": src}, "offset": offset},
              f"line {i}: log.file.path and log.offset", json.dumps(ev["log"]))
        check(ev["input"] == {"id": "sys"}, f"line {i}: input.id is sys", json.dumps(ev["input"]))
        offset += len(LINES[i]) + 1


def rfc3164_instant(mon, day, hms, t_read):
    """The @timestamp a year-less local time gets: in the machine's zone (/etc/localtime, as
    the default config's `timezone: Local`), in the latest year that puts it at most a day
    after the time it was read."""
    h, m, sec = (int(x) for x in hms.split(":"))
    year = time.localtime(t_read).tm_year + 1
    while True:
        t = time.mktime((year, mon, day, h, m, sec, 0, 0, -1))
        if t <= t_read + 86400:
            break
        year -= 1
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.000Z")


def default_config(root):
    logs = os.path.join(root, "logs")
    os.makedirs(os.path.join(logs, "apt"))
    files = {
        "syslog": [CRON, KERN],
        "auth.log": [AUTH, SUDO],
        "dpkg.log": ["2026-12-01 00:08:01 status installed rsyslog:amd64 8.2302.0-1"],
        "apt/history.log": ["Start-Date: 2026-12-01  00:08:01"],
    }
    for name, lines in files.items():
        with open(os.path.join(logs, name), "w") as f:
            f.write("".join(line + "\n" for line in lines))
    env = dict(os.environ, LOGFERRY_LOGS=logs, LOGFERRY_DATA=os.path.join(root, "data"))
    conf = os.path.join(SRCDIR, "conf", "logferry.yml")
    t_read = time.time()
    r = subprocess.run([LOGFERRY, "-c", conf, "--once"], capture_output=True, text=True, env=env)
    check(r.returncode == 0, "--once on the default config exits 0", r.stderr.strip())
    events = events_of(glob.glob(os.path.join(root, "data", "out", "*.zst")), True)
    by_path = {}
    for ev in events:
        by_path.setdefault(os.path.relpath(ev["log"]["file"]["path"], logs), []).append(ev)
    check(sorted(by_path) == sorted(files), "every file is read",
          f"{sorted(by_path)}")
    for name, lines in files.items():
        got = by_path.get(name, [])
        check(len(got) == len(lines), f"{name}: read once ({len(lines)} events)", str(len(got)))
        syslog = name in ("syslog", "auth.log")
        for ev in got:
            want_input = "syslog" if syslog else "system"
            check(ev["input"]["id"] == want_input, f"{name}: input {want_input}", ev["input"]["id"])
            check(ev["fields"] == {"source": "logferry-default"}, f"{name}: fields kept",
                  json.dumps(ev.get("fields")))
            if not syslog:
                check("appname" not in ev and ev["message"] in lines, f"{name}: plain message",
                      ev["message"])
    sys_ev = {ev["appname"]: ev for ev in by_path.get("syslog", []) + by_path.get("auth.log", [])
              if "appname" in ev}
    check(sorted(sys_ev) == ["CRON", "kernel", "sshd", "sudo"],
          "syslog and auth.log lines carry their program name", str(sorted(sys_ev)))
    for app, (mon, day, hms) in (("sshd", (12, 1, "00:08:01")), ("sudo", (12, 1, "00:10:42")),
                                 ("CRON", (12, 1, "00:17:01"))):
        if app not in sys_ev:
            continue
        ev = sys_ev[app]
        want = rfc3164_instant(mon, day, hms, t_read)
        check(ev["@timestamp"] == want and "timestamp" not in ev and "error" not in ev,
              f"{app}: an RFC 3164 line's own time, in the machine's zone, is @timestamp",
              json.dumps(ev))
    if "sshd" in sys_ev:
        check(sys_ev["sshd"]["message"].startswith("Accepted publickey"),
              "an RFC 3164 line's text is the message", json.dumps(sys_ev["sshd"]))
    if "kernel" in sys_ev:
        check(sys_ev["kernel"]["@timestamp"] == "2026-11-30T23:08:01.123Z" and
              "error" not in sys_ev["kernel"],
              "a high-precision line sets @timestamp, with no error from the timestamp stage",
              json.dumps(sys_ev["kernel"]))


def main():
    with tempfile.TemporaryDirectory(prefix="lf-syslog-") as root:
        os.makedirs(os.path.join(root, "a"))
        os.makedirs(os.path.join(root, "b"))
        exact_members(os.path.join(root, "a"))
        default_config(os.path.join(root, "b"))
    print(f"{'FAILED' if failed else 'passed'}: {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
