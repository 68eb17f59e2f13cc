#!/usr/bin/env python3
"""A file input whose globs match nothing for a minute, on a host whose journal holds
entries, says once where the logs probably are: "no file matches PATH; this host logs to the
journal: see the journald input". An input that finds its files says nothing.

The journal here is one a journald input of the same config reads (journal files written by
systemd-journal-remote), since this machine runs no journald. Takes a little over a minute:
the hint waits that long on purpose (a glob may match a file that appears soon after the
start)."""
import os
import subprocess
import time

import tailtest as tt

REMOTE = "/lib/systemd/systemd-journal-remote"


def main():
    c = tt.Checks()
    if not os.access(REMOTE, os.X_OK):
        print(f"FAIL: {REMOTE} is missing (bootstrap.sh installs systemd-journal-remote)")
        raise SystemExit(1)
    wd = tt.Workdir("jhint")
    jdir = os.path.join(wd.root, "journal")
    os.makedirs(jdir)
    export = b"".join(b"__REALTIME_TIMESTAMP=%d\n__MONOTONIC_TIMESTAMP=%d\n"
                      b"_BOOT_ID=00112233445566778899aabbccddeeff\nMESSAGE=entry %d\n\n"
                      % (1700000000000000 + i, 1000 + i, i) for i in range(3))
    subprocess.run([REMOTE, "-o", os.path.join(jdir, "remote.journal"), "-"], input=export,
                   check=True, capture_output=True)
    present = wd.path("app.log")
    with open(present, "w") as f:
        f.write("line\n")
    missing = wd.path("syslog")
    cfg = tt.write_config(wd, [{"id": "syslog", "paths": [missing]},
                               {"id": "app", "paths": [present]}])
    text = open(cfg).read()
    journal_item = (f"  - id: journal\n    type: journald\n"
                    f"    directory: {tt.yaml_str(jdir)}\n")
    with open(cfg, "w") as f:
        f.write(text.replace("outputs:\n", journal_item + "outputs:\n", 1))
    agent = tt.Agent(cfg, wd)
    c.check(tt.wait_events(wd.out, 4, 20), "the file and the journal entries arrive")
    needle = (f"input syslog: no file matches {missing}; this host logs to the journal: see "
              "the journald input")
    t0 = time.monotonic()
    said = tt.wait_stderr(agent, needle, timeout=90)
    c.check(said, "the input that matches nothing points to the journal", agent.stderr()[-400:])
    c.check(time.monotonic() - t0 > 40, "not before the minute is up")
    time.sleep(2.5)  # two more scans
    log = agent.stderr()
    c.check(log.count(needle) == 1, "said once", str(log.count(needle)))
    c.check("input app: no file matches" not in log, "an input that found its file says nothing")
    c.check(agent.stop() == 0, "the daemon stops cleanly")
    wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
