"""A stand-in S3 for the s3 output's tests. Python standard library and botocore (through
awstest.py, which checks every request's SigV4 signature).

    python3 s3_standin.py --dir DIR [--port N] [--region R] --key AKID:SECRET[:TOKEN]...

Listens on 127.0.0.1 (port 0 picks a free one) and prints the port on its first stdout line.
Buckets are addressed path-style (/BUCKET/KEY) or virtual-hosted (Host: BUCKET.HOST).
Supported: PUT object, CreateMultipartUpload (POST ?uploads), UploadPart (PUT
?partNumber=N&uploadId=ID, answering the part's MD5 as its ETag), CompleteMultipartUpload
(POST ?uploadId=ID, the parts' ETags checked), AbortMultipartUpload (DELETE ?uploadId=ID),
GET object. Every request's signature is checked (service s3, the x-amz-content-sha256
against the body); a wrong one is answered 403 SignatureDoesNotMatch or
InvalidAccessKeyId, with S3's error document.

State on disk, so that a restart on the same port keeps it:
    DIR/objects/BUCKET/KEY        objects stored
    DIR/uploads/ID/{meta.json,N}  multipart uploads not completed nor aborted
    DIR/aborted.jsonl             uploads aborted ({"bucket","key","upload_id"})
    DIR/requests.jsonl            one record per request: method, op, bucket, key, query,
                                  status, code, bytes, content_type, storage_class, sse,
                                  date (x-amz-date), token_sent

Control (same port, never checked nor recorded):
    GET /_ctl?fail=3&status=503&code=SlowDown[&op=UploadPart][&retry_after=1]
                                  answer the next 3 requests (of that op) with that error
    GET /_ctl?skew=1200           pretend the clock is 1200 s ahead (RequestTimeTooSkewed
                                  for requests dated on the agent's clock; Date answered)
    GET /_ctl?close=2             close the next 2 connections without an answer
    GET /_ctl?stall=5&count=1     wait 5 s before answering the next request
    GET /_ctl?reset=1             back to normal
Stop it with SIGTERM (the tests do, by PID)."""
import argparse
import datetime
import email.utils
import hashlib
import http.server
import json
import os
import re
import signal
import sys
import threading
import time
import urllib.parse
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import awstest  # noqa: E402


class State:
    def __init__(self, directory, region, keys):
        self.dir = directory
        self.region = region
        self.keys = keys
        self.lock = threading.Lock()
        self.reset()
        os.makedirs(os.path.join(directory, "objects"), exist_ok=True)
        os.makedirs(os.path.join(directory, "uploads"), exist_ok=True)
        self.log = open(os.path.join(directory, "requests.jsonl"), "a")

    def reset(self):
        self.fail = 0
        self.fail_status = 503
        self.fail_code = "SlowDown"
        self.fail_op = ""
        self.retry_after = 0
        self.skew = 0
        self.close = 0
        self.stall = 0.0
        self.stall_count = 0

    def secrets(self, akid):
        known = self.keys.get(akid)
        m = re.fullmatch(r"(AKID|IMDS)-(\d+)", akid) if self.accept_issued else None
        if known is None and m:  # what aws_standin.py issues, by the same rule
            with self.lock:
                first = self.first_seen.setdefault(akid, time.monotonic())
            if self.issued_lifetime and time.monotonic() - first > self.issued_lifetime:
                # used longer than it can live (it was issued before its first use here)
                raise awstest.Refused(403, "ExpiredToken", "The provided token has expired.")
            n = m.group(2)
            known = ((f"secret-{n}", f"token-{n}") if m.group(1) == "AKID"
                     else (f"imds-secret-{n}", f"imds-token-{n}"))
        return known

    def record(self, rec):
        with self.lock:
            self.log.write(json.dumps(rec) + "\n")
            self.log.flush()


def now_utc(state):
    return datetime.datetime.utcnow() + datetime.timedelta(seconds=state.skew)


