"""The otlp output against the stand-in collector (otlp_collector.py), protobuf then JSON:
every record checked field by field against the line it came from. Lines are decoded by the
ndjson stage; `level` is the severity field; the kubernetes.* members of four pods make
four resources, each written once per request with host.name, the configured
service.name (from ${ENV}) and its k8s.* attributes, which are then not repeated as record
attributes; nested objects arrive as kvlists, arrays as arrays, numbers as int or double;
log.file.path and log.offset are dotted attributes; trace.id and span_id of hex digits are
the record's trace and span ids (bytes, or lowercase hex in JSON), a trace_id that is not
stays an attribute; the body is the line. Requests are
POSTed to the configured URL, gzip'd by default, zstd'd with compression: zstd (the
collector decodes it by its Content-Encoding), plain with compression: none."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import tailtest as tt  # noqa: E402

LEVELS = [("INFO", 9), ("warn", 13), ("Warning", 13), ("ERR", 17), ("debug", 5),
          ("TRACE", 1), ("fatal", 21), ("critical", 21), ("chatty", 0)]
PODS = [("shop", "cart-1", "cart", "u-1"), ("shop", "cart-2", "cart", "u-2"),
        ("pay", "api-0", "api", "u-3"), ("pay", "api-0", "sidecar", "u-3")]


def make_lines(n):
    lines = []
    for i in range(n):
        ns, pod, ctr, uid = PODS[i % len(PODS)]
        ev = {"level": LEVELS[i % len(LEVELS)][0], "n": i, "msg": f"line {i} \"q\" \\ \u2603\t",
              "big": 2 ** 53 + i, "neg": -i, "ratio": i / 4 + 0.5, "ok": i % 2 == 0,
              "nothing": None, "arr": [i, "x", True, None, 1.5, {"k": "v"}],
              "nested": {"a": {"b": i, "c": [1, 2]}, "d": "e"}, "empty": {},
              "kubernetes": {"namespace": ns, "pod": {"name": pod, "uid": uid},
                             "container": {"name": ctr}, "node": {"name": "node-1"},
                             "labels": {"app": ctr}}}
        if i % 3 == 0:  # ECS's trace.id and a flat span_id become the record's ids
            ev["trace"] = {"id": f"{i:032x}".replace("0", "A", 1)}
            ev["span_id"] = f"{i + 1:016x}"
        elif i % 3 == 1:  # not an id: an attribute as it stands
            ev["trace_id"] = "not-hex"
        lines.append(json.dumps(ev, ensure_ascii=False))
    return lines


def expected_attrs(ev, path, offset):
    a = {k: v for k, v in ev.items() if k not in ("level", "kubernetes", "trace", "span_id")}
    a["kubernetes"] = {"labels": ev["kubernetes"]["labels"]}
    a["input"] = {"id": "app"}
    a["log.file.path"] = path
    a["log.offset"] = offset
    return a


def run(c, wd, rx, encoding, compression, lines):
    path = wd.path("a.log")
    ht.write_lines(path, lines)
    out = [f"url: {rx.url('/v1/logs')}", "severity_field: level", "max_in_flight: 2",
           "resource: {service.name: \"${OTLP_SERVICE}\", deployment.environment: test}"]
    if encoding:
        out.append(f"encoding: {encoding}")
    if compression:
        out.append(f"compression: {compression}")
    cfg = ht.write_config(wd, out, out_type="otlp",
                          inputs=[{"id": "app", "paths": [path],
                                   "parsers": "[{ndjson: {target: \"\"}}]"}],
                          batch="flush_interval: 100ms, max_events: 97")
    tag = f"{encoding or 'protobuf'}/{compression or 'gzip'}"
    t0 = time.time_ns()
    rc, err = ht.run_once(cfg, env=dict(os.environ, OTLP_SERVICE="shop-api"))
    t1 = time.time_ns()
    c.check(rc == 0, f"{tag}: --once exits 0", f"rc {rc}: {err.strip()[-300:]}")
    reqs = rx.requests()
    ctype = "application/json" if encoding == "json" else "application/x-protobuf"
    c.check(reqs and all(r["path"] == "/v1/logs" and r["status"] == 200 and
                         r["content_type"] == ctype and
                         r["encoding"] == ("" if compression == "none" else compression or "gzip")
                         for r in reqs),
            f"{tag}: each request is a {ctype} POST to the configured URL, decoded cleanly",
            str(reqs[:1]))
    offsets, at = [], 0
    for l in lines:
        offsets.append(at)
        at += len(l.encode()) + 1
    by_n, res_ok, once_ok, ts_ok, field_errs = {}, True, True, True, []
    for req in rx.accepted():
        keys = [json.dumps(rl["resource"], sort_keys=True) for rl in req["resourceLogs"]]
        once_ok &= len(keys) == len(set(keys))
        for rl in req["resourceLogs"]:
            ra = rl["resource"]["attributes"]
            res_ok &= (len(rl["scopeLogs"]) == 1 and
                       rl["scopeLogs"][0]["scope"].get("name") == "logferry" and
                       ra.get("service.name") == "shop-api" and
                       ra.get("deployment.environment") == "test" and
                       isinstance(ra.get("host.name"), str) and ra["host.name"] != "")
            for rec in rl["scopeLogs"][0]["logRecords"]:
                ev = json.loads(rec["body"])
                n = ev["n"]
                by_n.setdefault(n, []).append(rec)
                ns, pod, ctr, uid = PODS[n % len(PODS)]
                want_res = {"k8s.namespace.name": ns, "k8s.pod.name": pod,
                            "k8s.container.name": ctr, "k8s.pod.uid": uid,
                            "k8s.node.name": "node-1"}
                if any(ra.get(k) != v for k, v in want_res.items()):
                    field_errs.append(f"{n}: resource {ra}")
                src = json.loads(lines[n])
                ids = (src.get("trace", {}).get("id", "").lower() or None, src.get("span_id"))
                if (rec.get("traceId"), rec.get("spanId")) != ids:
                    field_errs.append(f"{n}: ids {rec.get('traceId')}/{rec.get('spanId')}, "
                                      f"want {ids}")
                text, num = LEVELS[n % len(LEVELS)]
                if (rec["severityText"], rec["severityNumber"]) != (text, num):
                    field_errs.append(f"{n}: severity {rec['severityText']}/"
                                      f"{rec['severityNumber']}, want {text}/{num}")
                want = expected_attrs(json.loads(lines[n]), path, offsets[n])
                got = dict(rec["attributes"])
                host = got.pop("host", None)
                if got != want or host not in (None, {}):
                    field_errs.append(f"{n}: attributes {got} (host {host}), want {want}")
                ts_ok &= t0 - 10**9 <= rec["timeUnixNano"] <= rec["observedTimeUnixNano"] <= t1
    c.check(not field_errs, f"{tag}: every record's severity, attributes and resource are as "
            "mapped", "; ".join(field_errs[:3]))
    c.check(sorted(by_n) == list(range(len(lines))) and all(len(v) == 1 for v in by_n.values()),
            f"{tag}: every line arrives once, as its record's body",
            f"{len(by_n)} of {len(lines)}")
    c.check(res_ok, f"{tag}: resources carry service.name from ${{ENV}}, the fixed attributes, "
            "host.name and one scope 'logferry'")
    c.check(once_ok, f"{tag}: each resource is written once per request")
    c.check(ts_ok, f"{tag}: timeUnixNano is the event's time, observedTimeUnixNano the "
            "encoding's, later")
    return len(reqs)


def check_config(c):
    """--test-config refuses a resource value that is not a scalar, naming where."""
    wd = tt.Workdir("otlp-check")
    try:
        cfg = ht.write_config(wd, ["url: http://127.0.0.1:4318/v1/logs",
                                   "resource: {service.name: shop, team: {a: 1}}"],
                              out_type="otlp")
        r = subprocess.run([tt.LOGFERRY, "-c", cfg, "--test-config"], capture_output=True,
                           timeout=30)
        err = r.stdout.decode() + r.stderr.decode()
        c.check(r.returncode == 2 and
                "outputs[0].resource: team: expected a string, a number or a bool" in err,
                "--test-config refuses a resource value that is an object", err.strip())
    finally:
        wd.cleanup()


def main():
    c = tt.Checks()
    check_config(c)
    lines = make_lines(300)
    for encoding, compression in (("", ""), ("json", ""), ("", "none"), ("", "zstd")):
        wd = tt.Workdir("otlp-" + (encoding or "pb") + (compression or ""))
        rx = ht.Receiver(os.path.join(wd.root, "rx"), script="otlp_collector.py")
        try:
            n = run(c, wd, rx, encoding, compression, lines)
            c.check(n >= 3, "the lines went in several batches", f"{n} requests")
        finally:
            rx.stop()
            wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
