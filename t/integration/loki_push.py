"""The loki output against the test receiver: the push JSON checked field by field. Events
are decoded by the ndjson stage so that labels can come from their fields; each request
goes to /loki/api/v1/push, gzip'd, with X-Scope-OrgID; each distinct label set is one
stream whose values are [nanosecond timestamp string, the event's JSON], ordered by time;
an unknown field renders empty; every line arrives once. tls.verify: false is warned about
at start, as for the http output."""
import datetime
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import tailtest as tt  # noqa: E402


def ms_of(stamp):
    t = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ")
    t = t.replace(tzinfo=datetime.timezone.utc)
    return int(t.timestamp() * 1000 + 0.5)


def main():
    c = tt.Checks()
    wd = tt.Workdir("loki")
    rx = ht.Receiver(os.path.join(wd.root, "rx"))
    try:
        spaces = ["shop", "pay\"ments", "caf\u00e9"]
        lines = [json.dumps({"kubernetes": {"namespace": spaces[i % 3]}, "n": i,
                             "msg": f"line {i} \\ \u2603"}, ensure_ascii=False)
                 for i in range(900)]
        ht.write_lines(wd.path("a.log"), lines)
        # Container logs carry their own times, here out of order: Loki wants them sorted.
        os.makedirs(os.path.join(wd.root, "pods"))
        pod = os.path.join(wd.root, "pods", "p.log")
        cri_secs = [5, 1, 4, 2, 3]
        with open(pod, "w") as f:
            for k in cri_secs:
                f.write(f"2026-01-01T00:00:0{k}.000000000Z stdout F pod line {k}\n")
        cfg = ht.write_config(
            wd, [f"url: {rx.url('')}", "tenant_id: team-a", "max_in_flight: 1",
                 "labels: {job: logferry, namespace: \"%{kubernetes.namespace}\", "
                 "input: \"in-%{input.id}\", missing: \"%{no.such.field}\"}"],
            inputs=[{"id": "app", "paths": [wd.path("*.log")],
                     "parsers": "[{ndjson: {target: \"\"}}]"},
                    {"id": "pods", "paths": [pod], "parsers": "[{container: {format: cri}}]"}],
            out_type="loki")
        rc, err = ht.run_once(cfg)
        c.check(rc == 0, "--once exits 0", f"rc {rc}: {err.strip()[-300:]}")
        reqs = rx.requests()
        c.check(reqs and all(r["path"] == "/loki/api/v1/push" and r["encoding"] == "gzip" and
                             r["content_type"] == "application/json" and
                             r["x_scope_orgid"] == "team-a" for r in reqs),
                "gzip JSON to /loki/api/v1/push with X-Scope-OrgID",
                str(reqs and {k: reqs[0][k] for k in ("path", "encoding", "x_scope_orgid")}))
        pushes = rx.accepted()
        got, pod_msgs, shape_ok, order_ok, ts_ok, label_ok = [], [], True, True, True, True
        for push in pushes:
            shape_ok &= list(push) == ["streams"] and isinstance(push["streams"], list)
            keys = [json.dumps(s["stream"], sort_keys=True) for s in push["streams"]]
            shape_ok &= len(keys) == len(set(keys))  # one stream per label set
            for s in push["streams"]:
                shape_ok &= sorted(s) == ["stream", "values"]
                stamps = [int(v[0]) for v in s["values"]]
                order_ok &= stamps == sorted(stamps)
                for ts, line in s["values"]:
                    shape_ok &= isinstance(ts, str) and ts.isdigit()
                    ev = json.loads(line)
                    ts_ok &= int(ts) // 1000000 == ms_of(ev["@timestamp"])
                    label_ok &= s["stream"] == {
                        "job": "logferry",
                        "namespace": ev.get("kubernetes", {}).get("namespace", ""),
                        "input": "in-" + ev["input"]["id"], "missing": ""}
                    if ev["input"]["id"] == "app":
                        got.append(ev)
                    else:
                        pod_msgs.append(ev["message"])
        c.check(pushes and shape_ok, "each push is {streams: [{stream, values: [[ts, line]]}]}, "
                "one stream per label set", f"{len(pushes)} pushes")
        c.check(label_ok, "labels render templates over the event's fields; unknown ones empty",
                str(pushes[0]["streams"][0]["stream"]) if pushes else "")
        c.check(ts_ok, "each value's timestamp is the event's @timestamp in nanoseconds")
        c.check(order_ok, "entries are ordered by time within each stream")
        want = [json.loads(l) for l in lines]
        c.check(sorted((e["n"], e["msg"]) for e in got) == sorted((w["n"], w["msg"]) for w in want),
                "every event arrives once, its fields intact", f"{len(got)} of {len(want)}")
        streams = {s["stream"]["namespace"] for p in pushes for s in p["streams"]
                   if s["stream"]["input"] == "in-app"}
        c.check(streams == set(spaces), "three namespaces make three streams", str(streams))
        c.check(pod_msgs == [f"pod line {k}" for k in sorted(cri_secs)],
                "a stream's entries are sorted by their own time, not by file order",
                str(pod_msgs))
        c.check("tls.verify is off" not in err, "no tls.verify warning by default", err[-300:])
        cfg = ht.write_config(wd, [f"url: {rx.url('')}", "tls: {verify: false}"], out_type="loki")
        rc, err = ht.run_once(cfg)
        c.check(rc == 0 and "output collector: tls.verify is off" in err,
                "tls.verify: false is warned about at start", f"rc {rc}: {err.strip()[-300:]}")

        # Labels that name no field: one stream per push, every event in it, still in time
        # order (these times are out of file order).
        os.makedirs(os.path.join(wd.root, "fixed"))
        fixed = os.path.join(wd.root, "fixed", "f.log")
        fixed_secs = [3, 9, 1, 7, 5, 2, 8, 4, 6]
        with open(fixed, "w") as f:
            for k in fixed_secs:
                f.write(f"2026-01-02T00:00:0{k}.000000000Z stdout F fixed {k}\n")
        n_before = len(rx.accepted())
        cfg = ht.write_config(wd, [f"url: {rx.url('')}", "compression: none",
                                   "labels: {job: web, env: \"prod\"}"],
                              inputs=[{"id": "fx", "paths": [fixed],
                                       "parsers": "[{container: {format: cri}}]"}],
                              out_type="loki")
        rc, err = ht.run_once(cfg)
        fixed_pushes = rx.accepted()[n_before:]
        streams = [s for p in fixed_pushes for s in p["streams"]]
        msgs = [json.loads(v[1])["message"] for s in streams for v in s["values"]]
        c.check(rc == 0 and fixed_pushes and all(len(p["streams"]) == 1 for p in fixed_pushes)
                and all(s["stream"] == {"job": "web", "env": "prod"} for s in streams),
                "labels without fields make one stream per push",
                f"rc {rc}, {[len(p['streams']) for p in fixed_pushes]} streams")
        c.check(msgs == [f"fixed {k}" for k in sorted(fixed_secs)],
                "its entries are sorted by their own time", str(msgs))
    finally:
        rx.stop()
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
