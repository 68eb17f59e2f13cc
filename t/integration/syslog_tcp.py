#!/usr/bin/env python3
"""The syslog output over TCP into a real rsyslogd: 5,000 lines (ASCII, UTF-8, spaces at
either end, up to 3 KB) arrive once each, byte-identical, in order, with the configured
HOSTNAME, the default APP-NAME (logferry) and PRI (user.info = 14); the registry reaches
the end of the file, so every batch was acknowledged."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rsyslogtest as rt  # noqa: E402
import tailtest as tt  # noqa: E402

LINES = 5000


def line(i):
    kinds = [
        lambda: f"{i:05d} plain ascii line with [brackets] and \"quotes\" and \\backslash",
        lambda: f"{i:05d} utf-8: héllo wörld, 日本語のログ, emoji \U0001F680 done",
        lambda: f"  {i:05d} two leading spaces and two trailing  ",
        lambda: f"{i:05d} long " + "abcdefghij" * (50 + i % 250),
        lambda: f"{i:05d} - - - looks like a header <13>1 2020-01-01T00:00:00Z h a - - -",
    ]
    return kinds[i % len(kinds)]()


def main():
    rt.require_rsyslogd()
    c = tt.Checks()
    wd = tt.Workdir("syslog-tcp")
    port = rt.free_port()
    rs = rt.Rsyslog(wd.root, tcp_port=port)
    rs.start()
    lines = [line(i) for i in range(LINES)]
    log = wd.path("app.log")
    with open(log, "w", encoding="utf-8") as f:
        f.write("".join(m + "\n" for m in lines[:LINES // 2]))
    config = rt.write_config(wd, log, f"""\
  - name: relay
    type: syslog
    address: 127.0.0.1:{port}
    protocol: tcp
    hostname: test-host
    timeout: 5s
""", max_events=700)
    agent = tt.Agent(config, wd)
    try:
        tt.wait_for(lambda: rs.count() >= LINES // 2, 20)
        with open(log, "a", encoding="utf-8") as f:
            f.write("".join(m + "\n" for m in lines[LINES // 2:]))
        tt.wait_for(lambda: rs.count() >= LINES, 30)
        size = os.path.getsize(log)
        acked = tt.wait_for(
            lambda: [r["offset"] for r in tt.read_registry(wd.data) or []] == [size], 10)
        c.check(acked, "the registry reaches the end: every batch was acknowledged")
    finally:
        rc = agent.stop()
        rs.stop()
    c.check(rc == 0, "the agent stops cleanly", f"exit {rc}")
    recs = rs.lines()
    got = [r[4] for r in recs]
    c.check(len(got) == LINES, "rsyslogd received 5,000 messages", f"{len(got)}")
    c.check(got == lines, "each message arrives once, byte-identical, in order",
            rt.first_difference(lines, got))
    heads = {(r[0], r[1], r[2]) for r in recs}
    c.check(heads == {("test-host", "logferry", "14")},
            "HOSTNAME, APP-NAME and PRI are the configured ones", f"{sorted(heads)[:3]}")
    errors = [ln for ln in agent.stderr().splitlines() if "error" in ln.lower()]
    c.check(not errors, "the agent logs no errors", "; ".join(errors[:3]))
    rt.finish(c, wd, [agent], rs)


if __name__ == "__main__":
    main()
