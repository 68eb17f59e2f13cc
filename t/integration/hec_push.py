"""The splunk_hec output against the stand-in HEC (hec_receiver.py), `logferry --once`: a
few hundred lines decoded by the ndjson stage arrive as HEC event objects, checked field by
field (time from @timestamp with microseconds, host.name as host, index, source and sourcetype rendered
from templates, the configured fields as flat strings, the event whole); gzip'd,
concatenated JSON objects, to /services/collector/event with "Authorization: Splunk" and
never the token in the log. Then with compression: none, a busy HEC (503 code 9, twice) is
waited out, and an event HEC refuses (400 code 6 with its invalid-event-number) goes to the
dead letters alone with HEC's text as the reason, the events before it counted as taken,
the ones after it sent again: each other line stored exactly once. --once with ack: true
ends once every ackId is indexed."""
import datetime
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hectest  # noqa: E402
import httptest as ht  # noqa: E402
import tailtest as tt  # noqa: E402

TOKEN = "11111111-2222-3333-4444-SECRET5555"


def seconds_of(stamp):
    t = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ")
    return t.replace(tzinfo=datetime.timezone.utc).timestamp()


def roundtrip(c, wd, hec):
    spaces = ["shop", "pay\"ments", None]
    lines = [json.dumps({"kubernetes": {"namespace": spaces[i % 3]}, "n": i,
                         "msg": f"line {i} \\ \u2603"},
                        ensure_ascii=False) for i in range(300)]
    ht.write_lines(wd.path("a.log"), lines)
    env = dict(os.environ, HEC_TOKEN=TOKEN)
    cfg = hectest.config(wd, hec, [
        "token: ${HEC_TOKEN}", "index: \"app-%{input.id}\"", "sourcetype: \"logferry:json\"",
        "source: \"%{log.file.path}\"", "fields: [kubernetes.namespace, n, no.such.field]"],
        inputs=[{"id": "app", "paths": [wd.path("*.log")],
                 "parsers": "[{ndjson: {target: \"\"}}]"}])
    rc, err = ht.run_once(cfg, env=env)
    c.check(rc == 0, "--once exits 0", f"rc {rc}: {err.strip()[-300:]}")
    reqs = hec.requests()
    c.check(reqs and all(r["path"] == "/services/collector/event" and r["encoding"] == "gzip" and
                         r["content_type"] == "application/json" and r["status"] == 200
                         for r in reqs),
            "gzip'd JSON to /services/collector/event, the token taken",
            str(reqs[:1]))
    c.check(len(reqs) >= 3 and max(r["events"] for r in reqs) > 1,
            "one request per batch of concatenated event objects",
            str([r["events"] for r in reqs]))
    stored = [r["obj"] for r in hec.stored()]
    by_n = {o["event"]["n"]: o for o in stored}
    c.check(len(stored) == len(lines) and sorted(by_n) == list(range(len(lines))),
            "every line arrives once", f"{len(stored)} of {len(lines)}")
    bad = []
    for i, line in enumerate(lines):
        o, want = by_n.get(i), json.loads(line)
        if o is None:
            continue
        ev = o["event"]
        fields = {"n": str(i)}
        if spaces[i % 3] is not None:
            fields["kubernetes.namespace"] = spaces[i % 3]
        checks = {
            "event": all(ev.get(k) == v for k, v in want.items()) and "@timestamp" in ev,
            "time": isinstance(o["time"], float) and
            -1e-6 < o["time"] - seconds_of(ev["@timestamp"]) < 1e-3,  # @timestamp shows ms
            "host": o.get("host") == ev["host"]["name"] != "",
            "index": o.get("index") == "app-app",
            "sourcetype": o.get("sourcetype") == "logferry:json",
            "source": o.get("source") == wd.path("a.log"),
            "fields": o.get("fields") == fields,
            "keys": set(o) == {"time", "host", "index", "sourcetype", "source", "fields",
                               "event"},
        }
        bad += [f"{i}: {k}: {json.dumps(o)[:300]}" for k, ok in checks.items() if not ok]
    c.check(stored and not bad, "time, host, index, source, sourcetype, fields and event field by field",
            "; ".join(bad[:3]))
    c.check(TOKEN not in err, "the token never shows in the log")


def refusals(c, wd, hec):
    for f in os.listdir(wd.logs):
        os.unlink(wd.path(f))
    lines = hectest.lines("refusal", 50)
    lines[20] = "BAD_DATA " + lines[20]
    ht.write_lines(wd.path("b.log"), lines)
    hec.control(busy=2)
    before = len(hec.stored())
    cfg = hectest.config(wd, hec, [f"token: {TOKEN}", "compression: none",
                                   "backoff: {initial: 100ms, max: 200ms}"],
                         batch="flush_interval: 100ms, max_events: 500")
    rc, err = ht.run_once(cfg)
    c.check(rc == 0, "--once exits 0 through 503s and a refused event", f"rc {rc}: {err[-300:]}")
    reqs = hec.requests()
    c.check([r["code"] for r in reqs[-4:]] == [9, 9, 6, 0] and reqs[-1]["encoding"] == "",
            "503 code 9 twice, then 400 code 6, then the rest taken (plain bodies)",
            str([(r["status"], r["code"], r.get("events")) for r in reqs[-4:]]))
    got = [r["obj"]["event"]["message"] for r in hec.stored()[before:]]
    want = lines[:20] + lines[21:]
    c.check(got == want, "every line but the refused one stored once, in order",
            f"{len(got)} stored; missing {set(want) - set(got)}")
    dl = ht.dead_letters(wd.data)
    c.check(len(dl) == 1 and dl[0]["event"]["message"] == lines[20] and dl[0]["status"] == 400
            and "Invalid data format (HEC code 6)" in dl[0]["reason"],
            "the refused event alone is dead-lettered, HEC's text as the reason",
            str([(d["event"]["message"], d["reason"]) for d in dl]))
    c.check("Server is busy (HEC code 9); will retry" in err and "dead letters" in err,
            "the 503 and the refusal are logged", err[-400:])


def once_with_ack(c, wd):
    """--once with ack: true exits only once every batch's ackId is indexed."""
    hec = hectest.Hec(os.path.join(wd.root, "rx-ack"), TOKEN, ack=True)
    try:
        for f in os.listdir(wd.logs):
            os.unlink(wd.path(f))
        lines = hectest.lines("once-ack", 120)
        ht.write_lines(wd.path("c.log"), lines)
        hec.control(ack_delay=0.5)
        cfg = hectest.config(wd, hec, [f"token: {TOKEN}", "ack: true", "ack_interval: 100ms"])
        rc, err = ht.run_once(cfg)
        polls = [r for r in hec.requests() if r["path"] == "/services/collector/ack"]
        acked = sorted(i for p in polls for i in p.get("acked", []))
        ids = sorted(r["ack_id"] for r in hec.requests() if "ack_id" in r)
        c.check(rc == 0 and sorted(hec.messages()) == lines and acked == ids and len(ids) >= 2,
                "--once with ack: true exits 0 once every ackId is indexed",
                f"rc {rc}, {len(hec.messages())} stored, acked {acked} of {ids}: {err[-200:]}")
    finally:
        hec.stop()


def main():
    c = tt.Checks()
    wd = tt.Workdir("hec-push")
    hec = hectest.Hec(os.path.join(wd.root, "rx"), TOKEN)
    try:
        roundtrip(c, wd, hec)
        refusals(c, wd, hec)
        once_with_ack(c, wd)
    finally:
        hec.stop()
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
