#!/usr/bin/env python3
"""rsyslogd goes away for 10 s in the middle of a run over syslog TCP, then comes back on
the same port (outage.py): nothing is lost. The file starts with a backlog the agent is still
streaming at full speed when rsyslogd stops (so bytes are in flight and in rsyslogd's
socket buffer, unread, as it closes), and grows at a steady pace throughout. Lines
written while it is down wait in the agent; batches not yet acknowledged when the
connection broke are sent again, so some lines may arrive twice (at-least-once:
duplicates are allowed and counted, never losses). First arrivals keep the file's order,
the outage and the reconnection are logged, and the registry reaches the end."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import outage  # noqa: E402
import rsyslogtest as rt  # noqa: E402
import tailtest as tt  # noqa: E402

BACKLOG = 150000      # lines in the file at start; then 3,000 more at a steady pace


def main():
    rt.require_rsyslogd()
    c = tt.Checks()
    wd = tt.Workdir("syslog-outage")
    port = rt.free_port()
    rs = rt.Rsyslog(wd.root, tcp_port=port)
    rs.start()
    lines = [f"{i:06d} backlog line " + "x" * (i % 97) for i in range(BACKLOG)]
    steady = outage.lines("syslog")
    lines += steady
    log = wd.path("app.log")
    with open(log, "w") as f:
        f.write("".join(m + "\n" for m in lines[:BACKLOG]))
    config = rt.write_config(wd, log, f"""\
  - name: relay
    type: syslog
    address: 127.0.0.1:{port}
    timeout: 3s
    backoff: {{initial: 200ms, max: 2s}}
""")
    agent = tt.Agent(config, wd)
    before = []

    def down():
        rs.stop()
        before.append(rs.count())
    try:
        outage.through(c, log, steady, down, rs.start, lead_s=0,
                       ready=lambda: rs.count() >= BACKLOG // 3)
        c.check(0 < before[0] < BACKLOG, "rsyslogd stops while the agent streams the backlog",
                f"{before[0]} of {BACKLOG} received before")
        size = os.path.getsize(log)

        def all_acked():
            return [r["offset"] for r in tt.read_registry(wd.data) or []] == [size]
        c.check(tt.wait_for(all_acked, 25), "the registry reaches the end of the file")
    finally:
        agent.stop()
        rs.stop()
    got = [r[4] for r in rs.lines()]
    # batches not acknowledged when the connection broke are sent again: copies allowed
    outage.check_arrived(c, lines, got, copies_ok=True, order=True)
    err = agent.stderr()
    c.check(f"connect 127.0.0.1:{port}: Connection refused" in err,
            "the refused reconnections are logged")
    c.check(f"output relay: connected to 127.0.0.1:{port} again" in err,
            "the reconnection is logged")
    rt.finish(c, wd, [agent], rs)


if __name__ == "__main__":
    main()
