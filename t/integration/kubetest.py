"""Shared helpers of the kubernetes section's end-to-end tests (t/integration/kube_*.py): a
node's log tree in a temporary directory (CRI files under var/log/pods/, linked from
var/log/containers/ as the kubelet does), the stand-in API server (kube_apiserver.py) over
TLS with a test CA and a token file, the agent's config, and what is expected of an event
of a pod: its kubernetes and container members, built from the pod object the server holds.
Python standard library only."""
import hashlib
import json
import os
import time

import kube_apiserver as ka
import tailtest as tt
import tlstest

NODE = "n1"


def dedot(d):
    return {k.replace(".", "_"): v for k, v in d.items()}


class Cluster:
    """A work directory, a stand-in API server taking token T1 (in token_file), and the
    node's log tree under root/var/log. Files are written by the test; stop() ends the
    server and removes the directory."""

    def __init__(self, name):
        self.wd = tt.Workdir(name)
        pki = os.path.join(self.wd.root, "pki")
        os.makedirs(pki)
        self.cert, self.ca = tlstest.make_pki(pki)
        self.token_file = os.path.join(self.wd.root, "token")
        self.write_token("T1-" + os.urandom(8).hex())
        self.api = ka.ApiServer(self.cert, self.token)
        self.varlog = os.path.join(self.wd.root, "var/log")
        self.containers = os.path.join(self.varlog, "containers")
        os.makedirs(self.containers)
        self.written = {}   # link path -> lines written, in order
        self.agent = None
        self.port = None

    def write_token(self, token):
        """Replaces the token file as the kubelet does a projected one: a new file renamed
        over it."""
        self.token = token
        tmp = self.token_file + ".new"
        with open(tmp, "w") as f:
            f.write(token + "\n")
        os.rename(tmp, self.token_file)

    # ---- the log tree ----

    def log_path(self, pod, container="app"):
        """The /var/log/containers link of pod's container (created by write())."""
        m = pod["metadata"]
        return os.path.join(self.containers, "%s_%s_%s-%s.log" % (
            m["name"], m["namespace"], container, container_id(pod, container)))

    def write(self, pod, lines, container="app"):
        """Appends CRI lines (stdout, full) to pod's container log, made with its link on
        first use. pod: the object (its uid names the directory)."""
        m = pod["metadata"]
        link = self.log_path(pod, container)
        real = os.path.join(self.varlog, "pods", "%s_%s_%s" % (m["namespace"], m["name"],
                                                                 m["uid"]), container, "0.log")
        if not os.path.exists(real):
            os.makedirs(os.path.dirname(real), exist_ok=True)
            open(real, "a").close()
            os.symlink(real, link)
        with open(real, "a") as f:
            for text in lines:
                f.write("2026-12-01T10:00:00.000000000Z stdout F %s\n" % text)
        self.written.setdefault(link, []).extend(lines)
        return link

    # ---- the agent ----

    def config(self, kube="", wait="2s", delete_grace="5s", extra="", enabled=True, node=NODE,
               ca=None):
        """The agent's config: the kubernetes section (kube: more keys, in flow style; none
        unless enabled; ca: another ca_file), one input over var/log/containers through the
        container parser, a file output and the metrics on a free port."""
        path = os.path.join(self.wd.root, "logferry.yml")
        q = tt.yaml_str
        section = f"""kubernetes: {{enabled: true, api_server: {q(self.api.url())},
  token_file: {q(self.token_file)}, ca_file: {q(ca or self.ca)}, node_name: {node}, wait: {wait},
  delete_grace: {delete_grace}{kube}}}
""" if enabled else ""
        with open(path, "w") as f:
            f.write(f"""data_dir: {q(self.wd.data)}
shutdown_timeout: 10s
{section}inputs:
  - id: pods
    paths: [{q(self.containers + "/*.log")}]
    allowed_roots: [{q(self.varlog)}]
    parsers: [{{container: {{}}}}]
    scan_interval: 1s
outputs:
  - {{name: local, type: file, path: {q(self.wd.out)}, compression: none}}
queue: {{batch: {{flush_interval: 100ms}}}}
registry: {{flush_interval: 200ms}}
metrics: {{listen: "127.0.0.1:0"}}
{extra}""")
        return path

    def start(self, tag="agent", **kw):
        self.agent = tt.Agent(self.config(**kw), self.wd, tag)
        self.port = tt.metrics_port(self.agent)
        return self.agent

    def start_synced(self, c, **kw):
        """Starts the agent and checks that it lists and watches."""
        self.start(**kw)
        c.check(self.wait_synced(), "the agent lists and watches: synced is 1")

    def web_pod(self, name, labels):
        """Namespace shop, and in it pod name of Deployment web (ReplicaSet web-7d4b9)."""
        self.api.add_namespace(ka.make_namespace("shop"))
        return self.api.add_pod(ka.make_pod(name, "shop", labels=labels,
                                            owner=("ReplicaSet", "web-7d4b9")))

    def finish(self, c):
        """Checks that every line arrived once and that the agent stops cleanly; returns
        its log."""
        self.check_all_once(c)
        rc = self.stop()
        c.check(rc == 0, "the agent stops cleanly", f"rc {rc}")
        return self.agent.stderr()

    def metric(self, name):
        """logferry_kubernetes_NAME now; NaN when it is not there (every check fails)."""
        _, body = tt.scrape(self.port)
        v = tt.metric(body, "logferry_kubernetes_" + name)
        return float("nan") if v is None else v

    def wait_metric(self, name, pred, timeout=15):
        return tt.wait_metric(self.port, "logferry_kubernetes_" + name, "", pred, timeout)

    def wait_synced(self, timeout=15):
        return self.wait_metric("synced", lambda v: v == 1, timeout) == 1

    def stop(self):
        rc = None
        if self.agent is not None:
            rc = self.agent.stop()
        self.api.stop()
        return rc

    def cleanup(self):
        if self.agent is not None and self.agent.alive():
            self.agent.stop()
        self.api.stop()
        self.wd.cleanup()

    # ---- what arrived ----

    def events(self):
        return tt.read_events(self.wd.out)

    def by_message(self):
        """message -> the events that carry it."""
        out = {}
        for e in self.events():
            out.setdefault(e.get("message"), []).append(e)
        return out

    def wait_lines(self, lines, timeout=15):
        """Waits until every one of lines arrived; returns whether they did."""
        want = set(lines)
        return bool(tt.wait_for(lambda: want <= set(self.by_message()), timeout, step=0.1))

    def check_all_once(self, c, what="every line written"):
        """Every line written arrived exactly once, from its own file."""
        got = {}
        for e in self.events():
            got.setdefault(e["log"]["file"]["path"], []).append(e["message"])
        lost = dups = wrong = 0
        for link, lines in self.written.items():
            have = got.get(link, [])
            lost += len(set(lines) - set(have))
            dups += len(have) - len(set(have))
            wrong += len(set(have) - set(lines))
        extra = sum(len(v) for k, v in got.items() if k not in self.written)
        n = sum(len(v) for v in self.written.values())
        return c.check(lost == dups == wrong == extra == 0 and
                       sum(len(v) for v in got.values()) == n,
                       f"{what}: {n} lines arrived once each, none lost",
                       f"lost {lost} duplicated {dups} foreign {wrong + extra}")


