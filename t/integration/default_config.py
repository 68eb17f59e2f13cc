#!/usr/bin/env python3
"""The shipped config (conf/logferry.yml, the package's /etc/logferry/logferry.yml) reads a
host's system logs once: the journal where journald keeps one (/run/log/journal exists),
rsyslog's files only where it does not, never both.

1. As written: a journald input on the local journal (no directory, no files), and the
   syslog input's skip_if_exists is /run/log/journal once ${...} is expanded without
   LOGFERRY_LOGS (not /var/log/journal, which Debian's systemd package creates even where
   journald never runs); the journal input's path never exists then.
2. LOGFERRY_LOGS=DIR (a copy of a host's /var/log) through --once: DIR's syslog and
   auth.log are read by the syslog input, the local journal is left alone (the journal
   input says it reads nothing), and every line arrives once.
3. The same tree with DIR/log/journal, the stand-in for /run/log/journal: the syslog input
   reads nothing and says so, the other files are still read."""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml

LOGFERRY = os.environ.get("LOGFERRY", "./logferry")
SRCDIR = os.environ.get("LF_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
CONF = os.path.join(SRCDIR, "conf", "logferry.yml")
failed = 0


def check(ok, what, detail=""):
    global failed
    print(("ok: " if ok else "FAIL: ") + what + ("" if ok else f": {detail}"))
    if not ok:
        failed += 1


def expand(v, env):
    return re.sub(r"\$\{(\w+)(?::-([^}]*))?\}",
                  lambda m: env.get(m.group(1)) or (m.group(2) or ""), v)


def as_written():
    conf = yaml.safe_load(open(CONF))
    inputs = {i["id"]: i for i in conf["inputs"]}
    journal = inputs.get("journal", {})
    check(journal.get("type") == "journald" and "directory" not in journal
          and "files" not in journal, "the journal input reads the local journal", str(journal))
    env = {k: v for k, v in os.environ.items() if k != "LOGFERRY_LOGS"}
    skip = [expand(p, env) for p in inputs.get("syslog", {}).get("skip_if_exists", [])]
    check(skip == ["/run/log/journal"],
          "the syslog input reads nothing where /run/log/journal exists", str(skip))
    jskip = [expand(p, env) for p in journal.get("skip_if_exists", [])]
    check(all(not os.path.exists(p) for p in jskip),
          "without LOGFERRY_LOGS the journal input's skip path does not exist", str(jskip))
    others = [i["id"] for i in conf["inputs"] if i["id"] not in ("journal", "syslog")
              and i.get("skip_if_exists")]
    check(not others, "no other input is switched off", str(others))


def once(root, logs):
    data = os.path.join(root, "data")
    env = dict(os.environ, LOGFERRY_LOGS=logs, LOGFERRY_DATA=data)
    r = subprocess.run([LOGFERRY, "-c", CONF, "--once"], capture_output=True, text=True,
                       env=env, timeout=120)
    events = []
    for path in sorted(glob.glob(os.path.join(data, "out", "*.zst"))):
        out = subprocess.run(["zstdcat", path], capture_output=True, text=True).stdout
        events += [json.loads(line) for line in out.splitlines() if line.strip()]
    return r, events


def tree(root):
    logs = os.path.join(root, "logs")
    os.makedirs(logs)
    files = {"syslog": ["Dec  1 00:17:01 web-1 CRON[5120]: session closed for user root"],
             "auth.log": ["Dec  1 00:08:01 web-1 sshd[812]: Accepted publickey for deploy"],
             "dpkg.log": ["2026-12-01 00:08:01 status installed rsyslog:amd64 8.2302.0-1"]}
    for name, lines in files.items():
        with open(os.path.join(logs, name), "w") as f:
            f.write("".join(line + "\n" for line in lines))
    return logs


def by_input(events):
    got = {}
    for ev in events:
        got.setdefault(ev["input"]["id"], []).append(os.path.basename(ev["log"]["file"]["path"]))
    return {k: sorted(v) for k, v in got.items()}


def rsyslog_host(root):
    logs = tree(root)
    r, events = once(root, logs)
    check(r.returncode == 0, "no journal: --once on the default config exits 0", r.stderr[-400:])
    check(by_input(events) == {"syslog": ["auth.log", "syslog"], "system": ["dpkg.log"]},
          "no journal: rsyslog's files through the syslog input, once each",
          json.dumps(by_input(events)))
    check(f"input journal: reads nothing: {logs} exists (skip_if_exists)" in r.stderr,
          "LOGFERRY_LOGS leaves this machine's journal alone, and says so", r.stderr[-400:])


def journal_host(root):
    logs = tree(root)
    os.makedirs(os.path.join(logs, "log", "journal"))
    r, events = once(root, logs)
    check(r.returncode == 0, "a journal: --once on the default config exits 0", r.stderr[-400:])
    check(by_input(events) == {"system": ["dpkg.log"]},
          "a journal: rsyslog's files are not read, the others are",
          json.dumps(by_input(events)))
    check(f"input syslog: reads nothing: {logs}/log/journal exists (skip_if_exists)"
          in r.stderr, "the syslog input says why it reads nothing", r.stderr[-400:])


def main():
    as_written()
    for host in (rsyslog_host, journal_host):
        with tempfile.TemporaryDirectory(prefix="lf-defconf-") as root:
            host(root)
    print(f"{'FAILED' if failed else 'passed'}: {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
