"""The stand-in Kubernetes API server (kube_apiserver.py) alone, through http.client over TLS
verified against its test CA: the bearer token (401 with a v1 Status, a rotated token),
LIST by node with paging, WATCH from a resourceVersion (chunked, one event a line, ADDED,
MODIFIED, DELETED, BOOKMARK, the end after timeoutSeconds), 410 Expired after a compaction,
and the faults the end-to-end tests use (403/500, hang, dropped streams, stop and start on
the same port, the request counters)."""
import http.client
import json
import os
import ssl
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kube_apiserver as ka  # noqa: E402
import tailtest as tt  # noqa: E402
import tlstest  # noqa: E402

SEL = "fieldSelector=spec.nodeName%3Dn1"


class Client:
    def __init__(self, api, ca, token):
        self.api = api
        self.ctx = ssl.create_default_context(cafile=ca)
        self.token = token

    def get(self, path, timeout=5):
        """(response, connection) of GET path; the caller reads the response."""
        conn = http.client.HTTPSConnection("127.0.0.1", self.api.port, context=self.ctx,
                                           timeout=timeout)
        conn.request("GET", path, headers={"Authorization": f"Bearer {self.token}"})
        return conn.getresponse(), conn

    def json(self, path):
        r, conn = self.get(path)
        body = json.loads(r.read())
        conn.close()
        return r.status, body

    def events(self, path, n, timeout=5):
        """The first n events of a watch (fewer if the stream ends), and whether it ended."""
        r, conn = self.get(path, timeout)
        out = []
        ended = False
        while len(out) < n:
            line = r.readline()
            if not line:
                ended = True
                break
            out.append(json.loads(line))
        conn.close()
        return r, out, ended


def check_token_and_list(c, api, cl):
    cl.token = "wrong"
    code, body = cl.json(f"/api/v1/pods?{SEL}")
    c.check(code == 401 and {k: body.get(k) for k in ("kind", "apiVersion", "status",
                                                       "reason", "code")} ==
            {"kind": "Status", "apiVersion": "v1", "status": "Failure",
             "reason": "Unauthorized", "code": 401}, "a wrong token: 401 with a v1 Status",
            f"{code} {body}")
    cl.token = "t1"
    code, body = cl.json(f"/api/v1/pods?{SEL}")
    names = [p["metadata"]["name"] for p in body["items"]]
    c.check(code == 200 and body["kind"] == "PodList" and len(names) == 5 and
            all(n.startswith("web-") for n in names) and
            isinstance(body["metadata"]["resourceVersion"], str),
            "LIST: a PodList of this node's 5 pods, resourceVersion a string",
            f"{code} {names} rv {body['metadata'].get('resourceVersion')!r}")
    c.check("kind" not in body["items"][0] and
            body["items"][0]["metadata"]["ownerReferences"][0]["controller"] is True,
            "LIST items as the API writes them: no kind, an owner reference")
    pages, names2, path = 0, [], f"/api/v1/pods?{SEL}&limit=2"
    while True:
        code, body = cl.json(path)
        pages += 1
        names2 += [p["metadata"]["name"] for p in body["items"]]
        cont = body["metadata"].get("continue")
        if not cont or pages > 5:
            break
        path = f"/api/v1/pods?{SEL}&limit=2&continue={cont}"
    c.check(pages == 3 and names2 == names, "LIST with limit=2: 3 pages, the same pods",
            f"{pages} pages {names2}")
    api.set_page_max(4)
    code, body = cl.json(f"/api/v1/pods?{SEL}&limit=500")
    c.check(len(body["items"]) == 4 and body["metadata"].get("continue"),
            "set_page_max(4): a page of 4 and a continue token, whatever the limit")
    api.set_page_max(0)
    api.slow_lists("namespaces", 0.5)
    t0 = time.monotonic()
    code, body = cl.json("/api/v1/namespaces")
    took = time.monotonic() - t0
    c.check(code == 200 and 0.5 <= took < 1.5, "slow_lists: a LIST answered 0.5 s late",
            f"{took:.2f}s")
    api.slow_lists("namespaces", 0)
    code, body = cl.json("/api/v1/namespaces")
    c.check(code == 200 and body["kind"] == "NamespaceList" and
            [n["metadata"]["name"] for n in body["items"]] == ["shop"], "LIST namespaces")
    return int(body["metadata"]["resourceVersion"])


