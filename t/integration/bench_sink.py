"""The output benchmarks' sink (t/bench/sink) against the real agent: `logferry --once` over
a few thousand generated lines (quotes, backslashes, tabs, control characters, non-ASCII
UTF-8, a long line, an empty one) into the sink through each network output, and the
sink's lines, sum and bytes (GET /__stats) must equal `sink --hash` over the input, with no
request it could not read: http (zstd, gzip, none), elasticsearch (_bulk, gzip and none),
loki, otlp (protobuf gzip and none, json zstd), s3 (single PUTs with zstd and gzip, and
a multipart upload of 19 MiB in 5 MiB parts), syslog over TCP; and the syslog framings
and formats the peers send, in small pieces.
Then a sink answering every third request 503 (--fail-every 3): the agent retries and
nothing is lost. Also checks the sink's own answers a harness relies on (ports on stdout,
the _bulk items, a bad body counted and answered 400, the sum against sink_hash() computed
here, chunked and deflate bodies, JSON arrays and plain lines, S3's multipart calls with
parts out of order and an abort, exit 0 on SIGTERM and at the end of stdin)."""
import http.client
import json
import os
import random
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402

SINK = os.path.join(os.environ.get("LF_BUILDDIR", "."), "t", "bench", "sink")
SECRET = "sinkSecretKey/0123456789abcdefSECRET"
STATS = re.compile(r"lines (\d+) sum ([0-9a-f]{16}) bytes (\d+) requests (\d+) errors (\d+)\n?")
MIB = 1 << 20


