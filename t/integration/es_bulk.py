"""The elasticsearch output against es_receiver.py, which answers _bulk per item as
Elasticsearch does. `--once`: every event is created once, with `create` actions, in the
index named by strftime on its @timestamp (UTC), gzip bodies, and as _id the file's stream
id (16 hex digits, as the registry saved it) followed by the event's log.offset in hex;
items answered 429 are sent again alone; a mapping error goes to the dead letters with its
reason. Run again with the registry's offsets back at 0 (as a crash after delivery and
before the registry write leaves them; the file's stream id, saved before reading, stays):
every item carries the _id it had, is answered 409 and counts as delivered, nothing is
doubled. Two inputs reading one file are two streams: each line is indexed once per
input, under ids of its own."""
import datetime
import os
import shutil
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import tailtest as tt  # noqa: E402

API_KEY = "VnVhQ2ZHY0JDZGJrU-SECRET"


def main():
    c = tt.Checks()
    wd = tt.Workdir("es-bulk")
    rx = ht.Receiver(os.path.join(wd.root, "rx"), script="es_receiver.py")
    docs_path = os.path.join(rx.dir, "docs.jsonl")
    reqs_path = os.path.join(rx.dir, "requests.jsonl")
    try:
        lines = [f"es {i} \u00e9 \"q\"" for i in range(600)]
        lines[17] = "bad one MAPPING_ERROR"
        lines[420] = "bad two MAPPING_ERROR"
        ht.write_lines(wd.path("a.log"), lines)
        rx.control(reject=5)
        env = dict(os.environ, LF_TEST_KEY=API_KEY)
        cfg = ht.write_config(wd, [f"url: {rx.url('/')}", "index: \"logs-%Y.%m.%d\"",
                                   "pipeline: my-pipe", "api_key: \"${LF_TEST_KEY}\"",
                                   "max_in_flight: 1", "backoff: {initial: 100ms, max: 200ms}"],
                              out_type="elasticsearch")
        rc, err = ht.run_once(cfg, env=env)
        c.check(rc == 0, "--once exits 0", f"rc {rc}: {err.strip()[-300:]}")
        docs = ht.read_jsonl(docs_path)
        good = [l for l in lines if "MAPPING_ERROR" not in l]
        got = [d["source"]["message"] for d in docs]
        c.check(sorted(got) == sorted(good), "every event but the two refused is created once",
                f"{len(got)} docs for {len(good)} lines")
        c.check(all(d["index"] == datetime.datetime.strptime(
            d["source"]["@timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").strftime("logs-%Y.%m.%d")
            for d in docs), "each event is in the index of its @timestamp's UTC day",
            docs[0]["index"] if docs else "")
        ids = [d["id"] for d in docs]
        reg = [r for r in tt.read_registry(wd.data) or [] if r["input"] == "app"]
        stream = reg[0]["stream"] if len(reg) == 1 else None
        c.check(stream is not None and len(stream) == 16 and
                all(d["id"] == stream + format(d["source"]["log"]["offset"], "x")
                    for d in docs) and len(set(ids)) == len(ids),
                "each _id is the file's stream id (16 hex digits) and the event's offset in hex",
                f"stream {stream}, first ids {ids[:2]}")
        reqs = ht.read_jsonl(reqs_path)
        want_query = {"pipeline": ["my-pipe"],
                      "filter_path": ["errors,items.*.status,items.*.error,error,status"]}
        c.check(reqs and all(r["encoding"] == "gzip" and
                             urllib.parse.parse_qs(r["query"]) == want_query and
                             r["authorization"] == "ApiKey " + API_KEY and
                             r["content_type"] == "application/x-ndjson" for r in reqs),
                "gzip bodies to /_bulk?pipeline=my-pipe, the answer filtered, with the API key",
                str(reqs[0] and {k: v for k, v in reqs[0].items() if k != "items"}))
        c.check(all(i["action"] == "create" for r in reqs for i in r["items"]),
                "every action is create")
        rejected = [i["id"] for i in reqs[0]["items"] if i["status"] == 429] if reqs else []
        second = [i["id"] for i in reqs[1]["items"]] if len(reqs) > 1 else []
        c.check(len(rejected) == 5 and second == rejected,
                "the five items answered 429 are sent again, and only they",
                f"{len(rejected)} rejected, {len(second)} resent")
        dead = ht.dead_letters(wd.data)
        c.check(sorted(d["event"]["message"] for d in dead) ==
                ["bad one MAPPING_ERROR", "bad two MAPPING_ERROR"] and
                all(d["status"] == 400 and d["reason"].startswith("mapper_parsing_exception: ")
                    and d["output"] == "collector" for d in dead),
                "the mapping errors are in the dead letters with status and reason",
                str(dead[0]["reason"][:80]) if dead else "none")
        c.check(API_KEY not in err and "SECRET" not in err, "the API key never shows in stderr")

        # A crash before the offsets reached the registry: everything is read and sent again.
        ht.rewind_registry(wd.data)
        shutil.rmtree(os.path.join(wd.data, "dead_letters"))
        n_reqs = len(reqs)
        rc, err = ht.run_once(cfg, env=env)
        reqs = ht.read_jsonl(reqs_path)[n_reqs:]
        statuses = [i["status"] for r in reqs for i in r["items"]]
        resent = {i["id"] for r in reqs for i in r["items"] if i["status"] == 409}
        c.check(rc == 0, "a second run from offset 0 exits 0", f"rc {rc}: {err.strip()[-200:]}")
        c.check(resent == set(ids), "each resent event carries the _id it was created with",
                f"{len(resent & set(ids))} of {len(ids)} ids the same")
        c.check(statuses.count(409) == len(good) and
                len(ht.read_jsonl(docs_path)) == len(good),
                "every resent create is answered 409 and nothing is doubled",
                f"{statuses.count(409)} conflicts, {len(ht.read_jsonl(docs_path))} docs")
        dead = ht.dead_letters(wd.data)
        c.check(len(dead) == 2 and all("MAPPING_ERROR" in d["event"]["message"] for d in dead),
                "a 409 is a delivery, not a refusal: only the mapping errors are dead letters",
                f"{len(dead)} dead letters written by the second run")

        # Four requests in flight, some items rejected: every event still once.
        more = [f"parallel {i}" for i in range(5000)]
        ht.write_lines(wd.path("b.log"), more)
        rx.control(reject=40)
        cfg = ht.write_config(wd, [f"url: {rx.url('')}", "index: \"par-%Y\"", "max_in_flight: 4",
                                   "backoff: {initial: 50ms, max: 100ms}"],
                              out_type="elasticsearch")
        rc, err = ht.run_once(cfg)
        par = [d["source"]["message"] for d in ht.read_jsonl(docs_path)
               if d["index"].startswith("par-")]
        c.check(rc == 0 and sorted(par) == sorted(more),
                "with four requests in flight and rejected items every event is created once",
                f"rc {rc}, {len(par)} of {len(more)}")

        # Two inputs over one file: two streams, each line indexed once per input.
        twin = [f"twin {i}" for i in range(300)]
        twin_log = os.path.join(wd.root, "twin.log")
        ht.write_lines(twin_log, twin)
        cfg = ht.write_config(wd, [f"url: {rx.url('')}", "index: twin", "compression: none"],
                              inputs=[{"id": "one", "paths": [twin_log]},
                                      {"id": "two", "paths": [twin_log]}],
                              out_type="elasticsearch")
        rc, err = ht.run_once(cfg)
        tdocs = [d for d in ht.read_jsonl(docs_path) if d["index"] == "twin"]
        by_input = {}
        for d in tdocs:
            by_input.setdefault(d["source"]["input"]["id"], []).append(d["source"]["message"])
        tids = {d["id"] for d in tdocs}
        c.check(rc == 0 and sorted(by_input.get("one", [])) == sorted(twin) and
                sorted(by_input.get("two", [])) == sorted(twin) and len(tids) == 2 * len(twin)
                and len({i[:16] for i in tids}) == 2,
                "two inputs reading one file index each line twice, under distinct ids",
                f"rc {rc}, {len(tdocs)} docs, {len(tids)} ids")

        # Container logs carry their own time: the index follows it, not the clock.
        os.makedirs(os.path.join(wd.root, "cri"))
        cri = os.path.join(wd.root, "cri", "pod.log")
        with open(cri, "w") as f:
            f.write("2020-01-02T23:59:59.900000000Z stdout F before midnight\n"
                    "2020-01-03T00:00:00.100000000Z stdout F after midnight\n")
        cfg = ht.write_config(wd, [f"url: {rx.url('')}", "index: \"cri-%Y.%m.%d\"",
                                   "compression: none", "document_id: none"],
                              inputs=[{"id": "pods", "paths": [cri],
                                       "parsers": "[{container: {format: cri}}]"}],
                              out_type="elasticsearch")
        rc, err = ht.run_once(cfg)
        by_msg = {d["source"]["message"]: d for d in ht.read_jsonl(docs_path)
                  if d["index"].startswith("cri-")}
        c.check(rc == 0 and by_msg.get("before midnight", {}).get("index") == "cri-2020.01.02"
                and by_msg.get("after midnight", {}).get("index") == "cri-2020.01.03",
                "the index is strftime of each event's own @timestamp, in UTC",
                str({m: d["index"] for m, d in by_msg.items()}))
        last = ht.read_jsonl(reqs_path)[-1]
        c.check(last["encoding"] == "" and all(i["id"].startswith("auto-") for i in last["items"]),
                "compression: none sends plain bodies; document_id: none lets the server pick ids")
    finally:
        rx.stop()
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
