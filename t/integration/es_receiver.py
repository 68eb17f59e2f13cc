"""A test stand-in for Elasticsearch's _bulk API, for the elasticsearch output's tests.
Python standard library (gzip bodies only, as Elasticsearch accepts).

    python3 es_receiver.py --dir DIR [--port N]

Listens on 127.0.0.1 (port 0: any free port) and prints the port on its first line.
POST /_bulk takes action/source line pairs and answers per item as Elasticsearch 8 does:
`create` of a new (_index, _id) stores the document (201, "created"); of an existing one
answers 409 version_conflict_engine_exception, as Elasticsearch does, only for an _id it
indexed before; when the refused document is not the one stored under that _id (another
message, input or log.offset: another event, which the agent would then count as delivered
and lose), the item is recorded with "clash": true and DIR/clashes.jsonl gets both sources; a source whose "message" contains
MAPPING_ERROR answers 400 mapper_parsing_exception. Stored documents are appended to
DIR/docs.jsonl ({"index", "id", "source"}); each request to DIR/requests.jsonl (query,
headers of interest, items with their action, index, id and answered status). Started
again on the same DIR (after an outage), it knows the documents it stored before.

The answer's members come in Elasticsearch 8's order, {"errors":..,"took":..,"items":[..]};
a `filter_path` query parameter keeps only the members it names, as Elasticsearch does
(`items.*.status`: each item's status alone).

Control: GET /_ctl?reject=N answers the first N items of the next _bulk request 429
es_rejected_execution_exception; GET /_ctl?fail=N answers the next N _bulk requests 503 as a
whole (nothing stored; recorded with status 503). Answers that are odd but possible, each for
the next N answers: trailing=N puts `errors` after `items`; claim=N says "errors": true
whatever the items say; short=N leaves the last item out of the answer (its document is
stored all the same). Each request record carries the SHA-256 of the body as sent. Stop it
with SIGTERM."""
import argparse
import gzip
import hashlib
import http.server
import json
import os
import signal
import sys
import threading
import time
import urllib.parse

from http_receiver import Server  # the same threaded, address-reusing server


def filter_path(value, paths):
    """value with only the members paths name (lists of dotted segments, `*` any name), as
    Elasticsearch's filter_path does: arrays filtered element by element, and objects or
    arrays left empty dropped."""
    if isinstance(value, list):
        kept = [filter_path(v, paths) for v in value]
        return [v for v in kept if v not in ({}, [])]
    if not isinstance(value, dict):
        return value
    out = {}
    for k, v in value.items():
        rests = [p[1:] for p in paths if p and p[0] in ("*", k)]
        if any(not r for r in rests):
            out[k] = v
        elif rests:
            f = filter_path(v, rests)
            if f not in ({}, []) and isinstance(v, (dict, list)):
                out[k] = f
    return out


class State:
    def __init__(self, directory):
        self.lock = threading.Lock()
        self.reject = 0
        self.fail = 0
        self.odd = {"trailing": 0, "claim": 0, "short": 0}
        self.docs = {}  # what DIR/docs.jsonl holds: a restart keeps the documents
        try:
            with open(os.path.join(directory, "docs.jsonl")) as f:
                for d in (json.loads(l) for l in f if l.strip()):
                    self.docs[(d["index"], d["id"])] = d["source"]
        except FileNotFoundError:
            pass
        self.seq = len(self.docs)
        self.docs_f = open(os.path.join(directory, "docs.jsonl"), "a")
        self.log_f = open(os.path.join(directory, "requests.jsonl"), "a")
        self.clash_f = open(os.path.join(directory, "clashes.jsonl"), "a")


def same_event(a, b):
    """Whether two sources are one event sent twice: the same message, input and offset.
    The path may differ (a rename between the sends) and so may @timestamp (read again)."""
    def key(s):
        return (s.get("message"), s.get("input"), (s.get("log") or {}).get("offset"))
    return key(a) == key(b)


