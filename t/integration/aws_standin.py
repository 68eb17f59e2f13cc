"""A stand-in for the AWS side of signed requests, for the aws_* integration tests: STS
(AssumeRoleWithWebIdentity), the instance metadata service (IMDSv2) and a receiver of signed
http, Elasticsearch _bulk and OTLP/HTTP JSON requests. Python standard library and botocore
(through awstest.py), plus the `zstd` command for zstd bodies.

    python3 aws_standin.py --dir DIR [--port N] [--region R] [--service S]
                           [--static AKID:SECRET[:TOKEN]]... [--lifetime SECONDS]
                           [--web-token-file PATH] [--expired AKID]...
                           [--bad-request TEXT]

Listens on 127.0.0.1 (port 0 picks a free one) and prints the port on its first stdout line.

- POST /sts/ (form: Action=AssumeRoleWithWebIdentity, Version, RoleArn, RoleSessionName,
  WebIdentityToken): the token must equal the content of --web-token-file as it is now
  (read at each request, trimmed); issues AKID-n / secret-n / token-n (n counting from 1)
  valid --lifetime seconds (default 20), as STS's XML; a wrong token: 400
  InvalidIdentityToken. DIR/sts.jsonl: one record per request (the token received, the
  role, the session name, the status).
- PUT /latest/api/token with X-aws-ec2-metadata-token-ttl-seconds: a session token;
  GET /latest/meta-data/iam/security-credentials/ and .../logferry-role with a valid
  X-aws-ec2-metadata-token (else 401): the role's name, then its credentials as JSON
  (IMDS-n / imds-secret-n / imds-token-n, --lifetime seconds).
- POST /ingest (NDJSON), /_bulk (Elasticsearch: answered with an item 201 per document),
  /v1/logs (OTLP JSON: answered {}): each verified with awstest.verify() against the
  --static credentials and the issued ones not expired. Refused: 403 with a JSON body
  ({"__type": code, "message": ...}; an expired issued key: ExpiredTokenException, "The
  security token included in the request is expired"; so also a --expired static key).
  A verified request whose decoded body holds the --bad-request text: 400 with a reason
  quoting that text, as a service quotes a value it cannot parse.
  Accepted lines (NDJSON lines, the
  documents of _bulk, the record bodies of OTLP) go to DIR/accepted.ndjson; each request
  to DIR/requests.jsonl (path, status, code, access key id, whether a session token came
  and was signed, the signed headers).

Control (same port, never recorded): GET /_ctl?sts=503 (STS answers 503 until sts=200),
GET /_ctl?imds=503 (likewise), GET /_ctl?revoke=1 (every metadata session token is
forgotten: the next GET is 401), GET /_ctl?lifetime=N, GET /_ctl?unexpire=AKID (a --expired key is taken again). GET /_stats: the counts as JSON
(issued by STS, by IMDS, metadata tokens, 401s, requests accepted and refused by code).
Stop it with SIGTERM (the tests do, by PID)."""
import argparse
import datetime
import gzip
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import awstest  # noqa: E402

ROLE = "logferry-role"


class State:
    def __init__(self, args):
        self.lock = threading.Lock()
        self.args = args
        self.lifetime = args.lifetime
        self.sts_status = 200
        self.imds_status = 200
        self.expired_static = set(args.expired)
        self.static = {}
        for s in args.static:
            parts = s.split(":")
            self.static[parts[0]] = (parts[1], parts[2] if len(parts) > 2 else None)
        self.issued = {}  # akid -> (secret, token, expires epoch seconds)
        self.n_sts = 0
        self.n_imds = 0
        self.imds_tokens = set()
        self.n_imds_tokens = 0
        self.n_401 = 0
        self.counts = {}
        self.accepted = open(os.path.join(args.dir, "accepted.ndjson"), "ab")
        self.log = open(os.path.join(args.dir, "requests.jsonl"), "a")
        self.sts_log = open(os.path.join(args.dir, "sts.jsonl"), "a")

    def issue(self, prefix):
        with self.lock:
            if prefix == "AKID":
                self.n_sts += 1
                n = self.n_sts
                akid, secret, token = f"AKID-{n}", f"secret-{n}", f"token-{n}"
            else:
                self.n_imds += 1
                n = self.n_imds
                akid, secret, token = f"IMDS-{n}", f"imds-secret-{n}", f"imds-token-{n}"
            expires = time.time() + self.lifetime
            self.issued[akid] = (secret, token, expires)
        exp = datetime.datetime.fromtimestamp(expires, datetime.timezone.utc)
        return akid, secret, token, exp.strftime("%Y-%m-%dT%H:%M:%SZ")

    def secrets(self, akid):
        with self.lock:
            if akid in self.static:
                return self.static[akid]
            got = self.issued.get(akid)
        if got is None:
            return None
        secret, token, expires = got
        return (secret, token)

    def expired(self, akid):
        with self.lock:
            if akid in self.expired_static:
                return True
            got = self.issued.get(akid)
        return got is not None and time.time() >= got[2]

    def count(self, key):
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + 1


