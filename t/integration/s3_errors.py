"""The s3 output's bad days against the stand-in S3 (s3_standin.py), `logferry --once`
unless said: 503 SlowDown three times then 200 (the same bytes again to the same key: one
object, nothing lost); 500 InternalError with Retry-After; connections closed without an
answer; an answer slower than the timeout (the late PUT and the retry write the same key:
no second object); the store's clock 20 minutes ahead (RequestTimeTooSkewed: signed again
on its clock, logged once, delivered); a wrong secret key (403 SignatureDoesNotMatch: the
events go to the dead letters with S3's code as the reason, the daemon keeps running and
delivers what comes after a reload... no: keeps running, and stops cleanly); the store
down for 20 s under a running daemon, restarted on the same port: every line stored,
none twice."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import s3test as s3  # noqa: E402
import tailtest as tt  # noqa: E402


def fresh(wd, tag, n=300):
    for f in os.listdir(wd.logs):
        os.unlink(wd.path(f))
    lines = [f"{tag} line {i} \u00e9" for i in range(n)]
    ht.write_lines(wd.path(f"{tag}.log"), lines)
    return lines


def stored_by_key(store, tag):
    """{key: [messages of tag]} over the objects holding lines of tag."""
    out = {}
    for key, msg in s3.messages(store):
        if msg.startswith(tag + " "):
            out.setdefault(key, []).append(msg)
    return out


def once_case(c, wd, store, tag, ctl, keys=(), check_log=None):
    lines = fresh(wd, tag)
    store.control(reset=1)
    store.control(**ctl)
    n_req = len(store.requests())
    cfg = s3.config(wd, store, ["object_interval: 500ms", "timeout: 2s"] + list(keys),
                    batch="flush_interval: 100ms, max_events: 1000")
    rc, err = ht.run_once(cfg, env=s3.env(), timeout=120)
    store.control(reset=1)
    by_key = stored_by_key(store, tag)
    got = [m for ms in by_key.values() for m in ms]
    reqs = [r for r in store.requests()[n_req:] if r["op"] == "PutObject"]
    c.check(rc == 0 and sorted(got) == sorted(lines),
            f"{tag}: --once exits 0, every line stored once",
            f"rc {rc}, {len(got)} of {len(lines)}: {err[-300:]}")
    c.check(len(by_key) == 1 and len({r["key"] for r in reqs}) == 1,
            f"{tag}: every attempt wrote the same key: one object",
            f"{len(by_key)} objects; attempts {[(r['status'], r['code']) for r in reqs]}")
    if check_log:
        check_log(reqs, err)
    return reqs, err


def slowdown(c, wd, store):
    def log(reqs, err):
        c.check([r["status"] for r in reqs] == [503, 503, 503, 200] and
                all(r["code"] == "SlowDown" for r in reqs[:3]),
                "slowdown: three 503 SlowDown then 200", str([(r["status"], r["code"]) for r in reqs]))
        c.check("PUT: HTTP 503 SlowDown: stand-in says so; retrying" in err and
                "s3://archive/logs/app/" in err, "slowdown: each retry logged with s3://BUCKET/KEY",
                err[-300:])
    once_case(c, wd, store, "slowdown", {"fail": 3, "status": 503, "code": "SlowDown"},
              check_log=log)


def internal(c, wd, store):
    t0 = time.monotonic()

    def log(reqs, err):
        c.check([r["status"] for r in reqs] == [500, 500, 200],
                "internal: two 500 InternalError then 200", str([r["status"] for r in reqs]))
        c.check(time.monotonic() - t0 >= 2.0,
                "internal: Retry-After: 1 waited (backoff 200 ms asks less)",
                f"{time.monotonic() - t0:.1f} s")
    once_case(c, wd, store, "internal",
              {"fail": 2, "status": 500, "code": "InternalError", "retry_after": 1},
              check_log=log)


def closed(c, wd, store):
    def log(reqs, err):
        c.check([r["status"] for r in reqs] == [0, 0, 200] and "PUT: no answer" in err,
                "closed: two connections closed without an answer, then 200",
                str([r["status"] for r in reqs]))
    once_case(c, wd, store, "closed", {"close": 2}, check_log=log)


def stalled(c, wd, store):
    def log(reqs, err):
        n0 = len(store.requests()) - len(reqs)
        tt.wait_for(lambda: len(store.requests()) >= n0 + 2, 5)  # the late one is told last
        reqs = [r for r in store.requests()[n0:] if r["op"] == "PutObject"]
        c.check(len(reqs) == 2 and all(r["status"] == 200 for r in reqs) and
                "PUT: no answer: Operation timed out" in err,
                "stalled: an answer later than the timeout (2 s) is retried",
                str([r["status"] for r in reqs]))
    once_case(c, wd, store, "stalled", {"stall": 4, "count": 1}, check_log=log)


def skewed(c, wd, store):
    def log(reqs, err):
        c.check(reqs[0]["status"] == 403 and reqs[0]["code"] == "RequestTimeTooSkewed" and
                reqs[-1]["status"] == 200,
                "skew: RequestTimeTooSkewed, then accepted once signed on the store's clock",
                str([(r["status"], r["code"], r["date"]) for r in reqs]))
        c.check(err.count("s off ours; signing on its time") == 1,
                "skew: the offset is logged once", err[-300:])
    once_case(c, wd, store, "skew", {"skew": 1200}, check_log=log)


def wrong_secret(c, wd, store):
    lines = fresh(wd, "refused", 200)
    store.control(reset=1)
    cfg = s3.config(wd, store, ["object_interval: 500ms", f"access_key_id: {s3.AKID}",
                                "secret_access_key: not-the-secret-XYZ"], creds=False)
    agent = tt.Agent(cfg, wd, tag="refused")
    try:
        ok = tt.wait_for(lambda: len(ht.dead_letters(wd.data)) >= len(lines), 30)
        dl = ht.dead_letters(wd.data)
        c.check(ok and sorted(d["event"]["message"] for d in dl) == sorted(lines) and
                all(d["status"] == 403 and "SignatureDoesNotMatch" in d["reason"] for d in dl),
                "wrong secret: 403 SignatureDoesNotMatch sends every event to the dead letters, "
                "the code as the reason", f"{len(dl)} of {len(lines)}: {dl[:1]}")
        more = [f"refused later {i}" for i in range(50)]
        ht.write_lines(wd.path("refused.log"), more)
        ok = tt.wait_for(lambda: len(ht.dead_letters(wd.data)) >= len(lines) + len(more), 30)
        c.check(ok and agent.alive(), "wrong secret: the agent keeps running and keeps its "
                "later lines the same way", f"{len(ht.dead_letters(wd.data))} dead letters")
        c.check(not any(r["op"] == "PutObject" and r["status"] == 200
                        for r in store.requests() if "refused" in r.get("key", "")),
                "wrong secret: nothing stored")
    finally:
        rc = agent.stop()
    err = agent.stderr()
    c.check(rc == 0 and "not-the-secret-XYZ" not in err and "dead letters" in err,
            "wrong secret: stops with 0; the secret never in the log", f"rc {rc}: {err[-300:]}")


def outage(c, wd, store):
    for f in os.listdir(wd.logs):
        os.unlink(wd.path(f))
    cfg = s3.config(wd, store, ["object_interval: 1s", "timeout: 2s"],
                    batch="flush_interval: 100ms, max_events: 200")
    agent = tt.Agent(cfg, wd, tag="outage")
    lines = []
    try:
        def write(k):
            batch = [f"outage line {len(lines) + i}" for i in range(k)]
            ht.write_lines(wd.path("outage.log"), batch)
            lines.extend(batch)
        write(100)
        tt.wait_for(lambda: len(stored_by_key(store, "outage")) > 0, 10)
        store.stop()
        t0 = time.monotonic()
        while time.monotonic() - t0 < 20:
            write(50)
            time.sleep(1)
        store.start()
        ok = tt.wait_for(lambda: sum(len(v) for v in stored_by_key(store, "outage").values())
                         >= len(lines), 60)
        got = [m for ms in stored_by_key(store, "outage").values() for m in ms]
        c.check(ok and sorted(got) == sorted(lines) and len(got) == len(set(got)),
                "outage: the store down 20 s: every line stored once after it is back",
                f"{len(got)} of {len(lines)}, {len(got) - len(set(got))} twice")
        c.check(agent.alive(), "outage: the daemon kept running")
    finally:
        rc = agent.stop()
    c.check(rc == 0, "outage: stops with 0", f"rc {rc}: {agent.stderr()[-300:]}")


def main():
    s3.run("s3-errors", [slowdown, internal, closed, stalled, skewed, wrong_secret, outage])


if __name__ == "__main__":
    main()