class Sink:
    """One t/bench/sink process, stopped by its PID."""

    def __init__(self, *args):
        self.proc = subprocess.Popen([SINK, "--syslog", *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        first = self.proc.stdout.readline().decode()
        second = self.proc.stdout.readline().decode()
        m1 = re.fullmatch(r"http (\d+)\n", first)
        m2 = re.fullmatch(r"syslog (\d+)\n", second)
        if not m1 or not m2:
            raise RuntimeError(f"the sink printed {first!r} {second!r}")
        self.port = int(m1.group(1))
        self.syslog_port = int(m2.group(1))

    def get(self, path, data=None, headers=None, method=None):
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data,
                                     headers=headers or {}, method=method)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def stats(self):
        _, body = self.get("/__stats")
        m = STATS.fullmatch(body.decode())
        return {k: (v if k == "sum" else int(v)) for k, v in zip(
            ("lines", "sum", "bytes", "requests", "errors"), m.groups())}

    def reset(self):
        self.get("/__reset")

    def stop(self):
        """SIGTERM (if still running); returns the exit status and stderr."""
        if self.proc.poll() is None:
            self.proc.terminate()
        if self.proc.stdin:
            self.proc.stdin.close()
            self.proc.stdin = None  # communicate() would flush it
        try:
            _, err = self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return self.proc.returncode, err.decode("utf-8", "replace")


def hash_files(*paths):
    out = subprocess.run([SINK, "--hash", *paths], capture_output=True, check=True).stdout
    m = re.fullmatch(r"lines (\d+) sum ([0-9a-f]{16}) bytes (\d+)\n", out.decode())
    return {"lines": int(m.group(1)), "sum": m.group(2), "bytes": int(m.group(3))}


M64 = 0xFFFFFFFFFFFFFFFF


def msg_hash(b):
    """t/bench/sink_msg.c's sink_hash(), written again from its steps."""
    h = 0x6c6f67666572727a ^ ((len(b) * 0x9e3779b97f4a7c15) & M64)
    for i in range(0, len(b), 8):
        w = int.from_bytes(b[i:i + 8], "little")
        x = h ^ w
        h = ((((x << 27) | (x >> 37)) & M64) * 0x9e3779b97f4a7c15) & M64
    for k in (0xff51afd7ed558ccd, 0xc4ceb9fe1a85ec53):
        h = ((h ^ (h >> 33)) * k) & M64
    return h ^ (h >> 33)


def py_hash(lines):
    """The figures computed here, independently of the sink's C code."""
    total = 0
    size = 0
    for line in lines:
        total = (total + msg_hash(line)) & M64
        size += len(line)
    return {"lines": len(lines), "sum": "%016x" % total, "bytes": size}


def make_lines(n):
    rnd = random.Random(26)
    specials = ['"quoted"', "back\\slash", "tab\there", "ünïcödé", "\u2603 snow", "emoji \U0001f680",
                "ctl \x01\x1f", "{\"looks\": \"like json\"}", "trailing space ", "", "</>&'"]
    out = []
    for i in range(n):
        parts = [f"line {i}"] + rnd.sample(specials, 3)
        out.append(" ".join(parts))
    out[7] = "long " + "é\u2603x" * 2000  # 12 KB of UTF-8
    out[8] = ""  # an empty message
    return out


def config(wd, name, out_type, keys, batch="flush_interval: 100ms, max_events: 500",
           paths=None):
    data = os.path.join(wd.root, f"data-{name}")
    lines = [f"data_dir: {tt.yaml_str(data)}", "shutdown_timeout: 10s", "inputs:",
             "  - id: app", f"    paths: [{tt.yaml_str(paths or wd.path('*.log'))}]",
             "outputs:", "  - name: sink", f"    type: {out_type}"]
    lines += ["    " + k for k in keys]
    lines += ["queue: {batch: {" + batch + "}}", "metrics: {listen: \"\"}"]
    path = os.path.join(wd.root, f"{name}.yml")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def once(c, wd, sink, want, name, out_type, keys, **kw):
    sink.reset()
    cfg = config(wd, name, out_type, keys, **kw)
    t0 = time.monotonic()
    r = subprocess.run([tt.LOGFERRY, "-c", cfg, "--once"], capture_output=True, timeout=120,
                       env=dict(os.environ, SINK_SECRET=SECRET))
    err = r.stderr.decode("utf-8", "replace")
    got = sink.stats()
    ok = r.returncode == 0 and got["errors"] == 0 and (got["requests"] > 0) == (
        out_type != "syslog") and all(
        got[k] == want[k] for k in ("lines", "sum", "bytes"))
    c.check(ok, f"{name}: the sink counted every line once, sums equal",
            f"rc {r.returncode}, {time.monotonic() - t0:.1f} s, got {got}, want {want}"
            + ("" if ok else f": {err[-600:]}"))
    return got, err


def answers(c, sink):
    """What the sink answers besides counting: a harness and the peers rely on these."""
    sink.reset()
    bulk = (b'{"index":{"_index":"a","_id":"x1"}}\n{"message":"one","log":{"message":"no"}}\n'
            b'{"create":{"_index":"b"}}\n{"log":"two"}\n')
    status, body = sink.get("/idx/_bulk", data=bulk, headers={"Content-Type": "application/json"})
    items = json.loads(body)["items"] if status == 200 else []
    c.check(status == 200 and json.loads(body)["errors"] is False and len(items) == 2 and
            items[0]["index"]["_id"] == "x1" and items[0]["index"]["status"] == 201 and
            "create" in items[1], "_bulk: one item per action, keyed by its verb, its _id kept",
            f"{status} {body[:300]!r}")
    status, body = sink.get("/")
    c.check(status == 200 and json.loads(body)["version"]["number"].startswith("8."),
            "GET /: an Elasticsearch version", f"{status} {body[:200]!r}")
    status, _ = sink.get("/ingest", data=b'{"no_message_key": 1}\n')
    got = sink.stats()
    c.check(status == 400 and got["errors"] == 1 and got["lines"] == 2 and got["requests"] == 3,
            "a body without a message: answered 400, counted in errors, its lines not counted",
            f"{status} {got}")
    want = py_hash([b"one", b"two"])
    c.check(got["sum"] == want["sum"] and got["bytes"] == 6,
            "the sum is sink_hash()'s, computed independently", f"{got} {want}")

    # the forms other senders use: chunked, deflate, a JSON array, plain lines
    sink.reset()
    conn = http.client.HTTPConnection("127.0.0.1", sink.port, timeout=10)
    conn.request("POST", "/in", body=iter([b'{"log":"chu', b'nked"}\n{"msg":"x\\u00e9\\ud83d',
                                           b'\\ude80"}\n']), encode_chunked=True)
    r1 = conn.getresponse()
    r1.read()
    conn.request("POST", "/in", body=zlib.compress(b'[{"MESSAGE":"arr"},"str", {"m":1,"log":"z"}]'),
                 headers={"Content-Encoding": "deflate"})
    r2 = conn.getresponse()
    r2.read()
    conn.request("POST", "/in", body=b"plain one\n\nplain three", headers={"Connection": "close"})
    r3 = conn.getresponse()
    r3.read()
    conn.close()
    got = sink.stats()
    want = py_hash([b"chunked", "x\u00e9\U0001f680".encode(), b"arr", b"str", b"z", b"plain one",
                    b"", b"plain three"])
    c.check([r1.status, r2.status, r3.status] == [200, 200, 200] and got["errors"] == 0 and
            all(got[k] == want[k] for k in ("lines", "sum", "bytes")),
            "chunked, deflate, a JSON array, plain lines on one kept-alive connection",
            f"{[r1.status, r2.status, r3.status]} got {got}, want {want}")
    answered = [sink.get("/", method="HEAD")[0], sink.get("/_index_template/x", data=b"{}",
                                                          method="PUT")[0],
                sink.get("/_license")[0]]
    c.check(answered == [200, 200, 200] and sink.stats()["lines"] == want["lines"],
            "HEAD /, PUT of a template, GET /_license: 200, nothing counted", str(answered))
    multipart_calls(c, sink)


def multipart(c, wd, sink, s3):
    """Some 19 MiB of events in one object: put as a multipart upload in 5 MiB parts."""
    os.makedirs(os.path.join(wd.root, "big"))
    path = os.path.join(wd.root, "big", "big.log")
    pad = "é\"\\\t" + "x" * 880
    lines = [f"big {i} {pad}" for i in range(18500)]
    with open(path, "wb") as f:
        for line in lines:
            f.write(line.encode("utf-8") + b"\n")
    want = hash_files(path)
    got, _ = once(c, wd, sink, want, "s3 multipart, 5 MiB parts", "s3",
                  s3 + ["compression: none", "object_bytes: 40MiB", "part_bytes: 5MiB",
                        "object_interval: 30s"],
                  batch="flush_interval: 100ms, max_events: 4096, max_bytes: 1MiB}, "
                        "max_bytes: 128MiB, spool: {enabled: false", paths=path)
    # create, at least 4 parts of 5 MiB (the last one smaller), complete
    c.check(got["requests"] >= 6, "s3: the object went up in parts",
            f"{got['requests']} requests")


def syslog_frames(c, sink):
    """Framings and formats the peers send: LF-ended RFC 3164 and 5424 (structured data
    holding a bracket, a BOM), octet-counted with a line break inside, in pieces."""
    sink.reset()
    frames = [b"<13>Dec  4 02:00:00 host app[12]: three one six four\n",
              b"<14>2026-12-04T02:00:00+00:00 host app: iso time\n",
              '<134>1 2026-12-04T02:00:00.000Z h app - - [x@1 a="]\\]"][y@1 b="c"] \ufeffbom\n'
              .encode("utf-8"),
              b"<134>1 2026-12-04T02:00:00.000Z h app - - - ",  # no MSG: an empty message
              b"\n"]
    counted = b"<134>1 2026-12-04T02:00:00.000Z h app - - - two\nlines"
    frames.append(str(len(counted)).encode() + b" " + counted)
    data = b"".join(frames)
    with socket.create_connection(("127.0.0.1", sink.syslog_port), timeout=5) as conn:
        for i in range(0, len(data), 7):
            conn.sendall(data[i:i + 7])
            time.sleep(0.001)
    want = py_hash([b"three one six four", b"iso time", b"bom", b"", b"two\nlines"])
    deadline = time.monotonic() + 5
    while sink.stats()["lines"] < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    got = sink.stats()
    c.check(all(got[k] == want[k] for k in ("lines", "sum", "bytes")) and got["errors"] == 0,
            "syslog: RFC 3164 and 5424, LF-ended and octet-counted, sent in pieces",
            f"got {got}, want {want}")


def multipart_calls(c, sink):
    """S3's multipart calls straight to the sink: 70 parts put last to first are counted in
    part order at the completion (a line may span two parts); an aborted upload counts
    nothing."""
    sink.reset()
    lines = [f"part line {i} {'y' * (i % 13)}".encode() for i in range(70)]
    text = b"".join(l + b"\n" for l in lines)
    cut = [len(text) * i // 70 for i in range(71)]  # parts that split lines
    status, body = sink.get("/b/logs/obj.ndjson?uploads=", data=b"", method="POST")
    m = re.search(rb"<UploadId>([^<]+)</UploadId>", body)
    uid = m.group(1).decode() if m else "none"
    etags = []
    for n in range(70, 0, -1):
        st, _ = sink.get(f"/b/logs/obj.ndjson?partNumber={n}&uploadId={uid}",
                         data=text[cut[n - 1]:cut[n]], method="PUT")
        etags.append(st)
    st_done, done = sink.get(f"/b/logs/obj.ndjson?uploadId={uid}", data=b"<Complete/>",
                             method="POST")
    got = sink.stats()
    want = py_hash(lines)
    c.check(status == 200 and set(etags) == {200} and st_done == 200 and
            b"CompleteMultipartUploadResult" in done and
            all(got[k] == want[k] for k in ("lines", "sum", "bytes")),
            "s3 multipart calls: 70 parts out of order, counted whole at the completion",
            f"{status} {set(etags)} {st_done} got {got} want {want}")
    sink.reset()
    _, body = sink.get("/b/logs/two.ndjson?uploads=", data=b"", method="POST")
    uid = re.search(rb"<UploadId>([^<]+)</UploadId>", body).group(1).decode()
    sink.get(f"/b/logs/two.ndjson?partNumber=1&uploadId={uid}", data=b"gone\n", method="PUT")
    st_abort, _ = sink.get(f"/b/logs/two.ndjson?uploadId={uid}", method="DELETE")
    st_again, _ = sink.get(f"/b/logs/two.ndjson?uploadId={uid}", data=b"<Complete/>",
                           method="POST")
    got = sink.stats()
    c.check(st_abort == 204 and st_again == 404 and got["lines"] == 0,
            "s3 multipart calls: an aborted upload counts nothing and is gone",
            f"{st_abort} {st_again} {got}")


def main():
    c = tt.Checks()
    wd = tt.Workdir("bench-sink")
    sink = Sink()
    failing = None
    try:
        lines = make_lines(3000)
        path = wd.path("app.log")
        with open(path, "wb") as f:
            for line in lines:
                f.write(line.encode("utf-8") + b"\n")
        want = hash_files(path)
        c.check(want == py_hash([l.encode("utf-8") for l in lines]) and want["lines"] == 3000,
                "sink --hash: the figures computed independently", str(want))

        answers(c, sink)
        url = f"http://127.0.0.1:{sink.port}"
        for comp in ("zstd", "gzip", "none"):
            once(c, wd, sink, want, f"http {comp}", "http",
                 [f"url: {url}/ingest", f"compression: {comp}"])
        for comp in ("gzip", "none"):
            once(c, wd, sink, want, f"elasticsearch {comp}", "elasticsearch",
                 [f"url: {url}", f"compression: {comp}"])
        once(c, wd, sink, want, "loki", "loki", [f"url: {url}"])
        for enc, comp in (("protobuf", "gzip"), ("protobuf", "none"), ("json", "zstd")):
            once(c, wd, sink, want, f"otlp {enc} {comp}", "otlp",
                 [f"url: {url}/v1/logs", f"encoding: {enc}", f"compression: {comp}"])
        s3 = ["bucket: archive", "region: us-east-1", f"endpoint: {url}",
              "access_key_id: AKIDSINK", "secret_access_key: ${SINK_SECRET}"]
        for comp in ("zstd", "gzip"):
            got, err = once(c, wd, sink, want, f"s3 {comp}, objects of 8 KiB", "s3",
                            s3 + [f"compression: {comp}", "object_bytes: 8KiB"])
            c.check(got["requests"] >= 2 and SECRET not in err,
                    f"s3 {comp}: several objects put, the secret key not in the log",
                    f"{got['requests']} PUTs")
        multipart(c, wd, sink, s3)
        once(c, wd, sink, want, "syslog tcp", "syslog",
             [f"address: 127.0.0.1:{sink.syslog_port}", "protocol: tcp"])
        syslog_frames(c, sink)

        failing = Sink("--fail-every", "3")
        got, err = once(c, wd, failing, want, "http, every third request answered 503", "http",
                        [f"url: http://127.0.0.1:{failing.port}/ingest", "compression: zstd",
                         "backoff: {initial: 50ms, max: 100ms}"])
        c.check(got["requests"] >= 6 and "503" in err,
                "--fail-every 3: the agent was refused (at least twice) and retried",
                f"{got['requests']} requests, {got['requests'] // 3} refused")
        failing.proc.stdin.close()
        failing.proc.stdin = None
        try:
            frc = failing.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            frc = None
        c.check(frc == 0, "the sink exits 0 at the end of its stdin", f"rc {frc}")
    finally:
        rc, err = sink.stop()
        if failing:
            failing.stop()
        wd.cleanup()
    c.check(rc == 0, "the sink exits 0 on SIGTERM", f"rc {rc}: {err[-300:]}")
    c.finish()


if __name__ == "__main__":
    main()
