#!/usr/bin/env python3
"""A journald input in /status and `logferry status`: its one entry is the cursor of the
last acknowledged entry and the count of entries acknowledged, the same the registry keeps
for it (device 0, inode 0): 40 entries written by systemd-journal-remote, read by the
agent, /status shows 40 acknowledged and the registry's cursor; after the agent stops,
`logferry status` prints that cursor from the registry alone."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import journaltest as jt  # noqa: E402
import tailtest as tt  # noqa: E402


def main():
    c, wd, _rng = jt.begin("jstatus")
    out = os.path.join(wd.root, "out")
    jdir = os.path.join(wd.root, "journal")
    boot = jt.Boot("c3" * 16, 1_700_600_000_000_000)
    jt.Journal(jdir).append(jt.numbered(boot, "entry", 0, 40, _SYSTEMD_UNIT="a.service"))
    cfg = jt.write_config(os.path.join(wd.root, "logferry.yml"), jt.config_text(
        wd.data, [{"id": "journal", "directory": jdir}], jt.file_output(out), metrics=True))
    a = tt.PipedAgent(cfg, wd, "jstatus")
    line = a.wait_log("metrics on http://", 30) or ""
    m = re.search(r"http://127\.0\.0\.1:(\d+)/metrics", line)
    c.check(m is not None, "the log says where metrics are served", line)
    c.check(tt.wait_events(out, 40, 30) == 40, "the 40 entries arrive")

    def entry():
        st, body = tt.http_get(f"http://127.0.0.1:{m.group(1)}/status") if m else (None, "")
        files = json.loads(body)["inputs"][0]["files"] if st == 200 else []
        return files[0] if len(files) == 1 else {}
    tt.wait_for(lambda: entry().get("acknowledged_entries") == 40, 10, 0.2)
    got = entry()
    reg = jt.journal_registry(wd.data, "journal")
    cursor = reg[0]["path"] if reg else None
    c.check(got.get("acknowledged_entries") == 40 and cursor and got.get("cursor") == cursor and
            cursor.startswith("b=" + "c3" * 16 + ";"),
            "/status: the journal's entry is the registry's cursor, 40 entries acknowledged",
            f"{json.dumps(got)} registry {reg}")
    c.check(a.stop() == 0, "SIGTERM exits 0", f"rc={a.rc}")
    run = subprocess.run([tt.LOGFERRY, "status", "-c", cfg], capture_output=True, text=True,
                         timeout=20)
    want = f"journal cursor {cursor}, 40 entries acked"
    c.check(run.returncode == 0 and re.search(r"^journal +" + re.escape(want) + "$", run.stdout,
                                              re.M) is not None,
            "`logferry status` with no agent prints the journal's cursor from the registry",
            f"rc={run.returncode} {run.stdout!r} {run.stderr!r}")
    sys.exit(jt.end(c, wd))


if __name__ == "__main__":
    main()
