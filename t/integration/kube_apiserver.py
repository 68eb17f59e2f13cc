#!/usr/bin/env python3
"""A stand-in Kubernetes API server for the tests of the kubernetes section: HTTPS on
127.0.0.1 with a certificate of a test CA, a bearer token checked on every request, and
/api/v1/pods and /api/v1/namespaces served as the real one writes them: a v1 PodList (or
NamespaceList) with a resourceVersion and paging (limit, continue), or with watch=1 a chunked
stream of one JSON event a line (ADDED, MODIFIED, DELETED, BOOKMARK) from a resourceVersion
on, and 200 then an ERROR event (a Status 410 Expired) when that version was compacted away.

The tests import it and run it in threads of their own process (ApiServer); the state (pods,
namespaces, the resourceVersion counter, the event log) is theirs to change while the agent
watches: add_pod(), modify_pod(), delete_pod(), compact(), several at once in changes().
Faults on demand: drop every open stream, answer the next N requests with a status, hang
(take requests, answer none), pause the streams, slow LISTs, pages smaller than asked, stop
and start again on the same port; requests are counted by resource and verb and logged.
`python3 kube_apiserver.py --port P` runs one by hand (it prints its URL, token and CA).
Python standard library only.

Threads: one accepting, one per connection (the TLS handshake is made there, not in the
accepting thread); every piece of state is guarded by one condition variable, which a change
notifies so that open watch streams send it at once."""
import argparse
import base64
import copy
import http.server
import json
import os
import socket
import ssl
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))

REASONS = {401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 410: "Expired",
           500: "InternalError", 503: "ServiceUnavailable"}


