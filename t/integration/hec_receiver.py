"""A test stand-in for Splunk's HTTP Event Collector, for the splunk_hec output's tests.
Python standard library.

    python3 hec_receiver.py --dir DIR --token TOKEN [--port N] [--ack]

Listens on 127.0.0.1 (port 0: any free port) and prints the port on its first line.

POST /services/collector/event takes events as HEC does: concatenated JSON objects (any
whitespace between them), gzip'd when Content-Encoding says so, each with an "event".
Authorization must be "Splunk TOKEN": none is 401 code 2, another form 401 code 3, another
token 403 code 4. An object that is not JSON is 400 code 6, one without "event" 400 code
12, a blank event 400 code 13, an event whose message holds BAD_DATA 400 code 6; such
answers carry "invalid-event-number" (from 0), and the events before that one are stored,
as HEC does. Stored events go to DIR/events.jsonl ({"obj": the object as sent, "channel",
"ack_id"}), every request to DIR/requests.jsonl ({"path", "status", "code", "encoding",
"content_type", "channel", "events"}: never the token).

With --ack (the token has indexer acknowledgement on), every request needs an
X-Splunk-Request-Channel header (else 400 code 10, "Data channel is missing"), and a
200 answer carries the request's "ackId", counted per channel from 0.
POST /services/collector/ack {"acks":[ids]} (channel and token checked the same way)
answers {"acks":{"ID":true|false}}: true once the id's events are "indexed" (ack_delay
seconds after they were taken), after which the id is forgotten (asked again: false).

Control: GET /_ctl?token=T (the token now accepted), ack_delay=S, never=N (the next N
ackIds handed out are never indexed), busy=N (the next N event requests are answered 503
code 9, "Server is busy"). Each only changes what it names. Stop it with SIGTERM."""
import argparse
import gzip
import http.server
import json
import os
import signal
import sys
import threading
import time
import urllib.parse

from http_receiver import Server  # the same threaded, address-reusing server


class State:
    def __init__(self, directory, token, ack):
        self.lock = threading.Lock()
        self.token = token
        self.ack = ack
        self.ack_delay = 0.0
        self.never = 0
        self.busy = 0
        self.next_id = {}  # channel -> next ackId
        self.acks = {}  # (channel, id) -> time indexed (None: never)
        self.events_f = open(os.path.join(directory, "events.jsonl"), "a")
        self.log_f = open(os.path.join(directory, "requests.jsonl"), "a")


