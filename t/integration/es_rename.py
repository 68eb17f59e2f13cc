#!/usr/bin/env python3
"""document_id: auto across a rotation by rename and a crash. The agent ships app.log to
es_receiver.py, the file is renamed to app.log.1 mid-run (a new app.log follows), and the
agent is SIGKILLed before its registry reached disk (registry flush_interval: 1h). The next
run reads both files again from the start, app.log.1 under its new path: every resent
create carries the _id its event had before the rename, is answered 409, and no document is
stored twice.

Then the same file is shipped twice with --once, its registry offset set back to 0 in
between (as a crash after delivery and before the registry write leaves it; the file's
stream id stays): first to elasticsearch alone (batches encoded as events are added, without
their messages), then to elasticsearch and a console with `format: text` (batches that keep
messages): the _ids do not depend on that, so the second run creates nothing.

Every file here repeats its lines' text (an _id that ignored the offset would merge them),
and the rotated file and its successor share offsets (an _id that ignored the stream would
merge those): es_receiver.py records a 409 that refuses another event than the one stored
as a clash, and there must be none."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import tailtest as tt  # noqa: E402


def batch_modes(c, wd, rx, docs_path, reqs_path):
    log = wd.path("modes.log")
    ht.write_lines(log, [f"mode line {i % 7}" for i in range(300)])
    out = [f"url: {rx.url('/')}", "max_in_flight: 1"]
    inputs = [{"id": "modes", "paths": [log]}]
    wd.data = os.path.join(wd.root, "data-modes")
    cfg = ht.write_config(wd, out, inputs=inputs, out_type="elasticsearch")
    n_docs = len(ht.read_jsonl(docs_path))
    rc, err = ht.run_once(cfg)
    c.check(rc == 0 and len(ht.read_jsonl(docs_path)) == n_docs + 300,
            "modes: elasticsearch alone creates every line", f"rc {rc}")
    n_reqs = len(ht.read_jsonl(reqs_path))
    ht.rewind_registry(wd.data)
    cfg = ht.write_config(wd, out, inputs=[dict(inputs[0], outputs="[collector, screen]")],
                          out_type="elasticsearch")
    with open(cfg) as f:
        text = f.read()
    with open(cfg, "w") as f:
        f.write(text.replace("queue: {", "  - {name: screen, type: console, format: text}\n"
                             "queue: {", 1))
    rc, err = ht.run_once(cfg)
    items = [i for r in ht.read_jsonl(reqs_path)[n_reqs:] for i in r["items"]]
    c.check(rc == 0 and len(items) == 300 and all(i["status"] == 409 for i in items),
            "modes: with a console beside it (messages kept), the same _ids: all 409",
            f"rc {rc}, {len(items)} items, {sorted({i['status'] for i in items})}")
    c.check(len(ht.read_jsonl(docs_path)) == n_docs + 300, "modes: nothing created twice",
            str(len(ht.read_jsonl(docs_path)) - n_docs))


def main():
    c = tt.Checks()
    wd = tt.Workdir("es-rename")
    rx = ht.Receiver(os.path.join(wd.root, "rx"), script="es_receiver.py")
    docs_path = os.path.join(rx.dir, "docs.jsonl")
    reqs_path = os.path.join(rx.dir, "requests.jsonl")
    log = wd.path("app.log")
    rotated = log + ".1"
    agent = None
    try:
        cfg = ht.write_config(wd, [f"url: {rx.url('/')}", "max_in_flight: 2",
                                   "backoff: {initial: 100ms, max: 200ms}"],
                              inputs=[{"id": "app", "paths": [log + "*"]}],
                              out_type="elasticsearch")
        with open(cfg) as f:
            text = f.read()
        with open(cfg, "w") as f:
            f.write(text.replace("registry: {flush_interval: 200ms}",
                                 "registry: {flush_interval: 1h}"))
        first = [f"before rename {i % 10} " + "x" * (i % 40) for i in range(400)]
        second = [l for l in first[:150]]  # the same text at the same offsets
        ht.write_lines(log, first)
        agent = tt.Agent(cfg, wd, tag="run1")
        c.check(tt.wait_for(lambda: len(ht.read_jsonl(docs_path)) >= 400, 30),
                "run 1: the first file's lines are created", str(len(ht.read_jsonl(docs_path))))
        os.rename(log, rotated)
        ht.write_lines(log, second)
        c.check(tt.wait_for(lambda: len(ht.read_jsonl(docs_path)) >= 550, 30),
                "run 1: the new file's lines are created too",
                str(len(ht.read_jsonl(docs_path))))
        agent.kill9()
        before = ht.read_jsonl(docs_path)
        ids_before = {d["id"] for d in before}
        paths = {d["source"]["log"]["file"]["path"] for d in before}
        c.check(len(before) == 550 and len(ids_before) == 550 and paths == {log},
                "run 1 read both files under the old path, one _id per line",
                f"{len(before)} docs, {len(ids_before)} ids, paths {paths}")
        n_reqs = len(ht.read_jsonl(reqs_path))

        agent = tt.Agent(cfg, wd, tag="run2")
        want = len(first) + len(second)

        def resent():
            items = [i for r in ht.read_jsonl(reqs_path)[n_reqs:] for i in r["items"]]
            return [i for i in items if i["status"] == 409]
        c.check(tt.wait_for(lambda: len(resent()) >= want, 30),
                "run 2 reads both files again and every create is answered 409",
                f"{len(resent())} of {want}")
        rc = agent.stop()
        c.check(rc == 0, "run 2 stops with exit 0", f"rc {rc}")
        after = ht.read_jsonl(docs_path)
        msgs = [d["source"]["message"] for d in after]
        c.check(len(after) == want and sorted(msgs) == sorted(first + second),
                "no document is stored twice", f"{len(after)} docs for {want} lines")
        clashes = [i for r in ht.read_jsonl(reqs_path) for i in r["items"] if i.get("clash")]
        c.check(not clashes, "no 409 refused an event other than the one its _id named",
                f"{len(clashes)} events answered 409 and lost")
        items = [i for r in ht.read_jsonl(reqs_path)[n_reqs:] for i in r["items"]]
        c.check(all(i["status"] == 409 for i in items), "run 2 created nothing new",
                str(sorted({i['status'] for i in items})))
        ids2 = {i["id"] for i in items}
        c.check(ids2 == ids_before,
                "the _ids sent after the rename are those sent before it",
                f"{len(ids2 - ids_before)} new ids of {len(ids2)}")
        batch_modes(c, wd, rx, docs_path, reqs_path)
    finally:
        if agent is not None and agent.alive():
            agent.kill9()
        rx.stop()
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
