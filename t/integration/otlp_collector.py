"""A stand-in OpenTelemetry Collector (OTLP/HTTP logs) for the otlp output's tests. Python
standard library only: the protobuf is read by a small wire decoder written from the field
numbers of the OTLP .proto files (below), the JSON form by json with OTLP's mapping rules
checked (lowerCamelCase names, 64-bit integers as strings).

    python3 otlp_collector.py --dir DIR [--port N]

Listens on 127.0.0.1 (port 0 picks a free one) and prints the port on its first stdout
line. A POST body is decompressed by its Content-Encoding (gzip; zstd with the `zstd`
command) and decoded by its Content-Type (application/x-protobuf or application/json)
into one normalised form, the same for both:

  {"resourceLogs": [{"resource": {"attributes": {KEY: VALUE}},
                     "scopeLogs": [{"scope": {"name", "version"},
                                    "logRecords": [{"timeUnixNano": int,
                                                    "observedTimeUnixNano": int,
                                                    "severityNumber": int, "severityText": str,
                                                    "body": VALUE, "attributes": {KEY: VALUE},
                                                    "traceId", "spanId": hex, when set}]}]}]}

where a VALUE is a str, bool, int, float, list (arrayValue), dict (kvlistValue) or None (an
empty AnyValue). A key written twice in one attribute list is an error (answered 400). Each
request answered 200 is appended to DIR/accepted.ndjson (one line); DIR/requests.jsonl gets
one record per request (path, status, content type and encoding, records, error).

Control (same port, GET, never recorded):
    /_ctl?seq=429,503,200&retry_after=2   answer the next requests with these statuses in
                                          turn (429 and 503 carry Retry-After when given)
    /_ctl?partial=3&msg=TEXT&count=1      the next `count` 200s carry a partial_success
                                          (rejected 3, error_message TEXT); partial=all:
                                          as many as the request's records
Each control request replaces every mode set before it. Stop it with SIGTERM (by PID)."""
import argparse
import gzip
import http.server
import json
import os
import signal
import struct
import subprocess
import sys
import threading
import time
import urllib.parse

# Field numbers (opentelemetry/proto: collector/logs/v1, logs/v1, common/v1, resource/v1).
REQ_RESOURCE_LOGS = 1
RL_RESOURCE, RL_SCOPE_LOGS = 1, 2
RES_ATTRIBUTES = 1
SL_SCOPE, SL_LOG_RECORDS = 1, 2
SCOPE_NAME, SCOPE_VERSION = 1, 2
LR_TIME, LR_SEV_NUM, LR_SEV_TEXT, LR_BODY, LR_ATTRS, LR_OBSERVED = 1, 2, 3, 5, 6, 11
LR_TRACE_ID, LR_SPAN_ID = 9, 10
KV_KEY, KV_VALUE = 1, 2
AV_STRING, AV_BOOL, AV_INT, AV_DOUBLE, AV_ARRAY, AV_KVLIST, AV_BYTES = 1, 2, 3, 4, 5, 6, 7
LIST_VALUES = 1
RESP_PARTIAL = 1
PS_REJECTED, PS_MESSAGE = 1, 2


class DecodeError(Exception):
    pass


# ---- protobuf wire format ----

def varint(buf, i):
    v, shift = 0, 0
    while True:
        if i >= len(buf):
            raise DecodeError("varint cut short")
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        if not b & 0x80:
            return v, i
        shift += 7
        if shift > 63:
            raise DecodeError("varint too long")


def fields(buf):
    """[(field, wire type, value)] of one message: ints for varints and fixed64, bytes for
    length-delimited fields."""
    out, i = [], 0
    while i < len(buf):
        tag, i = varint(buf, i)
        num, wire = tag >> 3, tag & 7
        if num == 0:
            raise DecodeError("field number 0")
        if wire == 0:
            v, i = varint(buf, i)
        elif wire == 1:
            if i + 8 > len(buf):
                raise DecodeError("fixed64 cut short")
            v = struct.unpack_from("<Q", buf, i)[0]
            i += 8
        elif wire == 2:
            n, i = varint(buf, i)
            if i + n > len(buf):
                raise DecodeError("length-delimited field past the end")
            v = bytes(buf[i:i + n])
            i += n
        elif wire == 5:
            v = struct.unpack_from("<I", buf, i)[0]
            i += 4
        else:
            raise DecodeError(f"wire type {wire}")
        out.append((num, wire, v))
    return out


def want(wire, expected, what):
    if wire != expected:
        raise DecodeError(f"{what}: wire type {wire}, expected {expected}")


