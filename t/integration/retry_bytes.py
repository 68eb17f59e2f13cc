#!/usr/bin/env python3
"""A batch is encoded and compressed once per form; retries send the same bytes. Each of the
http (zstd), loki (gzip) and elasticsearch (gzip) outputs ships one file with --once while
its receiver answers the first requests 500/503, then 200: every failed request's body is
byte-identical (SHA-256 as received) to the body finally accepted, and the loki and
elasticsearch outputs built each batch's body once (their debug log says so per build).
The one exception, elasticsearch's resend of the items a _bulk answer refused with 429, is
checked too: that body is built again from those items alone."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import tailtest as tt  # noqa: E402


def run(c, wd, kind, output, script, control, n_fail, tag=""):
    rx = ht.Receiver(os.path.join(wd.root, f"rx-{kind}{tag}"), script=script)
    try:
        log = wd.path(f"{kind}{tag}.log")
        ht.write_lines(log, [f"{kind} line {i:04d} " + "z" * (i % 50) for i in range(300)])
        rx.control(**control)
        wd.data = os.path.join(wd.root, f"data-{kind}{tag}")
        cfg = ht.write_config(wd, [f"url: {rx.url(output.pop(0))}", "max_in_flight: 1",
                                   "backoff: {initial: 50ms, max: 100ms}"] + output,
                              inputs=[{"id": "app", "paths": [log]}], out_type=kind,
                              extra="logging: {level: debug}")
        rc, err = ht.run_once(cfg)
        c.check(rc == 0, f"{kind}: --once exits 0", f"rc {rc}: {err.strip()[-300:]}")
        reqs = rx.requests() if kind != "elasticsearch" else \
            ht.read_jsonl(os.path.join(rx.dir, "requests.jsonl"))
        ok = [r for r in reqs if r.get("status", 200) == 200]
        failed = [r for r in reqs if r.get("status", 200) != 200]
        c.check(len(failed) == n_fail and ok,
                f"{kind}: {n_fail} requests failed, then the batch was accepted",
                f"{len(failed)} failed, {len(ok)} accepted")
        accepted = {r["sha256"] for r in ok}
        c.check(all(r["sha256"] in accepted for r in failed),
                f"{kind}: every retry sent the same bytes as the first try",
                f"{len({r['sha256'] for r in reqs})} distinct bodies in {len(reqs)} requests")
        return err, ok, reqs
    finally:
        rx.stop()


def builds(err):
    return sum(1 for ln in err.splitlines() if "built" in ln and "body of" in ln)


def main():
    c = tt.Checks()
    wd = tt.Workdir("retry-bytes")
    try:
        run(c, wd, "http", ["/ingest", "compression: zstd"], "http_receiver.py",
            {"seq": "500,503,200"}, 2)
        err, ok, _ = run(c, wd, "loki", ["", "compression: gzip"], "http_receiver.py",
                         {"seq": "500,500,500,200"}, 3)
        c.check(builds(err) == len(ok), "loki: each batch's body was built once",
                f"{builds(err)} builds for {len(ok)} batches")
        err, ok, _ = run(c, wd, "elasticsearch", ["/", "compression: gzip"], "es_receiver.py",
                         {"fail": "3"}, 3)
        c.check(builds(err) == len(ok), "elasticsearch: each batch's body was built once",
                f"{builds(err)} builds for {len(ok)} batches")
        # The exception: items refused with 429 are sent again alone, in a new body.
        err, ok, reqs = run(c, wd, "elasticsearch", ["/", "compression: gzip"],
                            "es_receiver.py", {"reject": "5"}, 0, tag="-partial")
        c.check(len(reqs) == 2 and len(reqs[1]["items"]) == 5 and builds(err) == 2
                and reqs[0]["sha256"] != reqs[1]["sha256"],
                "elasticsearch: after a partial answer only the 5 refused items are built "
                "again and sent", f"{[len(r['items']) for r in reqs]}, {builds(err)} builds")
    finally:
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
