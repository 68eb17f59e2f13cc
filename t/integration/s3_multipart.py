"""The s3 output's multipart uploads against the stand-in S3 (s3_standin.py): with
object_bytes 40MiB, part_bytes 5MiB and no compression, some 42 MB of lines make one
object put in parts (CreateMultipartUpload once the object passes 16 MiB, UploadPart of
exactly 5 MiB each as they fill, CompleteMultipartUpload with their ETags, which the
stand-in checks), read back whole with every line once; an UploadPart answered 503 is
sent again. A part refused for good (400) aborts the upload (none left incomplete) and
gives its batches up: the next run delivers them. A daemon stopped while the store refuses
every part leaves its lines unacknowledged: the next start delivers every line.""" 
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import s3test as s3  # noqa: E402
import tailtest as tt  # noqa: E402

MIB = 1 << 20
KEYS = ["compression: none", "object_bytes: 40MiB", "part_bytes: 5MiB", "object_interval: 30s"]
# the queue holds a held batch's memory until it is answered: room for a whole object
BATCH = ("flush_interval: 100ms, max_events: 4096, max_bytes: 1MiB}, max_bytes: 128MiB, "
         "spool: {enabled: false")


def write_big(wd, name, tag, total):
    lines = []
    pad = "x" * 900
    n = 0
    size = 0
    while size < total:
        line = f"{tag} {n} {pad}"
        lines.append(line)
        size += len(line) + 150  # the event JSON around it
        n += 1
    ht.write_lines(wd.path(name), lines)
    return lines


def one_object(c, wd, store):
    lines = write_big(wd, "big.log", "mp", 42 * MIB)
    store.control(fail=1, status=503, code="SlowDown", op="UploadPart")
    cfg = s3.config(wd, store, KEYS, batch=BATCH)
    t0 = time.monotonic()
    rc, err = ht.run_once(cfg, env=s3.env(), timeout=300)
    secs = time.monotonic() - t0
    c.check(rc == 0, "--once exits 0", f"rc {rc}, {secs:.1f} s: {err[-300:]}")
    reqs = store.requests()
    ops = [r["op"] for r in reqs]
    parts = [r for r in reqs if r["op"] == "UploadPart"]
    done = [r for r in parts if r["status"] == 200]
    big = {k: v for k, v in store.objects().items() if len(v) > 16 * MIB}
    c.check(ops.count("CreateMultipartUpload") == 1 and ops.count("CompleteMultipartUpload") == 1
            and len(big) == 1, "one multipart object: created once, completed once",
            f"{[(r['op'], r['status']) for r in reqs if r['op'] != 'UploadPart']}")
    size = sum(len(v) for v in big.values())
    c.check(done and len(done) == -(-size // (5 * MIB)) and
            all(r["bytes"] == 5 * MIB for r in done[:-1]) and 0 < done[-1]["bytes"] <= 5 * MIB,
            "parts of exactly 5 MiB (the last one what is left)",
            str([r["bytes"] for r in done]))
    c.check(len(parts) >= 2 and parts[0]["status"] == 503 and parts[1]["status"] == 200 and
            parts[0]["query"].split("&")[0] == parts[1]["query"].split("&")[0] == "partNumber=1",
            "an UploadPart answered 503 is sent again as the same part",
            str([(r["status"], r["query"][:20]) for r in parts[:2]]))
    got = [m for _, m in s3.messages(store)]
    c.check(sorted(got) == sorted(lines), "every line read back once, over the objects",
            f"{len(got)} of {len(lines)}; twice {len(got) - len(set(got))}")
    c.check(40 * MIB <= size < 42 * MIB and not store.uploads(),
            "the object closed at object_bytes (40 MiB); no incomplete upload left",
            f"{size} bytes; uploads {store.uploads()}")
    print(f"42 MB of lines through a multipart object: {secs:.1f} s (ASan build)")


def refused_part(c, wd, store):
    """A part refused for good (400): the upload is aborted, its batches given up on, and
    the next run delivers every line."""
    for f in os.listdir(wd.logs):
        os.unlink(wd.path(f))
    lines = write_big(wd, "refused.log", "rp", 25 * MIB)
    n0 = len(store.requests())
    store.control(fail=1, status=400, code="InvalidArgument", op="UploadPart")
    cfg = s3.config(wd, store, KEYS, batch=BATCH)
    rc, err = ht.run_once(cfg, env=s3.env(), timeout=300)
    store.control(reset=1)
    reqs = store.requests()[n0:]
    aborted = [a for a in store.aborted() if a["key"].startswith("logs/app/")]
    c.check(any(r["op"] == "AbortMultipartUpload" and r["status"] == 200 for r in reqs) and
            aborted and not store.uploads() and
            "the multipart upload is aborted" in err and "InvalidArgument" in err,
            "a part refused with 400: the upload is aborted (none left incomplete), logged",
            f"rc {rc}; {[(r['op'], r['status']) for r in reqs if r['op'] != 'UploadPart']}; "
            f"uploads {store.uploads()}: {err[-300:]}")
    rc2, err2 = ht.run_once(cfg, env=s3.env(), timeout=300)
    got = {m for _, m in s3.messages(store) if m.startswith("rp ")}
    c.check(rc2 == 0 and got == set(lines),
            "its lines were not acknowledged: the next run delivers every line",
            f"first rc {rc}, then rc {rc2}; {len(got)} of {len(lines)}: {err2[-300:]}")


def stopped(c, wd, store):
    """A daemon stopped (shutdown_timeout) while the store refuses every part: its lines
    are not acknowledged, and the next start delivers them all. (The agent ends at once
    after shutdown_timeout, so the upload stays incomplete: a lifecycle rule removes it.)"""
    for f in os.listdir(wd.logs):
        os.unlink(wd.path(f))
    lines = write_big(wd, "abort.log", "ab", 25 * MIB)
    cfg = s3.config(wd, store, KEYS, batch=BATCH)
    tt.edit_config(cfg, "shutdown_timeout: 5s", "shutdown_timeout: 2s")
    n0 = len(store.requests())
    store.control(fail=100000, status=503, code="SlowDown", op="UploadPart")
    agent = tt.Agent(cfg, wd, tag="abort")
    try:
        ok = tt.wait_for(lambda: any(r["op"] == "UploadPart" for r in store.requests()[n0:]), 60)
        c.check(ok, "the upload started and its parts are refused")
    finally:
        rc = agent.stop(timeout=60)
    store.control(reset=1)
    c.check(rc is not None and "events unacknowledged" in agent.stderr(),
            "the daemon stops after shutdown_timeout, the lines unacknowledged",
            f"rc {rc}: {agent.stderr()[-300:]}")
    rc, err = ht.run_once(cfg, env=s3.env(), timeout=300)
    got = {m for _, m in s3.messages(store) if m.startswith("ab ")}
    c.check(rc == 0 and got == set(lines), "the next start delivers every line",
            f"rc {rc}; {len(got)} of {len(lines)}: {err[-300:]}")


def main():
    s3.run("s3-multipart", [one_object, refused_part, stopped])


if __name__ == "__main__":
    main()