def status(code, message, reason=None):
    """A v1 Status object, as the API server answers a failed request."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason or REASONS.get(code, "Unknown"), "code": code}


def make_pod(name, ns, *, node="n1", labels=None, annotations=None, owner=None,
             containers=(("app", "nginx:1.25"),), init_containers=(), ip="10.1.2.3",
             uid=None, phase="Running"):
    """A v1 Pod as the API server returns it (the fields enrichment reads, and the usual
    others around them). owner: (kind, name) of its controller, or None for a bare pod."""
    uid = uid or str(uuid.uuid4())
    meta = {"name": name, "namespace": ns, "uid": uid, "resourceVersion": "0",
            "creationTimestamp": "2026-12-01T10:00:00Z", "labels": dict(labels or {}),
            "annotations": dict(annotations or {}),
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                               "apiVersion": "v1", "time": "2026-12-01T10:00:00Z",
                               "fieldsType": "FieldsV1",
                               "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}}}]}
    if owner:
        kind, oname = owner
        api = "batch/v1" if kind == "Job" else "apps/v1"
        meta["generateName"] = oname + "-"
        meta["ownerReferences"] = [{"apiVersion": api, "kind": kind, "name": oname,
                                    "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, kind + oname)),
                                    "controller": True, "blockOwnerDeletion": True}]

    def spec_of(c):
        return {"name": c[0], "image": c[1], "imagePullPolicy": "IfNotPresent",
                "resources": {}, "terminationMessagePath": "/dev/termination-log"}
    spec = {"nodeName": node, "containers": [spec_of(c) for c in containers],
            "restartPolicy": "Always", "serviceAccountName": "default",
            "schedulerName": "default-scheduler", "dnsPolicy": "ClusterFirst"}
    if init_containers:
        spec["initContainers"] = [spec_of(c) for c in init_containers]
    st = {"phase": phase, "hostIP": "192.168.0.10", "podIP": ip,
          "podIPs": [{"ip": ip}] if ip else [],
          "containerStatuses": [{"name": c[0], "image": c[1], "ready": True,
                                 "restartCount": 0, "imageID": "docker.io/library/" + c[1],
                                 "containerID": "containerd://" + "%064x" % i,
                                 "state": {"running": {"startedAt": "2026-12-01T10:00:01Z"}}}
                                for i, c in enumerate(containers)]}
    if not ip:
        del st["podIP"]
    return {"kind": "Pod", "apiVersion": "v1", "metadata": meta, "spec": spec, "status": st}


def make_namespace(name, labels=None):
    labels = dict(labels or {})
    labels.setdefault("kubernetes.io/metadata.name", name)
    return {"kind": "Namespace", "apiVersion": "v1",
            "metadata": {"name": name, "uid": str(uuid.uuid4()), "resourceVersion": "0",
                         "creationTimestamp": "2026-12-01T09:00:00Z", "labels": labels},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}


RESOURCES = {"pods": ("Pod", "PodList"), "namespaces": ("Namespace", "NamespaceList")}


class State:
    """What the server holds, guarded by cond. Objects are kept by key (pods: uid;
    namespaces: name); events is the watch log: (rv, resource, type, object), of which those
    at or before compacted are gone."""

    def __init__(self, token):
        self.cond = threading.Condition()
        self.token = token
        self.rv = 1000
        self.compacted = 0
        self.objects = {"pods": {}, "namespaces": {}}
        self.events = []
        self.snapshots = {}       # continue token -> (rv, items still to send)
        self.failures = []        # [code, count] answered before anything else
        self.hang_until = 0.0
        self.pause_until = 0.0
        self.page_max = 0
        self.list_delay = {}      # resource -> seconds a LIST of it takes
        self.drop_gen = 0
        self.counts = {}          # (resource, verb) -> requests
        self.log = []             # (verb, resource, query, status, authorization)
        self.bookmark_s = 1.0

    def change(self, resource, etype, obj):
        """Applies one change at the next resourceVersion; cond held."""
        self.rv += 1
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self.rv)
        key = obj["metadata"]["uid"] if resource == "pods" else obj["metadata"]["name"]
        if etype == "DELETED":
            self.objects[resource].pop(key, None)
        else:
            self.objects[resource][key] = obj
        self.events.append((self.rv, resource, etype, obj))
        self.cond.notify_all()
        return obj


def refusal(code, resource, verb):
    """The Status the API server answers a request it refuses with code."""
    msg = {401: "Unauthorized", 404: "the server could not find the requested resource",
           403: f'{resource} is forbidden: User "system:serviceaccount:logging:logferry" '
                f'cannot {verb} resource "{resource}" in API group "" at the cluster scope'}
    return status(code, msg.get(code, "an error on the server has prevented the request "
                                      "from succeeding"))


def matches(obj, node):
    return node is None or obj.get("spec", {}).get("nodeName") == node


def list_item(obj):
    """obj as a list's item: without kind and apiVersion, which only the list carries."""
    item = copy.deepcopy(obj)
    item.pop("kind", None)
    item.pop("apiVersion", None)
    return item