def check_watch(c, api, cl, rv):
    api.modify_pod("shop", "web-1", lambda p: p["metadata"]["labels"].update(tier="gold"))
    api.add_pod(ka.make_pod("other-node", "shop", node="n2"))
    api.delete_pod("shop", "web-2")
    path = f"/api/v1/pods?{SEL}&watch=1&resourceVersion={rv}&allowWatchBookmarks=true"
    r, evs, _ = cl.events(path + "&timeoutSeconds=3", 2)
    c.check(r.status == 200 and r.getheader("Transfer-Encoding") == "chunked",
            "WATCH: 200, chunked")
    c.check([(e["type"], e["object"]["metadata"]["name"]) for e in evs] ==
            [("MODIFIED", "web-1"), ("DELETED", "web-2")] and
            evs[0]["object"]["metadata"]["labels"]["tier"] == "gold",
            "WATCH from rv: this node's events after it, in order",
            str([(e["type"], e["object"]["metadata"]["name"]) for e in evs]))
    api.set_bookmark_interval(0.3)
    t0 = time.monotonic()
    r, evs, ended = cl.events(path + "&timeoutSeconds=1", 10)
    took = time.monotonic() - t0
    types = [e["type"] for e in evs]
    last_rv = api.resource_version()
    c.check(types[:2] == ["MODIFIED", "DELETED"] and "BOOKMARK" in types and ended and
            0.9 < took < 2.5, "WATCH: bookmarks, then the end after timeoutSeconds",
            f"{types} in {took:.1f}s")
    bm = [e for e in evs if e["type"] == "BOOKMARK"][0]
    c.check(bm["object"]["metadata"]["resourceVersion"] == str(last_rv) and
            bm["object"]["kind"] == "Pod", "a BOOKMARK carries the last resourceVersion")
    # live: an event made while the stream is open arrives at once
    r, conn = cl.get(f"/api/v1/pods?{SEL}&watch=1&resourceVersion={last_rv}")
    time.sleep(0.2)
    t0 = time.monotonic()
    api.add_pod(ka.make_pod("late", "shop"))
    ev = json.loads(r.readline())
    c.check(ev["type"] == "ADDED" and ev["object"]["metadata"]["name"] == "late" and
            time.monotonic() - t0 < 0.5, "WATCH: a live ADDED arrives at once")
    api.drop_streams()
    t0 = time.monotonic()
    try:
        rest = r.read()
        dropped = False
    except (http.client.IncompleteRead, OSError):
        dropped = True
        rest = b""
    c.check(dropped and not rest and time.monotonic() - t0 < 1,
            "drop_streams() ends an open stream without its last chunk")
    conn.close()
    return last_rv