def container_id(pod, container):
    return hashlib.sha256((pod["metadata"]["uid"] + container).encode()).hexdigest()


def expected(pod, container="app", annotations=(), ns_labels=None, with_meta=True):
    """(kubernetes, container) members of an event of pod's container: with_meta, what the
    API server's object adds (annotations: the keys expected, dedotted; ns_labels: the
    namespace's labels or None); without, what the file name says."""
    m = pod["metadata"]
    cid = container_id(pod, container)
    if not with_meta:
        return ({"pod": {"name": m["name"]}, "namespace": m["namespace"],
                 "container": {"name": container}}, {"id": cid})
    podm = {"name": m["name"], "uid": m["uid"]}
    if pod["status"].get("podIP"):
        podm["ip"] = pod["status"]["podIP"]
    k = {"pod": podm, "namespace": m["namespace"], "node": {"name": pod["spec"]["nodeName"]}}
    if m.get("labels"):
        k["labels"] = dedot(m["labels"])
    ann = {a: v for a, v in dedot(m.get("annotations", {})).items() if a in annotations}
    if ann:
        k["annotations"] = ann
    for o in m.get("ownerReferences", []):
        kind, name = o["kind"], o["name"]
        if kind == "ReplicaSet":
            k["replicaset"] = {"name": name}
            h = m.get("labels", {}).get("pod-template-hash")
            if h and name.endswith("-" + h):
                k["deployment"] = {"name": name[:-len(h) - 1]}
        elif kind in ("StatefulSet", "DaemonSet"):
            k[kind.lower()] = {"name": name}
        elif kind == "Job":
            k["job"] = {"name": name}
            base, _, digits = name.rpartition("-")
            if digits.isdigit() and len(digits) >= 8:
                k["cronjob"] = {"name": base}
    if ns_labels:
        k["namespace_labels"] = dedot(ns_labels)
    k["container"] = {"name": container}
    cont = {"id": cid}
    for c in pod["spec"]["containers"] + pod["spec"].get("initContainers", []):
        if c["name"] == container:
            cont["image"] = {"name": c["image"]}
    return k, cont


def wait_requests(api, timeout=5):
    """The pods requests (list, watch) once they stopped moving for a second."""
    last = None
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        now = (api.requests("pods", "list"), api.requests("pods", "watch"))
        if now == last:
            return now
        last = now
        time.sleep(1)
    return last


def show(e):
    return json.dumps({"kubernetes": e.get("kubernetes"), "container": e.get("container")})
