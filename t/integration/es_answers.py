"""The elasticsearch output on _bulk answers that are odd but possible (es_receiver.py's
controls). `errors` after `items`: read as well as before it. `errors: true` while every
item is 201: each item is taken as it says, nothing is sent again or refused. An answer
with one item fewer than the request: unreadable, so the request is sent again with the
same bytes, and the copies are answered 409: every event once. A batch of 4,096 refused
events, some lines dropped by a filter in between: each dead letter holds its own event."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import tailtest as tt  # noqa: E402


def run(wd, rx, name, lines, odd, extra_output=(), inputs=None, batch=None):
    """Writes lines to a new file, sets the receiver's controls, runs --once; returns (rc,
    stderr, the new request records, the new documents' messages)."""
    n_reqs, n_docs = len(rx.requests()), len(ht.read_jsonl(os.path.join(rx.dir, "docs.jsonl")))
    ht.write_lines(wd.path(f"{name}.log"), lines)
    rx.control(**odd)
    cfg = ht.write_config(wd, [f"url: {rx.url('')}", f"index: {name}", "max_in_flight: 1",
                               "backoff: {initial: 50ms, max: 100ms}"] + list(extra_output),
                          inputs=inputs or [{"id": name, "paths": [wd.path(f"{name}.log")]}],
                          out_type="elasticsearch",
                          **({"batch": batch} if batch else {}))
    rc, err = ht.run_once(cfg)
    docs = ht.read_jsonl(os.path.join(rx.dir, "docs.jsonl"))[n_docs:]
    return rc, err, rx.requests()[n_reqs:], [d["source"]["message"] for d in docs]


def main():
    c = tt.Checks()
    wd = tt.Workdir("es-answers")
    rx = ht.Receiver(os.path.join(wd.root, "rx"), script="es_receiver.py")
    try:
        lines = [f"trailing {i}" for i in range(1200)]
        rc, err, reqs, got = run(wd, rx, "trailing", lines, {"trailing": 100})
        c.check(rc == 0 and sorted(got) == sorted(lines) and
                all(r["odd"] == ["trailing"] for r in reqs),
                "errors after items: every event is created once", f"rc {rc}, {len(got)} docs")
        c.check(len(reqs) == 3 and "to be sent again" not in err and "unreadable _bulk" not in err,
                "errors after items: one request per batch, none sent again",
                f"{len(reqs)} requests; " + " | ".join(
                    ln for ln in err.splitlines() if "output collector" in ln))

        lines = [f"claim {i}" for i in range(1200)]
        rc, err, reqs, got = run(wd, rx, "claim", lines, {"claim": 100})
        c.check(rc == 0 and sorted(got) == sorted(lines) and len(reqs) == 3 and
                all(i["status"] == 201 for r in reqs for i in r["items"]),
                "errors true, every item 201: each item taken as it says, none sent again",
                f"rc {rc}, {len(got)} docs, {len(reqs)} requests")
        c.check(ht.dead_letters(wd.data) == [] and "refused" not in err,
                "errors true, every item 201: nothing is refused", err.strip()[-200:])

        for odd in ({"short": 1}, {"short": 1, "claim": 1}):
            name = "short" + ("-claim" if "claim" in odd else "")
            lines = [f"{name} {i}" for i in range(300)]
            rc, err, reqs, got = run(wd, rx, name, lines, odd)
            c.check(rc == 0 and sorted(got) == sorted(lines),
                    f"{name}: an answer one item short loses nothing and doubles nothing",
                    f"rc {rc}, {len(got)} docs for {len(lines)} lines")
            c.check(len(reqs) == 2 and reqs[0]["sha256"] == reqs[1]["sha256"] and
                    all(i["status"] == 409 for i in reqs[1]["items"]) and
                    "an unreadable _bulk answer; will retry" in err,
                    f"{name}: it is unreadable: the same bytes are sent again, answered 409",
                    f"{len(reqs)} requests; {err.strip()[-200:]}")

        # 4,096 refused events in one batch; every seventh line dropped by a filter before
        # the output, so the batch's events and its NDJSON lines do not line up one to one.
        lines = [(f"skip {i}" if i % 7 == 3 else f"refused {i} MAPPING_ERROR")
                 for i in range(4096 * 7 // 6 + 1)]
        kept = [line for line in lines if not line.startswith("skip")]
        assert len(kept) == 4096
        rc, err, reqs, got = run(
            wd, rx, "refused", lines, {}, extra_output=["compression: none"],
            inputs=[{"id": "refused", "paths": [wd.path("refused.log")],
                     "parsers": "[{exclude_lines: ['^skip']}]"}],
            batch="flush_interval: 1s, max_events: 8192")
        dead = ht.dead_letters(wd.data)
        c.check(rc == 0 and got == [] and len(dead) == len(kept),
                "every refused event is a dead letter", f"rc {rc}, {len(dead)} of {len(kept)}")
        c.check([d["event"]["message"] for d in dead] == kept and
                all(d["status"] == 400 for d in dead),
                "each dead letter holds its own event, in order, dropped lines skipped",
                str(dead[:1]))
        c.check([len(r["items"]) for r in reqs] == [4096], "they were refused in one batch",
                str([len(r["items"]) for r in reqs]))
    finally:
        rx.stop()
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