def pb_any(buf):
    v = None
    for num, wire, val in fields(buf):
        if num == AV_STRING:
            want(wire, 2, "string_value")
            v = val.decode("utf-8")
        elif num == AV_BOOL:
            want(wire, 0, "bool_value")
            v = bool(val)
        elif num == AV_INT:
            want(wire, 0, "int_value")
            v = val - (1 << 64) if val >= 1 << 63 else val
        elif num == AV_DOUBLE:
            want(wire, 1, "double_value")
            v = struct.unpack("<d", struct.pack("<Q", val))[0]
        elif num == AV_ARRAY:
            want(wire, 2, "array_value")
            v = [pb_any(x) for n, w, x in fields(val) if n == LIST_VALUES]
        elif num == AV_KVLIST:
            want(wire, 2, "kvlist_value")
            v = pb_kvs([x for n, w, x in fields(val) if n == LIST_VALUES])
        elif num == AV_BYTES:
            v = val.hex()
    return v


def pb_kvs(items):
    out = {}
    for item in items:
        key, value = None, None
        for num, wire, val in fields(item):
            if num == KV_KEY:
                key = val.decode("utf-8")
            elif num == KV_VALUE:
                value = pb_any(val)
        if key in out:
            raise DecodeError(f"attribute {key!r} written twice")
        out[key] = value
    return out


def pb_record(buf):
    rec = {"timeUnixNano": 0, "observedTimeUnixNano": 0, "severityNumber": 0,
           "severityText": "", "body": None, "attributes": {}}
    attrs = []
    for num, wire, val in fields(buf):
        if num == LR_TIME:
            want(wire, 1, "time_unix_nano")
            rec["timeUnixNano"] = val
        elif num == LR_OBSERVED:
            want(wire, 1, "observed_time_unix_nano")
            rec["observedTimeUnixNano"] = val
        elif num == LR_SEV_NUM:
            rec["severityNumber"] = val
        elif num == LR_SEV_TEXT:
            rec["severityText"] = val.decode("utf-8")
        elif num == LR_BODY:
            rec["body"] = pb_any(val)
        elif num == LR_ATTRS:
            attrs.append(val)
        elif num == LR_TRACE_ID:
            want(wire, 2, "trace_id")
            rec["traceId"] = val.hex()
        elif num == LR_SPAN_ID:
            want(wire, 2, "span_id")
            rec["spanId"] = val.hex()
    rec["attributes"] = pb_kvs(attrs)
    return rec


def pb_request(buf):
    out = []
    for num, wire, rl in fields(buf):
        if num != REQ_RESOURCE_LOGS:
            continue
        res, scopes = {"attributes": {}}, []
        for n, w, v in fields(rl):
            if n == RL_RESOURCE:
                res = {"attributes": pb_kvs([x for k, _, x in fields(v) if k == RES_ATTRIBUTES])}
            elif n == RL_SCOPE_LOGS:
                scope, recs = {}, []
                for k, _, x in fields(v):
                    if k == SL_SCOPE:
                        for f, _, y in fields(x):
                            if f == SCOPE_NAME:
                                scope["name"] = y.decode()
                            elif f == SCOPE_VERSION:
                                scope["version"] = y.decode()
                    elif k == SL_LOG_RECORDS:
                        recs.append(pb_record(x))
                scopes.append({"scope": scope, "logRecords": recs})
        out.append({"resource": res, "scopeLogs": scopes})
    return {"resourceLogs": out}


# ---- OTLP JSON ----

def js_any(v):
    if not isinstance(v, dict) or len(v) > 1:
        raise DecodeError(f"AnyValue {v!r}")
    if not v:
        return None
    (k, x), = v.items()
    if k == "stringValue":
        return x
    if k == "boolValue":
        return bool(x)
    if k == "intValue":
        if not isinstance(x, str):
            raise DecodeError("intValue must be a string (64-bit integers in OTLP JSON)")
        return int(x)
    if k == "doubleValue":
        return float(x)
    if k == "arrayValue":
        return [js_any(e) for e in x.get("values", [])]
    if k == "kvlistValue":
        return js_kvs(x.get("values", []))
    raise DecodeError(f"AnyValue member {k}")


def js_kvs(items):
    out = {}
    for kv in items:
        if kv["key"] in out:
            raise DecodeError(f"attribute {kv['key']!r} written twice")
        out[kv["key"]] = js_any(kv.get("value", {}))
    return out


def js_u64(v, what):
    if not isinstance(v, str):
        raise DecodeError(f"{what} must be a string")
    return int(v)


def js_request(doc):
    out = []
    for rl in doc.get("resourceLogs", []):
        res = {"attributes": js_kvs(rl.get("resource", {}).get("attributes", []))}
        scopes = []
        for sl in rl.get("scopeLogs", []):
            recs = []
            for r in sl.get("logRecords", []):
                recs.append({"timeUnixNano": js_u64(r.get("timeUnixNano", "0"), "timeUnixNano"),
                             "observedTimeUnixNano": js_u64(r.get("observedTimeUnixNano", "0"),
                                                            "observedTimeUnixNano"),
                             "severityNumber": int(r.get("severityNumber", 0)),
                             "severityText": r.get("severityText", ""),
                             "body": js_any(r.get("body", {})),
                             "attributes": js_kvs(r.get("attributes", []))})
                for k in ("traceId", "spanId"):  # hex text in OTLP JSON, not base64
                    if k in r:
                        if not isinstance(r[k], str) or r[k] != r[k].lower():
                            raise DecodeError(f"{k} must be lowercase hex")
                        recs[-1][k] = bytes.fromhex(r[k]).hex()
            scopes.append({"scope": sl.get("scope", {}), "logRecords": recs})
        out.append({"resource": res, "scopeLogs": scopes})
    return {"resourceLogs": out}


