"""Pod metadata on events, exactly: the real binary with a kubernetes section against the
stand-in API server (kube_apiserver.py), container log files of six pods of this node, each
owned differently (a Deployment's ReplicaSet, a StatefulSet, a DaemonSet, a CronJob's Job, a
plain Job, none), with labels, annotations (include and exclude globs, a value to escape),
namespace labels, an init container and a second container. Every event carries the pod's
uid, IP, node, labels, owner and its container's image as the server holds them; a pod of
another node is not asked for; one LIST and one WATCH of pods (and of namespaces) however
many files and lines; every line arrives once. And an API server whose certificate the
ca_file does not vouch for: nothing is asked of it, the lines ship all the same."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kube_apiserver as ka  # noqa: E402
import kubetest as kt  # noqa: E402
import tailtest as tt  # noqa: E402
import tlstest  # noqa: E402

ANNOTATIONS = ", annotations: {include: ['prometheus.io/*', team, 'kubectl.kubernetes.io/*'], " \
              "exclude: [kubectl.kubernetes.io/last-applied-configuration]}"
WANT_ANN = ("prometheus_io/scrape", "prometheus_io/port", "team",
            "kubectl_kubernetes_io/restartedAt")

NS_LABELS = {"shop": {"env": "prod", "team.example.com/owner": "payments"},
             "monitoring": {"env": "infra"}, "ops": {}, "default": {}}


def pods():
    web = ka.make_pod(
        "web-7d4b9c8f6-xk2lp", "shop",
        labels={"app.kubernetes.io/name": "web", "pod-template-hash": "7d4b9c8f6",
                "tier": "front"},
        annotations={"prometheus.io/scrape": "true", "prometheus.io/port": "9102",
                     "team": 'pay "ments"\n\u00fcber \\ all',
                     "kubectl.kubernetes.io/last-applied-configuration": "{" + "x" * 3000 + "}",
                     "kubectl.kubernetes.io/restartedAt": "2026-12-01T09:00:00Z",
                     "sidecar.istio.io/status": "{}"},
        owner=("ReplicaSet", "web-7d4b9c8f6"),
        containers=(("app", "registry.example.com/shop/web:2.4.1"),
                    ("envoy", "envoyproxy/envoy:v1.28.0")),
        init_containers=(("migrate", "busybox:1.36"),), ip="10.1.2.3")
    return [
        web,
        ka.make_pod("db-0", "shop", labels={"app": "db", "statefulset.kubernetes.io/pod-name":
                                            "db-0"},
                    owner=("StatefulSet", "db"), containers=(("postgres", "postgres:16"),),
                    ip="10.1.2.4"),
        ka.make_pod("node-exporter-8kq2m", "monitoring", labels={"app": "node-exporter"},
                    owner=("DaemonSet", "node-exporter"),
                    containers=(("exporter", "quay.io/prometheus/node-exporter:v1.7.0"),),
                    ip="192.168.0.10"),
        ka.make_pod("backup-29413440-q7x2z", "ops", labels={"job-name": "backup-29413440"},
                    owner=("Job", "backup-29413440"), containers=(("backup", "restic:0.16"),),
                    ip="10.1.2.6"),
        ka.make_pod("migrate-2024-w8d4k", "ops", labels={"job-name": "migrate-2024"},
                    owner=("Job", "migrate-2024"), containers=(("migrate", "flyway:10"),),
                    ip="10.1.2.7"),
        ka.make_pod("debug", "default", containers=(("sh", "busybox:1.36"),), ip=None,
                    phase="Pending"),
    ]


def untrusted(c):
    """ca_file names a CA that did not sign the server's certificate: no request gets
    through, the log says why, and the lines ship with the file name's fields."""
    cl = kt.Cluster("kube-untrusted")
    try:
        other = os.path.join(cl.wd.root, "other-ca")
        os.makedirs(other)
        _, ca = tlstest.make_pki(other)
        pod = cl.web_pod("web-7d4b9-eeeee", {"app": "web"})
        cl.write(pod, [f"untrusted {i}" for i in range(10)])
        cl.start(ca=ca)
        c.check(cl.wait_lines([f"untrusted {i}" for i in range(10)]) and all(
            (e["kubernetes"], e["container"]) == kt.expected(pod, with_meta=False)
            for e in cl.events()), "an API server the CA does not vouch for: lines ship "
                "with the file name's fields")
        line = next((ln for ln in cl.agent.stderr().splitlines()
                     if "kubernetes" in ln and "certificate" in ln.lower()), "")
        c.check(line, "the log says the certificate was refused", line[:200])
        c.check(cl.metric("synced") == 0 and cl.metric("api_errors_total") >= 1 and
                not cl.api.request_log(), "no request got through: synced 0, errors counted")
        cl.finish(c)
    finally:
        cl.cleanup()