def check_expired(c, api, cl, old_rv):
    api.add_pod(ka.make_pod("after", "shop"))
    api.compact()
    r, evs, ended = cl.events(f"/api/v1/pods?{SEL}&watch=1&resourceVersion={old_rv}", 3)
    c.check(r.status == 200 and len(evs) == 1 and ended and evs[0]["type"] == "ERROR" and
            evs[0]["object"]["code"] == 410 and evs[0]["object"]["reason"] == "Expired",
            "WATCH from before a compaction: 200, one ERROR 410 Expired, the end",
            str(evs)[:200])
    now = api.resource_version()
    api.add_pod(ka.make_pod("after2", "shop"))
    r, evs, _ = cl.events(f"/api/v1/pods?{SEL}&watch=1&resourceVersion={now}", 1)
    c.check([e["object"]["metadata"]["name"] for e in evs] == ["after2"],
            "WATCH from the compaction's resourceVersion goes on")
    # an open stream that has not sent what was compacted: ERROR 410 too, then the end
    r, conn = cl.get(f"/api/v1/pods?{SEL}&watch=1&resourceVersion={api.resource_version()}")
    time.sleep(0.2)
    with api.changes():
        api.add_pod(ka.make_pod("lost", "shop"))
        api.compact()
    evs = [json.loads(ln) for ln in r.read().splitlines()]
    conn.close()
    c.check([(e["type"], e["object"].get("code")) for e in evs] == [("ERROR", 410)],
            "an open WATCH behind a compaction: ERROR 410, the end", str(evs)[:200])
    # paused streams send nothing, then what happened meanwhile
    api.pause_streams(0.6)
    t0 = time.monotonic()
    r, conn = cl.get(f"/api/v1/pods?{SEL}&watch=1&resourceVersion={api.resource_version()}")
    api.add_pod(ka.make_pod("paused", "shop"))
    ev = json.loads(r.readline())
    conn.close()
    c.check(ev["object"]["metadata"]["name"] == "paused" and time.monotonic() - t0 >= 0.5,
            "pause_streams(0.6): the event comes after the pause",
            f"{time.monotonic() - t0:.2f}s")


def check_faults(c, api, cl):
    api.fail_next(403)
    api.fail_next(500, 2)
    codes = [cl.json(f"/api/v1/pods?{SEL}")[0] for _ in range(4)]
    c.check(codes == [403, 500, 500, 200], "fail_next: 403, then 500 twice, then 200",
            str(codes))
    api.set_token("t2")
    c.check(cl.json(f"/api/v1/pods?{SEL}")[0] == 401, "a rotated token: the old one gets 401")
    cl.token = "t2"
    c.check(cl.json(f"/api/v1/pods?{SEL}")[0] == 200, "the new token is taken")
    api.hang(1.0)
    t0 = time.monotonic()
    try:
        cl.json(f"/api/v1/pods?{SEL}")
        hung = False
    except (http.client.HTTPException, OSError):
        hung = True
    took = time.monotonic() - t0
    c.check(hung and 0.9 < took < 2, "hang(1): a request gets no answer for 1 s",
            f"{took:.2f}s")
    port = api.port
    before = api.requests("pods", "list")
    api.stop()
    try:
        cl.json(f"/api/v1/pods?{SEL}")
        refused = False
    except OSError:
        refused = True
    c.check(refused, "stopped: connections are refused")
    api.start()
    code, body = cl.json(f"/api/v1/pods?{SEL}")
    c.check(api.port == port and code == 200 and len(body["items"]) >= 5,
            "started again on the same port with the same pods")
    c.check(api.requests("pods", "list") == before + 1 and api.requests("pods", "watch") >= 5,
            "requests are counted by verb",
            f"list {api.requests('pods', 'list')} watch {api.requests('pods', 'watch')}")


def main():
    c = tt.Checks()
    wd = tt.Workdir("kube-apiserver")
    cert, ca = tlstest.make_pki(wd.root)
    api = ka.ApiServer(cert, "t1")
    try:
        api.add_namespace(ka.make_namespace("shop"))
        api.add_pods([ka.make_pod(f"web-{i}", "shop", labels={"app": "web"},
                                  owner=("ReplicaSet", "web-7d4b9")) for i in range(5)])
        api.add_pods([ka.make_pod(f"db-{i}", "shop", node="n2") for i in range(3)])
        rv = check_token_and_list(c, api, Client(api, ca, "t1"))
        cl = Client(api, ca, "t1")
        last_rv = check_watch(c, api, cl, rv)
        check_expired(c, api, cl, last_rv)
        check_faults(c, api, cl)
    finally:
        api.stop()
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