def decode(body, enc):
    if enc == "gzip":
        return gzip.decompress(body)
    if enc == "zstd":
        return subprocess.run(["zstd", "-dcq"], input=body, capture_output=True,
                              check=True).stdout
    return body


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, status, body, ctype="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    # ---- control ----
    def do_GET(self):
        st = self.server.state
        u = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(u.query))
        if u.path == "/_ctl":
            with st.lock:
                if "sts" in q:
                    st.sts_status = int(q["sts"])
                if "imds" in q:
                    st.imds_status = int(q["imds"])
                if "lifetime" in q:
                    st.lifetime = float(q["lifetime"])
                if "unexpire" in q:
                    st.expired_static.discard(q["unexpire"])
                if q.get("revoke"):
                    st.imds_tokens.clear()
            return self.answer(200, b"{}")
        if u.path == "/_stats":
            with st.lock:
                s = {"sts_issued": st.n_sts, "imds_issued": st.n_imds,
                     "imds_tokens": st.n_imds_tokens, "imds_401": st.n_401,
                     "counts": dict(st.counts)}
            return self.answer(200, json.dumps(s).encode())
        if u.path.startswith("/latest/meta-data/iam/security-credentials/"):
            return self.imds_get(u.path)
        return self.answer(404, b"{}")

    # ---- IMDSv2 ----
    def do_PUT(self):
        st = self.server.state
        self.body()
        if self.path != "/latest/api/token":
            return self.answer(404, b"")
        if not self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
            return self.answer(400, b"", "text/plain")
        with st.lock:
            if st.imds_status != 200:
                status = st.imds_status
            else:
                status = 200
                st.n_imds_tokens += 1
                tok = f"imds-session-{st.n_imds_tokens}"
                st.imds_tokens.add(tok)
        if status != 200:
            return self.answer(status, b"", "text/plain")
        return self.answer(200, tok.encode(), "text/plain")

    def imds_get(self, path):
        st = self.server.state
        tok = self.headers.get("X-aws-ec2-metadata-token")
        with st.lock:
            ok = tok in st.imds_tokens
            status = st.imds_status
            if not ok:
                st.n_401 += 1
        if not ok:
            return self.answer(401, b"", "text/plain")
        if status != 200:
            return self.answer(status, b"", "text/plain")
        rest = path[len("/latest/meta-data/iam/security-credentials/"):]
        if rest == "":
            return self.answer(200, ROLE.encode(), "text/plain")
        if rest != ROLE:
            return self.answer(404, b"", "text/plain")
        akid, secret, token, exp = st.issue("IMDS")
        doc = {"Code": "Success", "LastUpdated": exp, "Type": "AWS-HMAC",
               "AccessKeyId": akid, "SecretAccessKey": secret, "Token": token,
               "Expiration": exp}
        return self.answer(200, json.dumps(doc, indent=2).encode(), "text/plain")

    # ---- STS and the signed receivers ----
    def do_POST(self):
        path = urllib.parse.urlsplit(self.path).path
        if path.startswith("/sts"):
            return self.sts()
        return self.signed(path)

    def sts(self):
        st = self.server.state
        form = dict(urllib.parse.parse_qsl(self.body().decode()))
        want = ""
        if st.args.web_token_file:
            with open(st.args.web_token_file) as f:
                want = f.read().strip()
        status = st.sts_status
        if status == 200 and (form.get("Action") != "AssumeRoleWithWebIdentity" or
                              form.get("Version") != "2011-06-15" or not form.get("RoleArn")):
            status = 400
        elif status == 200 and form.get("WebIdentityToken") != want:
            status = 401
        rec = {"token": form.get("WebIdentityToken"), "role": form.get("RoleArn"),
               "session": form.get("RoleSessionName"), "status": status}
        with st.lock:
            st.sts_log.write(json.dumps(rec) + "\n")
            st.sts_log.flush()
        if status == 401:
            body = ('<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>'
                    '<Message>The web identity token is not valid</Message></Error>'
                    '</ErrorResponse>')
            return self.answer(400, body.encode(), "text/xml")
        if status != 200:
            body = ('<ErrorResponse><Error><Type>Sender</Type><Code>ServiceUnavailable</Code>'
                    '<Message>try later</Message></Error></ErrorResponse>')
            return self.answer(status, body.encode(), "text/xml")
        akid, secret, token, exp = st.issue("AKID")
        body = (
            '<AssumeRoleWithWebIdentityResponse '
            'xmlns="https://sts.amazonaws.com/doc/2011-06-15/">\n'
            '  <AssumeRoleWithWebIdentityResult>\n'
            '    <Credentials>\n'
            f'      <SessionToken>{token}</SessionToken>\n'
            f'      <SecretAccessKey>{secret}</SecretAccessKey>\n'
            f'      <Expiration>{exp}</Expiration>\n'
            f'      <AccessKeyId>{akid}</AccessKeyId>\n'
            '    </Credentials>\n'
            f'    <AssumedRoleUser><Arn>{form.get("RoleArn")}</Arn></AssumedRoleUser>\n'
            '  </AssumeRoleWithWebIdentityResult>\n'
            '</AssumeRoleWithWebIdentityResponse>\n')
        return self.answer(200, body.encode(), "text/xml")

    def signed(self, path):
        st = self.server.state
        raw = self.body()
        headers = list(self.headers.items())
        authz = self.headers.get("Authorization", "")
        m = awstest.AUTH_RE.match(authz)
        akid = m.group(1) if m else None
        signed_names = m.group(5).split(";") if m else []
        rec = {"path": path, "akid": akid, "signed": signed_names,
               "token_sent": self.headers.get("x-amz-security-token") is not None}
        try:
            if akid is not None and st.expired(akid):
                raise awstest.Refused(403, "ExpiredTokenException",
                                      "The security token included in the request is expired")
            awstest.verify(self.command, self.path, headers, raw, st.secrets,
                           st.args.region, st.args.service)
        except awstest.Refused as e:
            rec.update(status=e.status, code=e.code)
            st.count(e.code)
            with st.lock:
                st.log.write(json.dumps(rec) + "\n")
                st.log.flush()
            body = json.dumps({"__type": e.code, "message": e.message}).encode()
            return self.answer(e.status, body)
        data = decode(raw, self.headers.get("Content-Encoding", ""))
        word = st.args.bad_request.encode()
        if word and word in data:  # as a service quoting the offending value back
            rec.update(status=400, code="BadRequest")
            st.count("BadRequest")
            with st.lock:
                st.log.write(json.dumps(rec) + "\n")
                st.log.flush()
            why = f"failed to parse field [message]: value [{st.args.bad_request}] is not valid"
            return self.answer(400, json.dumps({"error": {"type": "mapper_parsing_exception",
                                                          "reason": why}}).encode())
        lines, answer = [], b"{}"
        if path.endswith("/_bulk"):
            docs = [l for l in data.split(b"\n") if l.strip()]
            lines = docs[1::2]
            items = [{"create": {"status": 201}} for _ in lines]
            answer = json.dumps({"errors": False, "items": items}).encode()
        elif path.endswith("/v1/logs"):
            doc = json.loads(data)
            for rl in doc["resourceLogs"]:
                for sl in rl["scopeLogs"]:
                    for r in sl["logRecords"]:
                        lines.append(r["body"]["stringValue"].encode())
        else:
            lines = [l for l in data.split(b"\n") if l.strip()]
        rec.update(status=200, code="", lines=len(lines))
        st.count("accepted")
        with st.lock:
            for l in lines:
                st.accepted.write(l + b"\n")
            st.accepted.flush()
            st.log.write(json.dumps(rec) + "\n")
            st.log.flush()
        return self.answer(200, answer)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--region", default="eu-west-1")
    p.add_argument("--service", default="es")
    p.add_argument("--static", action="append", default=[])
    p.add_argument("--lifetime", type=float, default=20.0)
    p.add_argument("--web-token-file")
    p.add_argument("--expired", action="append", default=[])
    p.add_argument("--bad-request", default="")
    args = p.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    srv.daemon_threads = True
    srv.state = State(args)
    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()


