#!/usr/bin/env python3
"""What the syslog output puts in each message, checked in a real rsyslogd. One input of
JSON lines (decoded by the ndjson stage) goes to three syslog outputs:

- fields (tcp): facility local3, severity from the event's `level` (error, WARNING, debug,
  3, ... mapped; missing or unknown: the configured notice), APP-NAME from `service`
  (missing: the configured app_name), a fixed HOSTNAME. PRI = 19 * 8 + severity.
- asjson (tcp): format json: MSG is the whole event JSON, facility by number (16).
- dgram (udp): one datagram per event; a long line is cut to max_message_bytes at a UTF-8
  boundary and the cut is logged.
- nested (tcp): fields by dotted path: APP-NAME from meta.app (bytes outside printable
  ASCII become _), severity from the input's fields.sev.

The header's TIMESTAMP is the event's @timestamp (RFC 3339, milliseconds)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rsyslogtest as rt  # noqa: E402
import tailtest as tt  # noqa: E402

MAX_DGRAM = 600
# (level, expected severity) with the fallback notice (5) for missing and unknown levels.
LEVELS = [("error", 3), ("WARNING", 4), ("warn", 4), ("info", 6), ("debug", 7), ("fatal", 2),
          ("3", 3), ("trace", 7), ("emerg", 0), ("loud", 5), (None, 5), ("Critical", 2)]
SERVICES = ["api", "billing", None]


def events():
    evs = []
    for i in range(36):
        level, sev = LEVELS[i % len(LEVELS)]
        service = SERVICES[i % len(SERVICES)]
        obj = {"message": f"event {i:03d} with ünïcödé"}
        if level is not None:
            obj["level"] = level if level != "3" else 3
        if service is not None:
            obj["service"] = service
        if i % 4 == 1:
            obj["meta"] = {"app": "my app ü", "x": [1, {"app": "no"}]}
        elif i % 4 == 2:
            obj["meta"] = {"x": {"app": "no"}, "app": "deep.app"}
        evs.append((obj, sev, service or "fallback-app"))
    long_msg = "long " + "日" * 400 + " end"  # three-byte characters across the cut
    evs.append(({"message": long_msg, "level": "info"}, 6, "fallback-app"))
    return evs


def main():
    rt.require_rsyslogd()
    c = tt.Checks()
    wd = tt.Workdir("syslog-fields")
    tcp_port = rt.free_port()
    udp_port = rt.free_port(rt.socket.SOCK_DGRAM)
    rs = rt.Rsyslog(wd.root, tcp_port=tcp_port, udp_port=udp_port)
    rs.start()
    evs = events()
    log = wd.path("app.log")
    with open(log, "w", encoding="utf-8") as f:
        f.write("".join(json.dumps(o, ensure_ascii=False) + "\n" for o, _, _ in evs))
    config = rt.write_config(wd, log, f"""\
  - name: fields
    type: syslog
    address: 127.0.0.1:{tcp_port}
    facility: local3
    severity: notice
    severity_field: level
    app_name: fallback-app
    app_name_field: service
    hostname: fields-host
    timeout: 5s
  - name: asjson
    type: syslog
    address: 127.0.0.1:{tcp_port}
    format: json
    facility: 16
    app_name: jsonout
    hostname: json-host
    timeout: 5s
  - name: dgram
    type: syslog
    protocol: udp
    address: 127.0.0.1:{udp_port}
    app_name: udpout
    hostname: udp-host
    max_message_bytes: {MAX_DGRAM}
  - name: nested
    type: syslog
    address: 127.0.0.1:{tcp_port}
    app_name_field: meta.app
    severity_field: fields.sev
    hostname: nested-host
""", input_extra="""    fields: {sev: warning}
    parsers:
      - ndjson: {target: ""}
""")
    n = len(evs)
    agent = tt.Agent(config, wd)
    try:
        tt.wait_for(lambda: rs.count() >= 4 * n, 20)
    finally:
        rc = agent.stop()
        rs.stop()
    c.check(rc == 0, "the agent stops cleanly", f"exit {rc}")
    recs = rs.lines()
    by_host = {}
    for r in recs:
        by_host.setdefault(r[0], []).append(r)

    fields = by_host.get("fields-host", [])
    c.check(len(fields) == n, "tcp output fields: every event arrives once", f"{len(fields)}")
    want = [(str(19 * 8 + sev), app, o["message"]) for o, sev, app in evs]
    got = [(r[2], r[1], r[4]) for r in fields]
    c.check(got == want, "PRI is local3 with the severity mapped from level (fallback notice), "
            "APP-NAME comes from service (fallback app_name)", rt.first_difference(want, got))

    asjson = by_host.get("json-host", [])
    c.check(len(asjson) == n, "format json: every event arrives once", f"{len(asjson)}")
    decoded = []
    for r in asjson:
        try:
            decoded.append(json.loads(r[4]))
        except ValueError:
            decoded.append(None)
    c.check(all(isinstance(d, dict) for d in decoded), "format json: each MSG is a JSON object")
    ok = all(d is not None and d.get("message") == o["message"] and d.get("level") == o.get("level")
             and d.get("input", {}).get("id") == "app"
             and d.get("log", {}).get("file", {}).get("path") == log
             for d, (o, _, _) in zip(decoded, evs))
    c.check(ok and len(decoded) == n, "format json: MSG carries the event: message, decoded "
            "fields, input id and file path")
    c.check({(r[1], r[2]) for r in asjson} == {("jsonout", str(16 * 8 + 6))},
            "format json: APP-NAME jsonout, PRI local0.info (134)",
            f"{sorted({(r[1], r[2]) for r in asjson})}")
    stamps_ok = all(d is not None and r[3] == d.get("@timestamp") for r, d in zip(asjson, decoded))
    c.check(stamps_ok, "the header TIMESTAMP is the event's @timestamp, RFC 3339 with ms",
            f"{asjson[0][3] if asjson else ''} vs "
            f"{decoded[0].get('@timestamp') if decoded and decoded[0] else ''}")

    dgram = by_host.get("udp-host", [])
    c.check(len(dgram) == n, "udp: every datagram arrives on loopback", f"{len(dgram)}")
    short = [r[4] for r in dgram[:-1]]
    c.check(short == [o["message"] for o, _, _ in evs[:-1]],
            "udp: messages arrive byte-identical, in order")
    if dgram:
        cut = dgram[-1][4]
        full = evs[-1][0]["message"]
        head = f"<14>1 {dgram[-1][3]} udp-host udpout - - - "
        size = len(head.encode()) + len(cut.encode())
        c.check(full.startswith(cut) and "\ufffd" not in cut and len(cut) < len(full),
                "udp: a long message is cut at a UTF-8 character boundary",
                f"{len(cut.encode())} of {len(full.encode())} bytes")
        c.check(MAX_DGRAM - 2 <= size <= MAX_DGRAM,
                "udp: the cut datagram fills max_message_bytes and no more", f"{size} bytes")
    c.check("cut to fit a datagram" in agent.stderr(), "udp: the cut is logged")

    nested = by_host.get("nested-host", [])
    apps = {"my app ü": "my_app___", "deep.app": "deep.app", None: "logferry"}
    want = [(str(8 + 4), apps[o.get("meta", {}).get("app")], o["message"]) for o, _, _ in evs]
    got = [(r[2], r[1], r[4]) for r in nested]
    c.check(got == want, "dotted fields: APP-NAME from meta.app made printable, severity "
            "from the input's fields.sev", rt.first_difference(want, got))
    rt.finish(c, wd, [agent], rs)


if __name__ == "__main__":
    main()
