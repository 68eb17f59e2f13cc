"""The s3 output against the stand-in S3 (s3_standin.py, which checks every request's
SigV4 signature with botocore): `logferry --once` over three files of UTF-8 and long
lines with zstd, gzip and no compression, every object read back (the zstd command, the
gzip module): every line exactly once, keys as the template says (input id, the first
event's date path, a v4 uuid, the suffix of the compression), objects no larger than
object_bytes plus one batch, the Content-Type of each form, the storage class and
encryption headers, and neither the secret key nor the session token in the log. Then the
daemon with object_interval 2s: lines appended show up in the store within ~3 s."""
import datetime
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import s3test as s3  # noqa: E402
import tailtest as tt  # noqa: E402

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
SUFFIX = {"zstd": ".ndjson.zst", "gzip": ".ndjson.gz", "none": ".ndjson"}
TYPES = {"zstd": "application/zstd", "gzip": "application/gzip", "none": "application/x-ndjson"}


def make_lines(tag, n):
    out = []
    for i in range(n):
        if i % 97 == 0:
            out.append(f"{tag} {i} long " + "é\u2603x" * 3000)  # ~21 KB of UTF-8
        else:
            out.append(f"{tag} {i} ünïcödé \u2603 \"quoted\" \\ back")
    return out


def once(c, wd, store, compression):
    for f in os.listdir(wd.logs):
        os.unlink(wd.path(f))
    want = []
    for name in ("a", "b", "c"):
        lines = make_lines(f"{compression}-{name}", 3000)
        ht.write_lines(wd.path(f"{name}.log"), lines)
        want += lines
    before = set(store.objects())
    token_env = s3.env()
    keys = [f"compression: {compression}", "object_bytes: 64KiB", "object_interval: 1s",
            "storage_class: STANDARD_IA", "server_side_encryption: AES256",
            "session_token: ${S3_TOKEN}"]
    token_env["S3_TOKEN"] = s3.TOKEN
    cfg = s3.config(wd, store, keys, batch="flush_interval: 100ms, max_events: 200")
    t0 = time.monotonic()
    rc, err = ht.run_once(cfg, env=token_env, timeout=300)
    secs = time.monotonic() - t0
    c.check(rc == 0, f"{compression}: --once exits 0", f"rc {rc}, {secs:.1f} s: {err[-400:]}")
    objs = {k: v for k, v in store.objects().items() if k not in before}
    got = []
    bad_keys = []
    today = datetime.datetime.utcnow()
    for key, data in objs.items():
        m = re.fullmatch(r"logs/app/(\d{4})/(\d{2})/(\d{2})/(\d{2})/(" + UUID + ")" +
                         re.escape(SUFFIX[compression]), key)
        if not m or abs(datetime.datetime(*map(int, m.groups()[:4])) - today.replace(
                minute=0, second=0, microsecond=0)) > datetime.timedelta(hours=1):
            bad_keys.append(key)
        for line in s3.decode(key, data).split(b"\n"):
            if line:
                got.append(s3.json.loads(line)["message"])
    c.check(objs and not bad_keys, f"{compression}: keys logs/app/YYYY/MM/DD/HH/<uuid v4>"
            f"{SUFFIX[compression]}", f"{len(objs)} objects; bad: {bad_keys[:2]}")
    c.check(sorted(got) == sorted(want) and len(got) == len(want),
            f"{compression}: every line of the 3 files exactly once, read back",
            f"{len(got)} lines of {len(want)}; missing {len(set(want) - set(got))}, "
            f"twice {len(got) - len(set(got))}")
    sizes = sorted(len(v) for v in objs.values())
    c.check((len(objs) >= 3 or compression != "none") and sizes[-1] < 64 * 1024 + 200 * 22000,
            f"{compression}: objects cut at object_bytes (64 KiB + less than one batch)",
            f"{len(objs)} objects, {sizes[0]}..{sizes[-1]} bytes")
    puts = [r for r in store.requests() if r["op"] == "PutObject" and r["key"] in objs]
    c.check(puts and all(r["status"] == 200 and r["content_type"] == TYPES[compression] and
                         r["storage_class"] == "STANDARD_IA" and r["sse"] == "AES256" and
                         r["token_sent"] for r in puts) and len(puts) == len(objs),
            f"{compression}: one signed PUT per object, {TYPES[compression]}, storage class, "
            "encryption and session token sent",
            str([(r["status"], r["code"], r["content_type"]) for r in puts[:2]]))
    c.check(s3.SECRET not in err and s3.TOKEN not in err and s3.TOKEN[:40] not in err,
            f"{compression}: neither the secret key nor the session token in the log")


def daemon(c, wd, store):
    for f in os.listdir(wd.logs):
        os.unlink(wd.path(f))
    cfg = s3.config(wd, store, ["compression: zstd", "object_interval: 2s",
                                "session_token: ${S3_TOKEN}"])
    agent = tt.Agent(cfg, wd, tag="daemon", preexec=None)
    try:
        lines = [f"live {i}" for i in range(100)]
        time.sleep(1)
        t0 = time.monotonic()
        ht.write_lines(wd.path("live.log"), lines)

        def arrived():
            return sorted(m for _, m in s3.messages(store) if m.startswith("live ")) == \
                sorted(lines)
        ok = tt.wait_for(arrived, 15)
        secs = time.monotonic() - t0
        c.check(ok and secs < 4.5, "daemon: appended lines are in the store within ~3 s "
                "(object_interval 2s, scan 1s)", f"{secs:.1f} s")
    finally:
        rc = agent.stop()
    c.check(rc == 0, "daemon: stops with 0 on SIGTERM", f"rc {rc}: {agent.stderr()[-300:]}")


def long_key(c, wd, store):
    """A field of the key template longer than a key may be: the events still go, under a
    key whose field is cut to 128 bytes (whole characters); --once succeeds."""
    for f in os.listdir(wd.logs):
        os.unlink(wd.path(f))
    tag = "\u00e9" * 1500  # 3000 bytes of UTF-8
    want = [f"long key {i}" for i in range(50)]
    ht.write_lines(wd.path("k.log"), [s3.json.dumps({"tag": tag, "message": m}) for m in want])
    before = set(store.objects())
    cfg = s3.config(wd, store, ["compression: none", "key: \"keys/%{tag}/%{uuid}.ndjson\"",
                                "session_token: ${S3_TOKEN}"],
                    inputs=[{"id": "app", "paths": [wd.path("*.log")],
                             "parsers": "[{ndjson: {target: \"\"}}]"}])
    rc, err = ht.run_once(cfg, env=s3.env(S3_TOKEN=s3.TOKEN), timeout=120)
    objs = {k: v for k, v in store.objects().items() if k not in before}
    got = [s3.json.loads(l)["message"] for v in objs.values() for l in v.split(b"\n") if l]
    c.check(rc == 0 and sorted(got) == sorted(want), "long key: every event stored, --once "
            "exits 0", f"rc {rc}, {len(got)} of {len(want)}: {err[-300:]}")
    keys = list(objs)
    c.check(keys and all(k.startswith("keys/" + "\u00e9" * 64 + "/") and
                         len(k.encode()) <= 1024 for k in keys),
            "long key: the field is cut to 128 bytes of whole characters",
            str([len(k.encode()) for k in keys]))
    c.check(err.count("its fields are cut to 128 bytes") == 1, "long key: said once", "")


def main():
    s3.run("s3-put", [lambda c, wd, store: [once(c, wd, store, comp)
                                            for comp in ("zstd", "gzip", "none")], daemon,
                     long_key],
           token=s3.TOKEN)


if __name__ == "__main__":
    main()
