#!/usr/bin/env python3
"""The SigV4 signer against botocore's: 200 random requests (methods, paths with spaces,
UTF-8, reserved characters, escapes and dot segments, queries with repeated keys, headers
with odd white space and repeated names, bodies, with and without a session token, S3 and
other services), each signed by t/unit/sigv4_sign (the signer of src/output/sigv4.c) and by
botocore.auth.SigV4Auth or S3SigV4Auth; every Authorization value must be the same."""
import binascii
import datetime
import os
import random
import subprocess
import sys
import time
from urllib.parse import quote

import botocore.auth
from botocore.awsrequest import AWSRequest
from botocore.compat import HTTPHeaders
from botocore.credentials import Credentials

N = 200
AKID = "AKIDEXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
HOST = "example.amazonaws.com"
PATH_CHARS = "abcXYZ019-_.~ !$&'()*+,;=:@%\u00e9\u4e2d\U0001f600"
TEXT_CHARS = "abcXYZ019-_.~ !$&'()*+,;=:@/?%\u00e9\u4e2d"
VALUE_CHARS = "abcXYZ019-_.~!$&'()*+,;=:@/?%\"<>"


def rand_str(rng, chars, lo, hi):
    return "".join(rng.choice(chars) for _ in range(rng.randint(lo, hi)))


def rand_path(rng):
    segs = []
    for _ in range(rng.randint(0, 4)):
        r = rng.random()
        if r < 0.1:
            segs.append(".")
        elif r < 0.2:
            segs.append("..")
        elif r < 0.25:
            segs.append("")
        elif r < 0.35:
            segs.append(quote(rand_str(rng, TEXT_CHARS, 1, 6), safe=""))
        else:
            segs.append(rand_str(rng, PATH_CHARS, 1, 8))
    path = "/" + "/".join(segs)
    if segs and rng.random() < 0.3:
        path += "/"
    return path


def rand_query(rng):
    pairs = []
    keys = [rand_str(rng, TEXT_CHARS, 1, 6) for _ in range(rng.randint(1, 3))]
    for _ in range(rng.randint(0, 5)):
        k = rng.choice(keys)
        v = rand_str(rng, TEXT_CHARS, 0, 8)
        pairs.append(quote(k, safe="-_.~") + "=" + quote(v, safe="-_.~"))
    return "&".join(pairs)


def rand_value(rng):
    words = [rand_str(rng, VALUE_CHARS, 1, 6) for _ in range(rng.randint(1, 3))]
    out = rng.choice(["", " ", "\t", "  \t "])
    for i, w in enumerate(words):
        if i:
            out += rng.choice([" ", "  ", "\t", " \t  "])
        out += w
    return out + rng.choice(["", " ", "\t "])


def rand_headers(rng):
    headers = [("Host", HOST)]
    names = ["Content-Type", "X-Custom", "my-header", "X-Amz-Meta-A", "Accept"]
    for _ in range(rng.randint(0, 5)):
        name = rng.choice(names)
        if rng.random() < 0.5:
            name = "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in name)
        headers.append((name, rand_value(rng)))
    return headers


def rand_case(rng):
    day = datetime.datetime(2026, 1, 1) + datetime.timedelta(seconds=rng.randint(0, 86400 * 365))
    return {
        "s3": rng.random() < 0.25,
        "token": rand_str(rng, "ABCabc012+/=", 20, 60) if rng.random() < 0.5 else "",
        "date": day,
        "method": rng.choice(["GET", "POST", "PUT", "DELETE", "HEAD"]),
        "path": rand_path(rng),
        "query": rand_query(rng) if rng.random() < 0.7 else "",
        "body": bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))
        if rng.random() < 0.6 else b"",
        "headers": rand_headers(rng),
    }


def botocore_authz(case):
    url = "http://" + HOST + case["path"] + ("?" + case["query"] if case["query"] else "")
    req = AWSRequest(method=case["method"], url=url, data=case["body"])
    hdrs = HTTPHeaders()
    for name, value in case["headers"]:
        hdrs[name] = value  # appends: repeated names stay repeated
    req.headers = hdrs
    creds = Credentials(AKID, SECRET, case["token"] or None)
    cls = botocore.auth.S3SigV4Auth if case["s3"] else botocore.auth.SigV4Auth
    auth = cls(creds, "s3" if case["s3"] else "service", "us-east-1")
    botocore.auth.get_current_datetime = lambda: case["date"]
    auth.add_auth(req)
    return req.headers["Authorization"]


def harness_line(case):
    def h(x):
        return binascii.hexlify(x if isinstance(x, bytes) else x.encode()).decode()

    fields = [
        "s3" if case["s3"] else "service",
        "1" if case["s3"] else "0",
        case["token"],
        case["date"].strftime("%Y%m%dT%H%M%SZ"),
        case["method"],
        case["path"],
        case["query"],
        case["body"],
    ]
    for name, value in case["headers"]:
        fields += [name, value]
    return "\t".join(h(f) for f in fields)


def main():
    start = time.monotonic()
    seed = int(os.environ.get("SIGV4_SEED", "24"))
    rng = random.Random(seed)
    cases = [rand_case(rng) for _ in range(N)]
    expected = [botocore_authz(c) for c in cases]
    signer = os.path.join(os.environ.get("LF_BUILDDIR", "."), "t/unit/sigv4_sign")
    out = subprocess.run([signer], input="\n".join(harness_line(c) for c in cases) + "\n",
                         capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        print("sigv4_sign exited %d: %s" % (out.returncode, out.stderr))
        return 1
    got = out.stdout.splitlines()
    if len(got) != N:
        print("sigv4_sign answered %d of %d requests" % (len(got), N))
        return 1
    bad = 0
    for i, (case, want, have) in enumerate(zip(cases, expected, got)):
        if want != have:
            bad += 1
            if bad <= 5:
                print("case %d differs (seed %d): %r\n  botocore: %s\n  logferry: %s"
                      % (i, seed, {k: case[k] for k in ("s3", "method", "path", "query",
                                                        "headers")}, want, have))
    kinds = sum(1 for c in cases if c["s3"]), sum(1 for c in cases if c["token"])
    print("%d requests (%d s3, %d with a session token): %d differ; %.2f s"
          % (N, kinds[0], kinds[1], bad, time.monotonic() - start))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