class Standin:
    """One aws_standin.py process for a test; its records live in DIR."""

    def __init__(self, directory, *args):
        self.dir = directory
        self.args = list(args)
        self.port = 0
        self.proc = None
        self.start()

    def start(self):
        os.makedirs(self.dir, exist_ok=True)
        argv = [sys.executable, os.path.abspath(__file__), "--dir", self.dir,
                "--port", str(self.port)] + self.args
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the stand-in did not start")
        self.port = int(line)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # by PID: Popen signals its own child
            self.proc.wait(timeout=10)
        self.proc = None

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def get(self, path):
        import urllib.request
        with urllib.request.urlopen(self.url(path), timeout=5) as r:
            return r.read()

    def control(self, **kw):
        self.get("/_ctl?" + "&".join(f"{k}={v}" for k, v in kw.items()))

    def stats(self):
        return json.loads(self.get("/_stats"))

    def _jsonl(self, name):
        try:
            with open(os.path.join(self.dir, name)) as f:
                return [json.loads(l) for l in f if l.endswith("\n")]
        except FileNotFoundError:
            return []

    def requests(self):
        return self._jsonl("requests.jsonl")

    def sts_requests(self):
        return self._jsonl("sts.jsonl")

    def accepted(self):
        try:
            with open(os.path.join(self.dir, "accepted.ndjson"), "rb") as f:
                return [l for l in f.read().split(b"\n")[:-1] if l]
        except FileNotFoundError:
            return []


