"""Helpers of the s3 output's tests: the stand-in S3 (s3_standin.py) started and stopped by
PID, a config with one s3 output, and the objects stored read back."""
import gzip
import json
import os
import subprocess

import httptest as ht
import tailtest as tt

AKID = "AKIDSTANDIN0000000001"
SECRET = "standin/Secret+Key/0123456789abcdefSECRET"
TOKEN = "FwoGZXIvYXdzEStandInSessionTokenSECRET//" + "x" * 300
REGION = "eu-west-3"
BUCKET = "archive"


class Store(ht.Receiver):
    """One s3_standin.py process; its state lives in DIR (kept across restarts). token: the
    session token the key needs, or None."""

    def __init__(self, directory, port=0, token=None, accept_issued=0):
        """accept_issued: also aws_standin.py's issued keys, each refused (ExpiredToken)
        once used longer than this many seconds."""
        self.token = token
        self.accept_issued = accept_issued
        super().__init__(directory, port=port, script="s3_standin.py")

    def extra_args(self):
        key = f"{AKID}:{SECRET}" + (f":{self.token}" if self.token else "")
        return ["--region", REGION, "--key", key] + (
            ["--accept-issued", "--issued-lifetime", str(self.accept_issued)]
            if self.accept_issued else [])

    def url(self, path=""):
        return f"http://127.0.0.1:{self.port}{path}"

    def objects(self, bucket=BUCKET):
        """{key: bytes} of every object stored in bucket."""
        root = os.path.join(self.dir, "objects", bucket)
        out = {}
        for d, _, files in os.walk(root):
            for f in files:
                if f.endswith(".tmp-standin"):
                    continue
                p = os.path.join(d, f)
                with open(p, "rb") as fh:
                    out[os.path.relpath(p, root)] = fh.read()
        return out

    def uploads(self):
        """Multipart uploads neither completed nor aborted."""
        return os.listdir(os.path.join(self.dir, "uploads"))

    def aborted(self):
        return ht.read_jsonl(os.path.join(self.dir, "aborted.jsonl"))


def decode(key, data):
    """An object's NDJSON text, by its key's suffix."""
    if key.endswith(".zst"):
        r = subprocess.run(["zstd", "-dc", "-q"], input=data, capture_output=True, check=True)
        return r.stdout
    if key.endswith(".gz"):
        return gzip.decompress(data)
    return data


def messages(store, bucket=BUCKET):
    """Every event's message over every object, with the key it came from."""
    out = []
    for key, data in sorted(store.objects(bucket).items()):
        for line in decode(key, data).split(b"\n"):
            if line:
                out.append((key, json.loads(line)["message"]))
    return out


def config(wd, store, keys, batch="flush_interval: 100ms, max_events: 500", creds=True, **kw):
    """A config of one s3 output named collector reading wd's *.log into the stand-in."""
    lines = [f"bucket: {BUCKET}", f"region: {REGION}", f"endpoint: {store.url()}",
             "max_in_flight: 64", "backoff: {initial: 200ms, max: 1s}"]
    if creds:
        lines += [f"access_key_id: {AKID}", "secret_access_key: ${S3_SECRET}"]
    return ht.write_config(wd, lines + keys, out_type="s3", batch=batch, **kw)


def env(**extra):
    e = dict(os.environ, S3_SECRET=SECRET)
    e.update(extra)
    return e


def run(name, cases, token=None):
    """Runs each case(c, wd, store) against one stand-in and prints the summary; the
    daemons get S3_SECRET (and S3_TOKEN) in their environment."""
    c = tt.Checks()
    os.environ["S3_SECRET"] = SECRET
    os.environ["S3_TOKEN"] = TOKEN
    wd = tt.Workdir(name)
    store = Store(os.path.join(wd.root, "store"), token=token)
    try:
        for case in cases:
            case(c, wd, store)
    finally:
        store.stop()
        wd.cleanup()
    c.finish()