def shards():
    return {"total": 2, "successful": 1, "failed": 0}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, obj):
        body = json.dumps(obj, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        q = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
        if self.path.startswith("/_ctl"):
            with self.server.state.lock:
                self.server.state.reject = int(q.get("reject", ["0"])[0])
                self.server.state.fail = int(q.get("fail", ["0"])[0])
                for k in self.server.state.odd:
                    self.server.state.odd[k] = int(q.get(k, ["0"])[0])
            self.reply(200, {"acknowledged": True})
        else:
            self.reply(404, {"error": "no such route", "status": 404})

    def item(self, st, action, meta, source):
        index = meta.get("_index", "")
        if action != "create":
            return {action: {"_index": index, "status": 400, "error": {
                "type": "illegal_argument_exception", "reason": "only create is expected"}}}
        doc_id = meta.get("_id")
        if doc_id is None:
            doc_id = f"auto-{st.seq}"
        if st.reject > 0:
            st.reject -= 1
            return {"create": {"_index": index, "_id": doc_id, "status": 429, "error": {
                "type": "es_rejected_execution_exception",
                "reason": "rejected execution of coordinating operation"}}}
        if "MAPPING_ERROR" in source.get("message", ""):
            return {"create": {"_index": index, "_id": doc_id, "status": 400, "error": {
                "type": "mapper_parsing_exception",
                "reason": "failed to parse field [message] of type [long] in document with id "
                          f"'{doc_id}'. Preview of field's value: 'MAPPING_ERROR'"}}}
        if (index, doc_id) in st.docs:
            if not same_event(st.docs[(index, doc_id)], source):
                st.clash_f.write(json.dumps({"index": index, "id": doc_id,
                                             "stored": st.docs[(index, doc_id)],
                                             "refused": source}) + "\n")
                st.clash_f.flush()
                self.clashed = True
            return {"create": {"_index": index, "_id": doc_id, "status": 409, "error": {
                "type": "version_conflict_engine_exception",
                "reason": f"[{doc_id}]: version conflict, document already exists "
                          "(current version [1])",
                "index_uuid": "aAsFqTI0Tc2W0LCWgPNrOA", "shard": "0", "index": index}}}
        st.docs[(index, doc_id)] = source
        st.seq += 1
        st.docs_f.write(json.dumps({"index": index, "id": doc_id, "source": source}) + "\n")
        st.docs_f.flush()
        return {"create": {"_index": index, "_id": doc_id, "_version": 1, "result": "created",
                           "_shards": shards(), "_seq_no": st.seq - 1, "_primary_term": 1,
                           "status": 201}}

    def do_POST(self):
        t0 = time.monotonic()
        url = urllib.parse.urlparse(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        rec = {"path": url.path, "query": url.query,
               "encoding": self.headers.get("Content-Encoding", ""),
               "content_type": self.headers.get("Content-Type", ""),
               "authorization": self.headers.get("Authorization", ""),
               "sha256": hashlib.sha256(body).hexdigest()}
        if url.path != "/_bulk":
            self.reply(404, {"error": "no such index", "status": 404})
            return
        if rec["encoding"] == "gzip":
            body = gzip.decompress(body)
        lines = body.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        st = self.server.state
        with st.lock:
            failing = st.fail > 0
            st.fail -= 1 if failing else 0
            if failing:
                rec["status"], rec["items"] = 503, []
                st.log_f.write(json.dumps(rec) + "\n")
                st.log_f.flush()
        if failing:
            self.reply(503, {"error": {"type": "unavailable_shards_exception",
                                       "reason": "primary shard is not active"}, "status": 503})
            return
        if len(lines) % 2 != 0 or not body.endswith(b"\n"):
            self.reply(400, {"error": {"type": "illegal_argument_exception",
                                       "reason": "The bulk request must be terminated by a "
                                                 "newline [\\n]"}, "status": 400})
            return
        items = []
        with st.lock:
            clashes = []
            for a, s in zip(lines[0::2], lines[1::2]):
                action_obj = json.loads(a)
                action = next(iter(action_obj))
                self.clashed = False
                items.append(self.item(st, action, action_obj[action], json.loads(s)))
                clashes.append(self.clashed)
            odd = {k: n > 0 for k, n in st.odd.items()}
            for k in st.odd:
                st.odd[k] -= 1 if odd[k] else 0
            rec["odd"] = [k for k, v in odd.items() if v]
            rec["items"] = [{"action": next(iter(i)), "index": i[next(iter(i))].get("_index"),
                             "id": i[next(iter(i))].get("_id"),
                             "status": i[next(iter(i))]["status"]} for i in items]
            for rec_item, clashed in zip(rec["items"], clashes):
                if clashed:
                    rec_item["clash"] = True
            st.log_f.write(json.dumps(rec) + "\n")
            st.log_f.flush()
        errors = odd["claim"] or any(i[next(iter(i))]["status"] >= 300 for i in items)
        took = int((time.monotonic() - t0) * 1000)
        if odd["short"]:
            items = items[:-1]
        if odd["trailing"]:
            answer = {"took": took, "items": items, "errors": errors}
        else:  # Elasticsearch 8's order (7.x put took first)
            answer = {"errors": errors, "took": took, "items": items}
        fp = urllib.parse.parse_qs(url.query).get("filter_path")
        if fp:
            answer = filter_path(answer, [p.split(".") for p in fp[0].split(",")])
        self.reply(200, answer)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    srv = Server(("127.0.0.1", args.port), Handler)
    srv.state = State(args.dir)
    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