def main():
    c = tt.Checks()
    untrusted(c)
    cl = kt.Cluster("kube-fields")
    try:
        api = cl.api
        for ns, labels in NS_LABELS.items():
            api.add_namespace(ka.make_namespace(ns, labels))
        ps = api.add_pods(pods())
        api.add_pod(ka.make_pod("elsewhere-0", "shop", node="n2", labels={"app": "web"}))
        files = [(ps[0], c_) for c_ in ("app", "envoy", "migrate")] + \
            [(p, p["spec"]["containers"][0]["name"]) for p in ps[1:]]
        cl.start_synced(c, kube=ANNOTATIONS + ", namespace_labels: true")
        # files once pods and namespaces are listed (kube_nslate.py: namespaces listed late)
        c.check(cl.wait_metric("lists_total", lambda v: v == 2) == 2,
                "pods and namespaces listed")
        for p, cont in files:
            cl.write(p, [f"{p['metadata']['name']} {cont} {i}" for i in range(50)], cont)
        all_lines = [ln for lines in cl.written.values() for ln in lines]
        c.check(cl.wait_lines(all_lines, 20), "every file's lines arrive")

        for p, cont in files:
            nsl = dict(NS_LABELS[p["metadata"]["namespace"]])
            nsl["kubernetes.io/metadata.name"] = p["metadata"]["namespace"]
            want = kt.expected(p, cont, WANT_ANN, nsl)
            evs = [e for e in cl.events() if e["log"]["file"]["path"] == cl.log_path(p, cont)]
            bad = [e for e in evs if (e.get("kubernetes"), e.get("container")) != want]
            c.check(evs and not bad, f"{p['metadata']['name']}/{cont}: each of {len(evs)} "
                    "events carries the pod's metadata exactly",
                    f"{len(bad)} differ; got " + kt.show(bad[0]) + "\n  want " +
                    kt.show({"kubernetes": want[0], "container": want[1]}) if bad else "")

        m = {k: cl.metric(k) for k in ("pods", "lists_total", "synced", "api_errors_total",
                                       "metadata_misses_total", "cache_bytes",
                                       "watch_events_total")}
        c.check(m["pods"] == 6 and m["lists_total"] == 2 and m["synced"] == 1 and
                m["api_errors_total"] == 0 and m["metadata_misses_total"] == 0,
                "metrics: 6 pods (not the other node's), 2 lists (pods, namespaces), no error, "
                "no miss", str(m))
        c.check(6 * 200 < m["cache_bytes"] < 6 * 16384,
                "logferry_kubernetes_cache_bytes: a few KiB for 6 pods",
                f"{m['cache_bytes']} bytes")
        reqs = kt.wait_requests(api)
        c.check(reqs == (1, 1) and api.requests("namespaces", "list") == 1 and
                api.requests("namespaces", "watch") == 1,
                f"{len(files)} files, {len(all_lines)} lines: 1 LIST and 1 WATCH of pods, "
                "of namespaces", f"pods {reqs}, namespaces "
                f"({api.requests('namespaces', 'list')}, {api.requests('namespaces', 'watch')})")
        sels = {q for verb, res, q, code, _ in api.request_log() if res == "pods"}
        c.check(all("fieldSelector=spec.nodeName%3Dn1" in q or "fieldSelector=spec.nodeName=n1"
                    in q for q in sels), "pods are asked for with this node's field selector",
                str(sels)[:300])
        err = cl.finish(c)
        c.check(cl.token not in err, "the token is never logged")
        tt.check_no_error_logged(c, err)
    finally:
        cl.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
