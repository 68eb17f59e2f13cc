#!/usr/bin/env python3
"""The journald input on the host's own journal (no directory, no files: the local journal),
where one runs: `journalctl --header` reads it and systemd-cat can write to journald's
stdout socket. The daemon starts with `start_at: end`; a line written with systemd-cat
after that arrives once, with journald's fields (syslog identifier, priority, transport
stdout), and nothing older than the start does.

Skips (exit 77) where there is no running journald (a container whose PID 1 is not
systemd, as CI's): listed in t/skips.allowed."""
import os
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import journaltest as jt  # noqa: E402
import tailtest as tt  # noqa: E402

STDOUT_SOCKET = "/run/systemd/journal/stdout"


def live_journal():
    """None when the local journal can be read and written, else why not."""
    r = subprocess.run([jt.JOURNALCTL, "--header", "--no-pager"], capture_output=True,
                       text=True)
    if r.returncode != 0 or "File path:" not in r.stdout:
        return f"journalctl --header reads no local journal ({r.stderr.strip()[:200]})"
    if not os.path.exists(STDOUT_SOCKET):
        return f"no journald stdout socket ({STDOUT_SOCKET}): systemd-cat cannot write"
    r = subprocess.run(["systemd-cat", "-t", "logferry-probe", "true"], capture_output=True,
                       text=True)
    if r.returncode != 0:
        return f"systemd-cat fails: {r.stderr.strip()[:200]}"
    return None


def main():
    why = live_journal()
    if why:
        print(f"SKIP: {why}")
        return tt.SKIP
    c = tt.Checks()
    wd = tt.Workdir("jlive")
    cfg = jt.write_config(os.path.join(wd.root, "logferry.yml"), jt.config_text(
        wd.data, [{"id": "journal", "start_at": "end"}], jt.file_output(wd.out)))
    started = time.time()
    agent = tt.Agent(cfg, wd)
    c.check(tt.wait_stderr(agent, "daemon: following", 20), "the daemon starts")
    time.sleep(1)
    tag = f"logferry-live-{uuid.uuid4().hex[:12]}"
    line = f"live line {uuid.uuid4().hex} é"
    r = subprocess.run(["systemd-cat", "-t", tag, "-p", "notice", "echo", line],
                       capture_output=True)
    c.check(r.returncode == 0, "systemd-cat writes the line", r.stderr.decode(errors="replace"))

    def mine():
        return [e for e in tt.read_events(wd.out)
                if (e.get("journald") or {}).get("syslog_identifier") == tag]
    t0 = time.monotonic()
    tt.wait_for(lambda: mine(), 10, 0.1)
    dt = time.monotonic() - t0
    got = mine()
    c.check(len(got) == 1 and got[0]["message"] == line, "the line arrives once",
            f"{got}")
    if got:
        j = got[0]["journald"]
        c.check(j.get("priority") == 5 and j.get("priority_name") == "notice" and
                j.get("transport") == "stdout" and isinstance(j.get("pid"), int) and
                len(j.get("boot_id", "")) == 32, "with journald's fields", f"{j}")
        print(f"arrived {dt:.2f} s after systemd-cat returned")
    older = [e for e in tt.read_events(wd.out)
             if e.get("@timestamp", "") < jt.timestamp(int((started - 1) * 1e6))]
    c.check(not older, "start_at end: nothing from before the start", f"{older[:2]}")
    rc = agent.stop()
    c.check(rc == 0, "SIGTERM exits 0", f"rc={rc}")
    if c.failed == 0:
        wd.cleanup()
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