def objects(text):
    """The concatenated JSON objects of text; raises ValueError with the index of the first
    one that is not JSON, and what came before it."""
    dec = json.JSONDecoder()
    out, at = [], 0
    while True:
        while at < len(text) and text[at] in " \t\r\n":
            at += 1
        if at == len(text):
            return out
        try:
            obj, at = dec.raw_decode(text, at)
        except ValueError:
            raise ValueError(len(out), out)
        out.append(obj)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, obj, rec=None):
        body = json.dumps(obj, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        if rec is not None:
            rec["status"], rec["code"] = status, obj.get("code")
            st = self.server.state
            with st.lock:
                st.log_f.write(json.dumps(rec) + "\n")
                st.log_f.flush()

    def do_GET(self):
        q = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
        if not self.path.startswith("/_ctl"):
            self.reply(404, {"text": "The requested URL was not found on this server.",
                             "code": 404})
            return
        st = self.server.state
        with st.lock:
            if "token" in q:
                st.token = q["token"][0]
            if "ack_delay" in q:
                st.ack_delay = float(q["ack_delay"][0])
            if "never" in q:
                st.never = int(q["never"][0])
            if "busy" in q:
                st.busy = int(q["busy"][0])
        self.reply(200, {"text": "ok", "code": 0})

    def auth_error(self):
        """The answer to a wrong Authorization, or None."""
        auth = self.headers.get("Authorization")
        if auth is None:
            return 401, {"text": "Token is required", "code": 2}
        if not auth.startswith("Splunk "):
            return 401, {"text": "Invalid authorization", "code": 3}
        if auth[len("Splunk "):] != self.server.state.token:
            return 403, {"text": "Invalid token", "code": 4}
        return None

    def do_POST(self):
        url = urllib.parse.urlparse(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        channel = self.headers.get("X-Splunk-Request-Channel")
        rec = {"path": url.path, "encoding": self.headers.get("Content-Encoding", ""),
               "content_type": self.headers.get("Content-Type", ""), "channel": channel}
        st = self.server.state
        if url.path not in ("/services/collector/event", "/services/collector/ack"):
            self.reply(404, {"text": "The requested URL was not found on this server.",
                             "code": 404}, rec)
            return
        bad = self.auth_error()
        if bad:
            self.reply(*bad, rec)
            return
        if st.ack and not channel:
            self.reply(400, {"text": "Data channel is missing", "code": 10}, rec)
            return
        if rec["encoding"] == "gzip":
            body = gzip.decompress(body)
        if url.path == "/services/collector/ack":
            self.answer_acks(channel, body, rec)
        else:
            self.take_events(channel, body.decode("utf-8"), rec)

    def answer_acks(self, channel, body, rec):
        st = self.server.state
        if not st.ack:
            self.reply(400, {"text": "ACK is disabled", "code": 14}, rec)
            return
        ids = json.loads(body)["acks"]
        now = time.monotonic()
        out = {}
        with st.lock:
            for i in ids:
                at = st.acks.get((channel, i))
                out[str(i)] = at is not None and at <= now
                if out[str(i)]:
                    del st.acks[(channel, i)]
        rec["asked"], rec["acked"] = ids, [i for i in ids if out[str(i)]]
        self.reply(200, {"acks": out}, rec)

    def take_events(self, channel, text, rec):
        st = self.server.state
        with st.lock:
            busy = st.busy > 0
            st.busy -= 1 if busy else 0
        if busy:
            self.reply(503, {"text": "Server is busy", "code": 9}, rec)
            return
        refusal = None
        try:
            objs = objects(text)
        except ValueError as e:
            n, objs = e.args
            refusal = {"text": "Invalid data format", "code": 6, "invalid-event-number": n}
        for n, o in enumerate(objs):
            if "event" not in o:
                refusal, objs = {"text": "Event field is required", "code": 12,
                                 "invalid-event-number": n}, objs[:n]
            elif o["event"] in ("", None, {}):
                refusal, objs = {"text": "Event field cannot be blank", "code": 13,
                                 "invalid-event-number": n}, objs[:n]
            elif "BAD_DATA" in json.dumps(o["event"]):
                refusal, objs = {"text": "Invalid data format", "code": 6,
                                 "invalid-event-number": n}, objs[:n]
            if refusal:
                break
        rec["events"] = len(objs)
        with st.lock:
            ack_id = None
            if st.ack and refusal is None:
                ack_id = st.next_id.get(channel, 0)
                st.next_id[channel] = ack_id + 1
                never = st.never > 0
                st.never -= 1 if never else 0
                st.acks[(channel, ack_id)] = None if never else time.monotonic() + st.ack_delay
            for o in objs:
                st.events_f.write(json.dumps({"obj": o, "channel": channel,
                                              "ack_id": ack_id}) + "\n")
            st.events_f.flush()
        if refusal:
            self.reply(400, refusal, rec)
        elif ack_id is not None:
            rec["ack_id"] = ack_id
            self.reply(200, {"text": "Success", "code": 0, "ackId": ack_id}, rec)
        else:
            self.reply(200, {"text": "Success", "code": 0}, rec)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--token", required=True)
    ap.add_argument("--ack", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    srv = Server(("127.0.0.1", args.port), Handler)
    srv.state = State(args.dir, args.token, args.ack)
    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