def node_of(query):
    """The node of fieldSelector=spec.nodeName=N, None when there is no selector."""
    sel = query.get("fieldSelector", [""])[0]
    if not sel:
        return None
    key, _, val = sel.partition("=")
    if key != "spec.nodeName":
        raise ValueError(f"field label not supported: {key}")
    return val


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kube-apiserver-standin"

    def log_message(self, fmt, *args):  # quiet: the tests print what matters
        pass

    def send_json(self, code, obj):
        body = json.dumps(obj, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802 (the name http.server calls)
        api = self.server.api
        st = api.state
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        parts = url.path.strip("/").split("/")
        resource = parts[2] if len(parts) == 3 and parts[:2] == ["api", "v1"] else None
        watch = query.get("watch", ["0"])[0] in ("1", "true")
        verb = "watch" if watch else "list"
        auth = self.headers.get("Authorization", "")
        with st.cond:
            st.counts[(resource, verb)] = st.counts.get((resource, verb), 0) + 1
            hang = st.hang_until - time.monotonic()
            fail = None
            if hang <= 0 and st.failures:
                fail = st.failures[0][0]
                st.failures[0][1] -= 1
                if st.failures[0][1] <= 0:
                    st.failures.pop(0)
            token_ok = auth == "Bearer " + st.token
        if hang > 0:
            api.wait_stopped(hang)
            self.close_connection = True
            return
        code = fail or (401 if not token_ok else 404 if resource not in RESOURCES else 200)
        self.record(verb, resource, url.query, code, auth)
        if code != 200:
            self.send_json(code, refusal(code, resource, verb))
            return
        try:
            node = node_of(query) if resource == "pods" else None
        except ValueError as e:
            self.send_json(400, status(400, str(e), "BadRequest"))
            return
        if watch:
            self.do_watch(resource, node, query)
        else:
            api.wait_stopped(st.list_delay.get(resource, 0))
            self.do_list(resource, node, query)

    def record(self, verb, resource, query, code, auth):
        st = self.server.api.state
        with st.cond:
            st.log.append((verb, resource, query, code, auth))

    def do_list(self, resource, node, query):
        st = self.server.api.state
        list_kind = RESOURCES[resource][1]
        limit = int(query.get("limit", ["0"])[0] or 0)
        if st.page_max:
            limit = min(limit or st.page_max, st.page_max)
        cont = query.get("continue", [""])[0]
        with st.cond:
            if cont:
                snap = st.snapshots.pop(cont, None)
                if snap is None or snap[0] <= st.compacted:
                    self.send_json(410, status(410, "The provided continue parameter is too "
                                                    "old to display a consistent list result. "
                                                    "You can start a new list without the "
                                                    "continue parameter.", "Expired"))
                    return
                rv, items = snap
            else:
                rv = st.rv
                objs = [o for o in st.objects[resource].values() if matches(o, node)]
                objs.sort(key=lambda o: (o["metadata"].get("namespace", ""),
                                         o["metadata"]["name"]))
                items = [list_item(o) for o in objs]
            meta = {"resourceVersion": str(rv)}
            if limit > 0 and len(items) > limit:
                token = base64.urlsafe_b64encode(json.dumps(
                    {"rv": rv, "start": uuid.uuid4().hex}).encode()).decode()
                st.snapshots[token] = (rv, items[limit:])
                items = items[:limit]
                meta["continue"] = token
                meta["remainingItemCount"] = len(st.snapshots[token][1])
        self.send_json(200, {"kind": list_kind, "apiVersion": "v1", "metadata": meta,
                             "items": items})

    def chunk(self, obj):
        data = json.dumps(obj, separators=(",", ":")).encode() + b"\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def do_watch(self, resource, node, query):
        api = self.server.api
        st = api.state
        rv_arg = query.get("resourceVersion", [""])[0]
        if not rv_arg.isdigit() and rv_arg != "":
            self.send_json(400, status(400, f"invalid resourceVersion: {rv_arg}", "BadRequest"))
            return
        bookmarks = query.get("allowWatchBookmarks", [""])[0] in ("1", "true")
        timeout_s = int(query.get("timeoutSeconds", ["0"])[0] or 0) or 1800
        end = time.monotonic() + timeout_s
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        with st.cond:
            gen = (st.drop_gen, api.epoch)
            if rv_arg in ("", "0"):  # the current state as ADDED, then what follows
                pending = [{"type": "ADDED", "object": copy.deepcopy(o)}
                           for o in st.objects[resource].values() if matches(o, node)]
                sent = st.rv
            else:  # what follows rv_arg; 410 if some of it was compacted away
                pending = []
                sent = int(rv_arg)
        api.stream_opened(self.connection)
        try:
            self.stream(resource, node, (pending, sent, gen), bookmarks, end)
        except OSError:
            pass
        finally:
            api.stream_closed(self.connection)

    def stream(self, resource, node, start, bookmarks, end):
        """Sends the events of a watch until its end, a drop or an expiry. start: (events to
        send first, the resourceVersion they reach, the drop generation)."""
        api = self.server.api
        st = api.state
        pending, sent, gen = start
        expired = False
        next_bookmark = time.monotonic() + st.bookmark_s
        while True:
            for ev in pending:
                self.chunk(ev)
            if expired:  # what the API server does when a watcher falls behind compaction
                self.chunk({"type": "ERROR", "object": status(
                    410, f"too old resource version: {sent} ({st.compacted})", "Expired")})
                self.wfile.write(b"0\r\n\r\n")
                return
            now = time.monotonic()
            if bookmarks and now >= next_bookmark and not api.streams_paused():
                self.chunk({"type": "BOOKMARK", "object": {
                    "kind": RESOURCES[resource][0], "apiVersion": "v1",
                    "metadata": {"resourceVersion": str(sent)}}})
                next_bookmark = now + st.bookmark_s
            if now >= end:
                self.wfile.write(b"0\r\n\r\n")
                return
            with st.cond:
                if (st.drop_gen, api.epoch) != gen:
                    break
                if st.rv <= sent or api.streams_paused():
                    st.cond.wait(min(0.2, max(0.0, end - now)))
                if (st.drop_gen, api.epoch) != gen:
                    break
                pending = []
                if api.streams_paused():
                    continue
                if sent < st.compacted:
                    expired = True
                    continue
                pending = [{"type": etype, "object": copy.deepcopy(obj)}
                           for rv, res, etype, obj in st.events
                           if rv > sent and res == resource and matches(obj, node)]
                sent = max(sent, st.rv)
        # dropped: the connection ends with no last chunk, as a reset one does
        self.connection.shutdown(socket.SHUT_RDWR)


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, api):
        self.api = api
        super().__init__(addr, Handler)

    def finish_request(self, request, client_address):
        """The TLS handshake, in the connection's own thread."""
        request.settimeout(10)
        try:
            conn = self.api.ctx.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError):
            request.close()
            return
        conn.settimeout(None)
        self.api.conn_opened(conn)
        try:
            self.RequestHandlerClass(conn, client_address, self)
        except OSError:
            pass
        finally:
            self.api.conn_closed(conn)
            try:
                conn.close()
            except OSError:
                pass

    def shutdown_request(self, request):
        pass  # finish_request closed it


