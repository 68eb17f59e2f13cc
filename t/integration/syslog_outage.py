#!/usr/bin/env python3
"""rsyslogd goes away for 10 s in the middle of a run over syslog TCP, then comes back on
the same port: nothing is lost. The file starts with a backlog the agent is still
streaming at full speed when rsyslogd stops (so bytes are in flight and in rsyslogd's
socket buffer, unread, as it closes), and grows at a steady pace throughout. Lines
written while it is down wait in the agent; batches not yet acknowledged when the
connection broke are sent again, so some lines may arrive twice (at-least-once:
duplicates are allowed and counted, never losses). First arrivals keep the file's order,
the outage and the reconnection are logged, and the registry reaches the end."""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rsyslogtest as rt  # noqa: E402
import tailtest as tt  # noqa: E402

BACKLOG = 150000      # lines in the file at start
LINES = 2000          # then appended...
CHUNK = 25            # ...this many per write
PERIOD = 0.1          # ...every 0.1 s: 250 lines/s, 8 s in all
DOWN_FOR = 10.0


def main():
    rt.require_rsyslogd()
    c = tt.Checks()
    wd = tt.Workdir("syslog-outage")
    port = rt.free_port()
    rs = rt.Rsyslog(wd.root, tcp_port=port)
    rs.start()
    lines = [f"{i:06d} backlog line " + "x" * (i % 97) for i in range(BACKLOG)]
    lines += [f"{i:06d} steady stream line " + "x" * (i % 97) for i in range(LINES)]
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

    def writer():
        with open(log, "a") as f:
            for i in range(BACKLOG, BACKLOG + LINES, CHUNK):
                f.write("".join(m + "\n" for m in lines[i:i + CHUNK]))
                f.flush()
                time.sleep(PERIOD)

    t = threading.Thread(target=writer)
    try:
        tt.wait_for(lambda: rs.count() >= BACKLOG // 3, 30, step=0.01)
        t.start()
        rs.stop()
        stopped = time.monotonic()
        before = rs.count()
        c.check(0 < before < BACKLOG, "rsyslogd stops while the agent streams the backlog",
                f"{before} of {BACKLOG} received before")
        time.sleep(DOWN_FOR)
        rs.start()
        print(f"rsyslogd down for {time.monotonic() - stopped:.1f} s")
        t.join()
        size = os.path.getsize(log)

        def all_acked():
            return [r["offset"] for r in tt.read_registry(wd.data) or []] == [size]
        c.check(tt.wait_for(all_acked, 25), "the registry reaches the end of the file")
    finally:
        t.join()
        agent.stop()
        rs.stop()
    got = [r[4] for r in rs.lines()]
    missing, dups, order_breaks = tt.compare_streams(lines, got)
    c.check(not missing, "nothing is lost over the outage",
            f"{len(missing)} missing, first {missing[:2]}")
    print(f"duplicates (allowed: sent again after the connection broke): {dups}")
    c.check(order_breaks == 0, "first arrivals keep the file's order", f"{order_breaks} breaks")
    c.check(len(got) == len(lines) + dups, "nothing arrives that was not written",
            f"{len(got)} received")
    err = agent.stderr()
    c.check(f"connect 127.0.0.1:{port}: Connection refused" in err,
            "the refused reconnections are logged")
    c.check(f"output relay: connected to 127.0.0.1:{port} again" in err,
            "the reconnection is logged")
    rt.finish(c, wd, [agent], rs)


if __name__ == "__main__":
    main()