def records(accepted):
    """(resource attributes, record) of every record of the normalised requests accepted
    (the lines of DIR/accepted.ndjson), in order: for the tests."""
    return [(rl["resource"]["attributes"], r) for req in accepted
            for rl in req["resourceLogs"] for sl in rl["scopeLogs"] for r in sl["logRecords"]]


# ---- answers ----

def pb_varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append(0x80 | (v & 0x7F))
        v >>= 7
    out.append(v)
    return bytes(out)


def partial_body(rejected, msg, as_json):
    if as_json:
        return json.dumps({"partialSuccess": {"rejectedLogRecords": str(rejected),
                                              "errorMessage": msg}}).encode()
    m = msg.encode()
    ps = bytes([PS_REJECTED << 3]) + pb_varint(rejected) + \
        bytes([(PS_MESSAGE << 3) | 2]) + pb_varint(len(m)) + m
    return bytes([(RESP_PARTIAL << 3) | 2]) + pb_varint(len(ps)) + ps


class State:
    def __init__(self, directory):
        self.lock = threading.Lock()
        self.seq = []
        self.retry_after = ""
        self.partial = None
        self.msg = ""
        self.count = 0
        self.accepted = open(os.path.join(directory, "accepted.ndjson"), "a")
        self.log = open(os.path.join(directory, "requests.jsonl"), "a")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, body, ctype="text/plain", headers=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if not self.path.startswith("/_ctl"):
            self.reply(404, b"not here\n")
            return
        q = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
        st = self.server.state
        with st.lock:
            st.seq = [int(x) for x in q.get("seq", [""])[0].split(",") if x]
            st.retry_after = q.get("retry_after", [""])[0]
            st.partial = q.get("partial", [None])[0]
            st.msg = q.get("msg", [""])[0]
            st.count = int(q.get("count", ["1"])[0])
        self.reply(200, b"ok\n")

    def do_POST(self):
        st = self.server.state
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        ctype = self.headers.get("Content-Type", "")
        rec = {"path": self.path, "content_type": ctype, "bytes": len(body),
               "encoding": self.headers.get("Content-Encoding", ""),
               "authorization": self.headers.get("Authorization", ""),
               "x_test": self.headers.get("X-Test", ""), "time": time.time()}
        as_json = ctype == "application/json"
        with st.lock:
            status = st.seq.pop(0) if st.seq else 200
        try:
            if rec["encoding"] == "gzip":
                data = gzip.decompress(body)
            elif rec["encoding"] == "zstd":  # no zstd module in Debian 12's python: the command
                data = subprocess.run(["zstd", "-dcq"], input=body, capture_output=True,
                                      check=True).stdout
            else:
                data = body
            if as_json:
                req = js_request(json.loads(data))
            elif ctype == "application/x-protobuf":
                req = pb_request(data)
            else:
                raise DecodeError("Content-Type " + ctype)
        except (DecodeError, ValueError, KeyError, TypeError, OSError, EOFError,
                subprocess.CalledProcessError) as e:
            status, req = 400, None
            rec["error"] = str(e)
            with open(os.path.join(self.server.dir, "refused.bin"), "wb") as f:
                f.write(data if "data" in locals() else body)
        n = sum(len(sl["logRecords"]) for rl in (req or {}).get("resourceLogs", [])
                for sl in rl["scopeLogs"])
        rec["records"] = n
        rec["status"] = status
        answer, headers = b"", []
        with st.lock:
            if status == 200:
                if st.partial is not None and st.count > 0:
                    st.count -= 1
                    rejected = n if st.partial == "all" else int(st.partial)
                    answer = partial_body(rejected, st.msg, as_json)
                    rec["partial"] = rejected
                elif as_json:
                    answer = b"{}"
                st.accepted.write(json.dumps(req) + "\n")
                st.accepted.flush()
            elif status in (429, 503) and st.retry_after:
                headers.append(("Retry-After", st.retry_after))
            st.log.write(json.dumps(rec) + "\n")
            st.log.flush()
        if status == 400:
            answer = rec.get("error", "bad request").encode()
        self.reply(status, answer, ctype if status == 200 else "text/plain", headers)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    srv = Server(("127.0.0.1", args.port), Handler)
    srv.state = State(args.dir)
    srv.dir = args.dir
    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