class ApiServer:
    """One stand-in API server. cert: (certfile, keyfile); token: the bearer token it takes
    (set_token() changes it). port 0 takes a free one; stop() and start() keep the port and
    the state."""

    def __init__(self, cert, token, port=0):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(*cert)
        self.state = State(token)
        self.port = port
        self.httpd = None
        self.thread = None
        self.stopping = False
        self.epoch = 0            # moves at each stop(): the streams of before end
        self.conns = set()
        self.streams = set()
        self.start()

    # ---- running ----

    def start(self):
        self.stopping = False
        self.httpd = _Server(("127.0.0.1", self.port), self)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.1,),
                                       daemon=True)
        self.thread.start()

    def stop(self):
        """Stops listening and closes every connection (the API server is down)."""
        if self.httpd is None:
            return
        with self.state.cond:
            self.stopping = True
            self.epoch += 1
            self.state.cond.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()
        with self.state.cond:
            conns = list(self.conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.httpd = None

    def url(self):
        return f"https://127.0.0.1:{self.port}"

    def wait_stopped(self, seconds):
        """Sleeps up to seconds, less when the server stops meanwhile."""
        end = time.monotonic() + seconds
        with self.state.cond:
            while not self.stopping and time.monotonic() < end:
                self.state.cond.wait(end - time.monotonic())

    def conn_opened(self, c):
        with self.state.cond:
            self.conns.add(c)

    def conn_closed(self, c):
        with self.state.cond:
            self.conns.discard(c)

    def stream_opened(self, c):
        with self.state.cond:
            self.streams.add(c)

    def stream_closed(self, c):
        with self.state.cond:
            self.streams.discard(c)

    def open_streams(self):
        with self.state.cond:
            return len(self.streams)

    # ---- state ----

    def add_pod(self, pod):
        with self.state.cond:
            return self.state.change("pods", "ADDED", pod)

    def add_pods(self, pods):
        with self.state.cond:
            return [self.state.change("pods", "ADDED", p) for p in pods]

    def pod(self, ns, name):
        with self.state.cond:
            for p in self.state.objects["pods"].values():
                if p["metadata"]["namespace"] == ns and p["metadata"]["name"] == name:
                    return copy.deepcopy(p)
        return None

    def modify_pod(self, ns, name, fn):
        """fn(pod) changes a copy of pod ns/name in place; the change is a MODIFIED."""
        with self.state.cond:
            p = self.pod(ns, name)
            fn(p)
            return self.state.change("pods", "MODIFIED", p)

    def delete_pod(self, ns, name):
        with self.state.cond:
            return self.state.change("pods", "DELETED", self.pod(ns, name))

    def add_namespace(self, ns):
        with self.state.cond:
            return self.state.change("namespaces", "ADDED", ns)

    def resource_version(self):
        with self.state.cond:
            return self.state.rv

    def compact(self):
        """Forgets every event so far: a watch from an older resourceVersion, and an open one
        that has not sent them all, gets an ERROR 410 Expired."""
        with self.state.cond:
            self.state.compacted = self.state.rv
            self.state.events = []
            self.state.snapshots = {}
            self.state.cond.notify_all()

    def changes(self):
        """A context in which changes are seen by the streams all at once, at its end:
        `with api.changes(): api.modify_pod(...); api.compact()`."""
        return self.state.cond

    # ---- faults ----

    def set_token(self, token):
        with self.state.cond:
            self.state.token = token

    def drop_streams(self):
        """Ends every open watch stream now, without its last chunk."""
        with self.state.cond:
            self.state.drop_gen += 1
            self.state.cond.notify_all()

    def fail_next(self, code, count=1):
        """Answers the next count requests with code (401, 403, 500, ...) and a Status."""
        with self.state.cond:
            self.state.failures.append([code, count])

    def hang(self, seconds):
        """For seconds, requests are read and never answered (their connection is closed at
        the end)."""
        with self.state.cond:
            self.state.hang_until = time.monotonic() + seconds

    def pause_streams(self, seconds):
        """For seconds, open watches send nothing, not even bookmarks."""
        with self.state.cond:
            self.state.pause_until = time.monotonic() + seconds
            self.state.cond.notify_all()

    def streams_paused(self):
        return time.monotonic() < self.state.pause_until

    def slow_lists(self, resource, seconds):
        """A LIST of resource ("pods", "namespaces") is answered seconds late."""
        with self.state.cond:
            self.state.list_delay[resource] = seconds

    def set_page_max(self, n):
        """A LIST page holds n items at most, whatever limit asks (as a server may do)."""
        with self.state.cond:
            self.state.page_max = n

    def set_bookmark_interval(self, seconds):
        with self.state.cond:
            self.state.bookmark_s = seconds

    # ---- what was asked ----

    def requests(self, resource="pods", verb=None):
        """How many requests for resource (and verb: "list" or "watch") arrived so far."""
        with self.state.cond:
            return sum(n for (r, v), n in self.state.counts.items()
                       if r == resource and verb in (None, v))

    def request_log(self):
        """(verb, resource, query, status, Authorization header) of each answered request."""
        with self.state.cond:
            return list(self.state.log)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--token", default="test-token")
    ap.add_argument("--cert", help="certificate file (default: a new test CA's, in --dir)")
    ap.add_argument("--key")
    ap.add_argument("--dir", help="where the test CA goes (default: a temporary directory)")
    ap.add_argument("--node", default="n1")
    ap.add_argument("--pods", type=int, default=3, help="pods made on --node at start")
    args = ap.parse_args()
    if args.cert:
        cert = (args.cert, args.key or args.cert)
        ca = None
    else:
        sys.path.insert(0, HERE)
        import tlstest
        d = args.dir or tempfile.mkdtemp(prefix="kube-apiserver-")
        os.makedirs(d, exist_ok=True)
        cert, ca = tlstest.make_pki(d)
    api = ApiServer(cert, args.token, args.port)
    api.add_namespace(make_namespace("default"))
    api.add_pods([make_pod(f"web-7d4b9-{i:05d}", "default", node=args.node,
                           labels={"app": "web", "pod-template-hash": "7d4b9"},
                           owner=("ReplicaSet", "web-7d4b9"), ip=f"10.1.0.{i % 250 + 1}")
                  for i in range(args.pods)])
    print(f"{api.url()} token {args.token}" + (f" ca {ca}" if ca else ""), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        api.stop()


if __name__ == "__main__":
    main()