def drive(log_path, tag, seconds, every=0.05, at=None):
    """Appends a line to log_path every `every` seconds for `seconds`; at: {second: fn}
    called once when that many seconds have passed. Returns the lines written."""
    lines, t0, done = [], time.monotonic(), set()
    with open(log_path, "a") as f:
        while time.monotonic() - t0 < seconds:
            line = f"{tag} {len(lines)} {time.time():.3f}"
            f.write(line + "\n")
            f.flush()
            lines.append(line)
            for when, fn in (at or {}).items():
                if when not in done and time.monotonic() - t0 >= when:
                    done.add(when)
                    fn()
            time.sleep(every)
    return lines


def check_delivery(c, tag, sd, lines, timeout=60):
    """Every line arrives once (the http output's events), and no request was refused
    because its credentials had expired or were unknown."""
    def got():
        return [json.loads(l)["message"] for l in sd.accepted()]
    import tailtest as tt
    tt.wait_for(lambda: len(got()) >= len(lines), timeout, 0.2)
    g = got()
    c.check(sorted(g) == sorted(lines), f"{tag}: every line arrives once",
            f"{len(g)} of {len(lines)}, {len(set(g))} distinct")
    refused = [r for r in sd.requests() if r["status"] != 200]
    c.check(not refused, f"{tag}: no request refused (expired, unknown or badly signed)",
            str(refused[:2]))
    return {r["akid"] for r in sd.requests() if r["status"] == 200}


def http_config(wd, sd, cred_lines=()):
    """A config tailing wd's *.log into an http output signed for eu-west-1/es at sd, with
    /metrics on a port of the OS's choosing."""
    import httptest as ht
    sig = "aws_sigv4: {region: eu-west-1, service: es" + "".join(", " + l for l in cred_lines)
    return ht.write_config(wd, [f"url: {sd.url('/ingest')}", sig + "}",
                                "backoff: {initial: 200ms, max: 1s}"],
                           batch="flush_interval: 200ms, max_events: 500", metrics=True)


def leaks(c, agent, secrets):
    """Checks that none of secrets is in the agent's stderr or /metrics (scraped now)."""
    import tailtest as tt
    port = tt.metrics_port(agent, 5)
    status, text = tt.scrape(port) if port else (None, "")
    found = [s for s in secrets if s in agent.stderr() or s in text]
    c.check(status == 200 and "logferry_" in text and not found,
            "no secret key, session token or web identity token in stderr or /metrics",
            f"metrics port {port}, found {found}")


def clean_env(**kw):
    """The environment without AWS_* but kw."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(kw)
    return env