def safe_key(key):
    if not key or key.startswith("/") or ".." in key.split("/"):
        raise awstest.Refused(400, "InvalidArgument", "a key this stand-in cannot store")
    return key


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "AmazonS3"

    def log_message(self, fmt, *args):
        pass

    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        self.send_header("Date", email.utils.formatdate(
            now_utc(self.server.state).replace(tzinfo=datetime.timezone.utc).timestamp(),
            usegmt=True))
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def control(self, q):
        st = self.server.state
        with st.lock:
            if "reset" in q:
                st.reset()
            if "fail" in q:
                st.fail = int(q["fail"])
                st.fail_status = int(q.get("status", "503"))
                st.fail_code = q.get("code", "SlowDown")
                st.fail_op = q.get("op", "")
                st.retry_after = int(q.get("retry_after", "0"))
            if "skew" in q:
                st.skew = int(q["skew"])
            if "close" in q:
                st.close = int(q["close"])
            if "stall" in q:
                st.stall = float(q["stall"])
                st.stall_count = int(q.get("count", "1"))
        self.answer(200, b"ok\n")

    def locate(self):
        """(bucket, key) from the Host header and the path."""
        host = self.headers.get("Host", "")
        own = f"127.0.0.1:{self.server.server_address[1]}"
        path = urllib.parse.urlsplit(self.path).path
        if host != own and host.endswith("." + own):
            return host[:-len(own) - 1], urllib.parse.unquote(path[1:])
        parts = path[1:].split("/", 1)
        return urllib.parse.unquote(parts[0]), urllib.parse.unquote(parts[1] if len(parts) > 1 else "")

    def op_of(self, q):
        m = self.command
        if m == "PUT":
            return "UploadPart" if "partNumber" in q else "PutObject"
        if m == "POST":
            return "CreateMultipartUpload" if "uploads" in q else "CompleteMultipartUpload"
        if m == "DELETE":
            return "AbortMultipartUpload" if "uploadId" in q else "DeleteObject"
        return "GetObject"

    def handle_one(self):
        st = self.server.state
        split = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(split.query, keep_blank_values=True))
        if split.path == "/_ctl":
            return self.control(q)
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n) if n else b""
        with st.lock:
            close = st.close > 0
            if close:
                st.close -= 1
            stall = 0.0
            if st.stall_count > 0:
                stall = st.stall
                st.stall_count -= 1
        bucket, key = self.locate()
        op = self.op_of(q)
        rec = {"method": self.command, "op": op, "bucket": bucket, "key": key,
               "query": split.query, "bytes": len(body),
               "content_type": self.headers.get("Content-Type", ""),
               "storage_class": self.headers.get("x-amz-storage-class", ""),
               "sse": self.headers.get("x-amz-server-side-encryption", ""),
               "date": self.headers.get("x-amz-date", ""),
               "token_sent": "x-amz-security-token" in self.headers,
               "akid": self.headers.get("Authorization", "").partition("Credential=")[2]
               .partition("/")[0]}
        if close:
            rec.update(status=0, code="closed")
            st.record(rec)
            self.close_connection = True
            return
        if stall:
            time.sleep(stall)
        status, code, out, hdrs = 200, "", b"", []
        try:
            if op != "GetObject":
                awstest.verify(self.command, self.path, list(self.headers.items()), body,
                               st.secrets, st.region, "s3", now=now_utc(st))
                if self.headers.get("x-amz-content-sha256") != hashlib.sha256(body).hexdigest():
                    raise awstest.Refused(400, "XAmzContentSHA256Mismatch",
                                          "The provided 'x-amz-content-sha256' header does "
                                          "not match what was computed.")
            with st.lock:
                failing = st.fail > 0 and (not st.fail_op or st.fail_op == op)
                if failing:
                    st.fail -= 1
            if failing:
                if st.retry_after:
                    hdrs.append(("Retry-After", str(st.retry_after)))
                raise awstest.Refused(st.fail_status, st.fail_code, "stand-in says so")
            out, hdrs2 = self.operate(op, bucket, safe_key(key), q, body)
            hdrs += hdrs2
        except awstest.Refused as e:
            status, code, out = e.status, e.code, awstest.error_xml(e.code, e.message)
            hdrs.append(("Content-Type", "application/xml"))
        rec.update(status=status, code=code)
        st.record(rec)
        self.answer(status, out, hdrs)

    def obj_path(self, bucket, key):
        return os.path.join(self.server.state.dir, "objects", bucket, key)

    def operate(self, op, bucket, key, q, body):
        st = self.server.state
        if op == "PutObject":
            write_atomic(self.obj_path(bucket, key), body)
            return b"", [("ETag", '"%s"' % hashlib.md5(body).hexdigest())]
        if op == "GetObject":
            try:
                with open(self.obj_path(bucket, key), "rb") as f:
                    return f.read(), []
            except FileNotFoundError:
                raise awstest.Refused(404, "NoSuchKey", "The specified key does not exist.")
        if op == "CreateMultipartUpload":
            uid = uuid.uuid4().hex + "~x/y+z"  # characters that need escaping in a query
            d = upload_dir(st, uid)
            os.makedirs(d)
            with open(os.path.join(d, "meta.json"), "w") as f:
                json.dump({"bucket": bucket, "key": key}, f)
            return (f"<InitiateMultipartUploadResult><Bucket>{bucket}</Bucket><Key>{key}</Key>"
                    f"<UploadId>{uid}</UploadId></InitiateMultipartUploadResult>").encode(), []
        uid = q.get("uploadId", "")
        d = upload_dir(st, uid)
        if not uid or not os.path.isdir(d):
            raise awstest.Refused(404, "NoSuchUpload", "The specified upload does not exist.")
        if op == "UploadPart":
            n = int(q["partNumber"])
            write_atomic(os.path.join(d, str(n)), body)
            return b"", [("ETag", '"%s"' % hashlib.md5(body).hexdigest())]
        if op == "AbortMultipartUpload":
            for f in os.listdir(d):
                os.unlink(os.path.join(d, f))
            os.rmdir(d)
            with open(os.path.join(st.dir, "aborted.jsonl"), "a") as f:
                f.write(json.dumps({"bucket": bucket, "key": key, "upload_id": uid}) + "\n")
            return b"", []
        # CompleteMultipartUpload: the ETags listed must be those of the parts, in order
        text = body.decode()
        parts = []
        for chunk in text.split("<Part>")[1:]:
            num = int(chunk.split("<PartNumber>")[1].split("</PartNumber>")[0])
            etag = chunk.split("<ETag>")[1].split("</ETag>")[0]
            parts.append((num, etag))
        if not parts or [p[0] for p in parts] != list(range(1, len(parts) + 1)):
            raise awstest.Refused(400, "InvalidPartOrder", "parts not listed in order")
        data = b""
        for num, etag in parts:
            try:
                with open(os.path.join(d, str(num)), "rb") as f:
                    part = f.read()
            except FileNotFoundError:
                raise awstest.Refused(400, "InvalidPart", f"part {num} not uploaded")
            if etag != '"%s"' % hashlib.md5(part).hexdigest():
                raise awstest.Refused(400, "InvalidPart", f"part {num}: wrong ETag")
            if num < len(parts) and len(part) < 5 << 20:
                raise awstest.Refused(400, "EntityTooSmall", f"part {num} under 5 MiB")
            data += part
        write_atomic(self.obj_path(bucket, key), data)
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))
        os.rmdir(d)
        return (f"<CompleteMultipartUploadResult><Key>{key}</Key></CompleteMultipartUploadResult>"
                ).encode(), []

    def do_PUT(self):
        self.handle_one()

    do_POST = do_PUT
    do_GET = do_PUT
    do_DELETE = do_PUT


def upload_dir(st, uid):
    return os.path.join(st.dir, "uploads", uid.replace("/", "_"))


def write_atomic(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp-standin"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--region", default="us-east-1")
    ap.add_argument("--key", action="append", default=[], help="AKID:SECRET[:TOKEN]")
    ap.add_argument("--accept-issued", action="store_true",
                    help="also the keys aws_standin.py issues (AKID-n, IMDS-n)")
    ap.add_argument("--issued-lifetime", type=float, default=0.0,
                    help="refuse an issued key used this long after its first use")
    a = ap.parse_args()
    keys = {}
    for k in a.key:
        p = k.split(":", 2)
        keys[p[0]] = (p[1], p[2] if len(p) > 2 else None)
    os.makedirs(a.dir, exist_ok=True)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    srv.state = State(a.dir, a.region, keys)
    srv.state.accept_issued = a.accept_issued
    srv.state.issued_lifetime = a.issued_lifetime
    srv.state.first_seen = {}
    signal.signal(signal.SIGTERM, lambda *x: os._exit(0))
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
