#!/usr/bin/env python3
"""The kafka output against a real protocol peer (librdkafka's mock cluster, 3 brokers):
10,000 lines from 3 files through `logferry --once` arrive once each, one message per
event, the payload being the event's JSON line byte for byte, keyed by file and in file
order; --once exits 0 once every message is acknowledged; a `%{field}` topic routes events
by input id and by a field a stage added (kubernetes.namespace from the ndjson stage); a
client option librdkafka refuses is reported without its (secret) value."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kafkatest as kt  # noqa: E402
import tailtest as tt  # noqa: E402

LINES = 10000


def line_text(f, i):
    # quotes, backslashes, tabs, non-ASCII and an astral character: all must survive
    # the JSON encoding into the payload and back
    return f'{f}-{i:05d} level=info msg="quoted \\ back" tab\there é漢😀 ' + "x" * (i % 50)


def backfill(c, wd, mc):
    files = {}
    for n, name in enumerate(["a.log", "b.log", "c.log"]):
        path = wd.path(name)
        count = LINES // 3 + (1 if n < LINES % 3 else 0)
        files[path] = [line_text(name[0], i) for i in range(count)]
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in files[path]))
    out = kt.kafka_output("bus", mc.brokers, "logs", key="%{log.file.path}")
    config = kt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}], [out])
    rc, err, secs = kt.run_once(config, wd)
    c.check(rc == 0, "--once exits 0 when every message is acknowledged",
            f"rc {rc}, {secs:.1f} s: {err[-400:]}")
    msgs = mc.dump("logs", os.path.join(wd.root, "logs.dump"))
    evs = kt.events(msgs)
    kt.check_once_in_order(c, files, evs, "10,000 lines from 3 files")
    # the payload is exactly the event's JSON as logferry encodes it: compact, one line
    sample = msgs[0]["payload"]
    c.check(sample == json.dumps(json.loads(sample), ensure_ascii=False,
                                 separators=(",", ":")).encode(),
            "the payload is the event's compact JSON line, without its newline",
            sample[:100].decode("utf-8", "replace"))
    keys_ok = all(ev["_key"] == ev["log"]["file"]["path"].encode() for ev in evs)
    c.check(keys_ok, "each message is keyed by its file's path (key: %{log.file.path})")
    parts = {}
    for ev in evs:
        parts.setdefault(ev["log"]["file"]["path"], set()).add(ev["_partition"])
    c.check(all(len(p) == 1 for p in parts.values()),
            "a key's events share one partition (so a file's order holds)",
            ", ".join(f"{os.path.basename(k)}: {sorted(v)}" for k, v in parts.items()))
    print(f"figure: {LINES} events into the mock cluster in {secs:.2f} s "
          f"({LINES / secs:.0f} events/s, --once wall time, ASan build)")


def routing(c, wd, mc):
    web = wd.path("web", "access.log")
    db = wd.path("db", "query.log")
    pods = wd.path("pods", "app.log")
    for p in (web, db, pods):
        os.makedirs(os.path.dirname(p), exist_ok=True)
    web_lines = [f"GET /{i}" for i in range(300)]
    db_lines = [f"SELECT {i}" for i in range(200)]
    ns_of = ["shop", "billing", "shop", ""]  # "" leaves the field out: renders empty
    pod_lines = []
    for i in range(400):
        # a key holding dots, and a value with escapes and non-ASCII: the message key
        doc = {"message": f"pod line {i}",
               "labels": {"app.kubernetes.io/name": f"caf\u00e9 \"{i % 3}\"\t"}}
        if ns_of[i % 4]:
            doc["kubernetes"] = {"namespace": ns_of[i % 4]}
        pod_lines.append(json.dumps(doc))
    for path, lines in ((web, web_lines), (db, db_lines), (pods, pod_lines)):
        with open(path, "w") as f:
            f.write("".join(line + "\n" for line in lines))
    outs = [kt.kafka_output("by_input", mc.brokers, "in-%{input.id}",
                            extra={"compression": "gzip"}),
            kt.kafka_output("by_ns", mc.brokers, "ns-%{kubernetes.namespace}",
                            key="%{labels.app.kubernetes.io/name}",
                            extra={"compression": "none"})]
    inputs = [{"id": "web", "paths": [web], "outputs": "[by_input]"},
              {"id": "db", "paths": [db], "outputs": "[by_input]"},
              {"id": "pods", "paths": [pods], "outputs": "[by_ns]",
               "parsers": "[{ndjson: {target: \"\"}}]"}]
    wd.data = os.path.join(wd.root, "data-routing")
    config = kt.write_config(wd, inputs, outs)
    rc, err, secs = kt.run_once(config, wd)
    c.check(rc == 0, "routing: --once exits 0", f"rc {rc}: {err[-400:]}")

    keys = {}

    def messages(topic):
        evs = kt.events(mc.dump(topic, os.path.join(wd.root, topic)))
        for ev in evs:
            keys[ev["message"]] = ev["_key"]
        return [ev["message"] for ev in evs]
    got_web = messages("in-web")
    got_db = messages("in-db")
    c.check(sorted(got_web) == sorted(web_lines), "topic in-%{input.id}: input web's events only",
            f"{len(got_web)} of {len(web_lines)}")
    c.check(sorted(got_db) == sorted(db_lines), "topic in-%{input.id}: input db's events only",
            f"{len(got_db)} of {len(db_lines)}")
    for ns in ("shop", "billing", ""):
        want = sorted(f"pod line {i}" for i in range(400) if ns_of[i % 4] == ns)
        got = sorted(messages(f"ns-{ns}"))
        c.check(got == want, f"topic ns-%{{kubernetes.namespace}}: namespace {ns or '(absent)'} "
                f"goes to ns-{ns}", f"{len(got)} of {len(want)}")
    bad = [(i, keys.get(f"pod line {i}")) for i in range(400)
           if keys.get(f"pod line {i}") != f'caf\u00e9 "{i % 3}"\t'.encode()]
    c.check(not bad, "key %{labels.app.kubernetes.io/name}: a dotted key's value, unescaped",
            f"{len(bad)} wrong, first {bad[:1]}")


def secrets(c, wd, mc):
    """A value from the environment that librdkafka refuses is not repeated in the error."""
    secret = "s3cr3t-Value-91"
    out = kt.kafka_output("bus", mc.brokers, "logs",
                          extra={"librdkafka": "{security.protocol: \"${LF_KAFKA_SECRET}\"}"})
    wd.data = os.path.join(wd.root, "data-secret")
    config = kt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}], [out])
    os.environ["LF_KAFKA_SECRET"] = secret
    rc, err, secs = kt.run_once(config, wd)
    del os.environ["LF_KAFKA_SECRET"]
    c.check(rc not in (0, None) and "security.protocol" in err,
            "a refused librdkafka option stops the start, naming the property",
            f"rc {rc}: {err.strip()[-200:]}")
    c.check(secret not in err, "the refused value, from ${ENV}, is not in the error")


def main():
    c = tt.Checks()
    wd = tt.Workdir("kafka-out")
    mc = kt.MockCluster(wd)
    try:
        t0 = time.monotonic()
        backfill(c, wd, mc)
        routing(c, wd, mc)
        secrets(c, wd, mc)
        print(f"took {time.monotonic() - t0:.1f} s")
    finally:
        mc.close()
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
