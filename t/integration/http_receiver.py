"""A test HTTP collector for the http output's integration tests. Python standard library,
plus the `zstd` command for zstd bodies.

    python3 http_receiver.py --dir DIR [--port N] [--tls-cert PEM --tls-key PEM] [--verbose]

Listens on 127.0.0.1 (port 0 picks a free one) and prints the port on its first stdout line.
Every request body is decoded by its Content-Encoding (zstd, gzip or none). Accepted bodies
(answered 200) are appended, decoded, to DIR/accepted.ndjson, in the order they were
accepted; DIR/requests.jsonl gets one JSON record per request (method, path, status
answered, headers of interest, client port, lines, encoded and decoded bytes, and the
encoded body's SHA-256). DIR is created if missing. With --verbose, each request is also
told on stderr, one line: method, path, status, encoding, events, bytes on the wire.

Control (same port, never recorded as requests):
    GET /_ctl?status=503&count=3   answer the next 3 requests 503 (count 0: until told
                                    otherwise; status 200: back to normal)
    GET /_ctl?hang=30&count=1      read the next request, then say nothing for 30 s and
                                    close the connection
    GET /_ctl?seq=503,429,200      answer the next requests with these statuses, in turn
    GET /_ctl?delay=0.5            from now on, wait 0.5 s before each answer (a slow
                                    collector; delay=0: back to answering at once)
    GET /_ctl?refuse=TEXT          answer 503 to every request whose decoded body holds
                                    TEXT, every time it comes, and the others as usual (one
                                    batch that never gets through)
Each control request replaces every mode set before it (no parameter: back to normal).
Stop it with SIGTERM (the tests do, by PID)."""
import argparse
import gzip
import hashlib
import http.server
import json
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse


class State:
    def __init__(self, directory):
        self.lock = threading.Lock()
        self.status = 200
        self.hang = 0.0
        self.delay = 0.0
        self.verbose = False
        self.count = 0  # requests the mode applies to; 0: all of them
        self.seq = []  # statuses for the next requests, one each, before the mode
        self.refuse = b""  # bodies holding these bytes are answered 503
        self.accepted = open(os.path.join(directory, "accepted.ndjson"), "ab")
        self.log = open(os.path.join(directory, "requests.jsonl"), "a")

    def take_mode(self):
        """The (status, hang) for the next request, counting it down."""
        with self.lock:
            if self.seq:
                return (self.seq.pop(0), 0.0)
            mode = (self.status, self.hang)
            if (self.status != 200 or self.hang) and self.count > 0:
                self.count -= 1
                if self.count == 0:
                    self.status, self.hang = 200, 0.0
            return mode


def decode(encoding, body):
    if encoding == "zstd":
        r = subprocess.run(["zstd", "-dc", "-q"], input=body, capture_output=True)
        if r.returncode != 0:
            raise ValueError("zstd: " + r.stderr.decode("utf-8", "replace").strip())
        return r.stdout
    if encoding == "gzip":
        return gzip.decompress(body)
    if encoding in ("", "identity"):
        return body
    raise ValueError("unknown Content-Encoding " + encoding)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive

    def log_message(self, fmt, *args):
        pass

    def control(self):
        q = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
        st = self.server.state
        with st.lock:
            st.status = int(q.get("status", ["200"])[0])
            st.hang = float(q.get("hang", ["0"])[0])
            st.count = int(q.get("count", ["0"])[0])
            st.seq = [int(x) for x in q.get("seq", [""])[0].split(",") if x]
            st.delay = float(q.get("delay", ["0"])[0])
            st.refuse = q.get("refuse", [""])[0].encode("utf-8")
        self.reply(200, b"ok\n")

    def reply(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.startswith("/_ctl"):
            self.control()
        else:
            self.reply(404, b"not here\n")

    def handle_body(self):
        st = self.server.state
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        status, hang = st.take_mode()
        if st.delay > 0:
            time.sleep(st.delay)
        rec = {"method": self.command, "path": self.path, "bytes": len(body),
               "sha256": hashlib.sha256(body).hexdigest(),
               "encoding": self.headers.get("Content-Encoding", ""),
               "content_type": self.headers.get("Content-Type", ""),
               "authorization": self.headers.get("Authorization", ""),
               "x_test": self.headers.get("X-Test", ""),
               "x_scope_orgid": self.headers.get("X-Scope-OrgID", ""),
               "client_port": self.client_address[1], "time": time.time()}
        if hang:
            rec["status"] = "hang"
            self.record(rec)
            time.sleep(hang)
            self.close_connection = True
            return
        try:
            data = decode(rec["encoding"], body)
        except (ValueError, OSError, EOFError) as e:
            status, data = 400, b""
            rec["error"] = str(e)
        if status == 200 and st.refuse and st.refuse in data:
            status = 503
            rec["refused"] = True
        rec["status"] = status
        rec["lines"] = data.count(b"\n")
        rec["decoded_bytes"] = len(data)
        with st.lock:
            if status == 200:
                if data and not data.endswith(b"\n"):
                    data += b"\n"  # one JSON document per line (Loki's push bodies)
                st.accepted.write(data)
                st.accepted.flush()
        self.record(rec)
        answer = b'{"ok":true}\n' if status == 200 else b"mapping error: field [x] is bad\n"
        self.reply(status, answer)

    def record(self, rec):
        st = self.server.state
        if st.verbose:
            print(f"{rec['method']} {rec['path']} {rec['status']} "
                  f"{rec['encoding'] or 'identity'}: {rec.get('lines', 0)} events, "
                  f"{rec['bytes']} bytes", file=sys.stderr, flush=True)
        with st.lock:
            st.log.write(json.dumps(rec) + "\n")
            st.log.flush()

    do_POST = handle_body
    do_PUT = handle_body


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    srv = Server(("127.0.0.1", args.port), Handler)
    srv.state = State(args.dir)
    srv.state.verbose = args.verbose
    if args.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
