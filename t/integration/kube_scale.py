"""500 pods on the node, as the stand-in API server (kube_apiserver.py) writes them (with
their managedFields, statuses, five labels and two annotations each), listed in pages of
200: the agent holds all 500 and enriches the files of 50 of them. Its RSS is printed beside
that of the same agent and files without the kubernetes section and with it on a node of no
pods, and bounded, as logferry_kubernetes_cache_bytes is. Requests to the API server stay
O(1): the LIST's 3 pages and one WATCH, however many files and lines."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kube_apiserver as ka  # noqa: E402
import kubetest as kt  # noqa: E402
import tailtest as tt  # noqa: E402

PODS = 500
FILES = 50
LINES = 20


def make_pods():
    out = []
    for i in range(PODS):
        rs = f"svc{i % 40:02d}-5f7c9b8d4"
        out.append(ka.make_pod(
            f"{rs}-{i:05d}", f"team-{i % 10}",
            labels={"app.kubernetes.io/name": f"svc{i % 40:02d}", "pod-template-hash":
                    "5f7c9b8d4", "app.kubernetes.io/part-of": "shop", "version": "v2.4.1",
                    "tier": "backend"},
            annotations={"prometheus.io/scrape": "true", "kubectl.kubernetes.io/"
                         "last-applied-configuration": "{" + "x" * 800 + "}"},
            owner=("ReplicaSet", rs), ip=f"10.1.{i // 250}.{i % 250 + 1}",
            containers=(("app", f"registry.example.com/svc{i % 40:02d}:2.4.1"),
                        ("istio-proxy", "docker.io/istio/proxyv2:1.20.0"))))
    return out


def rss_kib(pid):
    return tt.proc_status_kib(pid, "VmRSS")


def run(c, cl, tag, lines, **kw):
    """An agent over the files, in a data and output directory of its own (tag), until every
    line arrived; returns its RSS (KiB) then."""
    out, data = cl.wd.out, cl.wd.data
    cl.wd.out, cl.wd.data = f"{out}-{tag}", f"{data}-{tag}"
    agent = cl.start(tag, **kw)
    c.check(cl.wait_lines(lines, 20), f"{tag}: every line arrives")
    time.sleep(1)
    rss = rss_kib(agent.pid)
    agent.stop()
    cl.wd.out, cl.wd.data = out, data
    return rss


def main():
    c = tt.Checks()
    cl = kt.Cluster("kube-scale")
    try:
        api = cl.api
        api.set_page_max(200)
        for ns in range(10):
            api.add_namespace(ka.make_namespace(f"team-{ns}"))
        pods = api.add_pods(make_pods())
        chosen = pods[::PODS // FILES]
        for p in chosen:
            cl.write(p, [f"{p['metadata']['name']} {i}" for i in range(LINES)])
        all_lines = [ln for v in cl.written.values() for ln in v]
        # the same files without the section, then with it on a node of no pods
        plain = run(c, cl, "plain", all_lines, enabled=False)
        empty = run(c, cl, "empty", all_lines, node="n0")
        # and on the node of the 500 pods
        t0 = time.monotonic()
        before = kt.wait_requests(api, 2)
        agent = cl.start()
        c.check(cl.wait_metric("pods", lambda v: v == PODS, 20) == PODS,
                f"the agent holds the {PODS} pods of the node",
                f"{time.monotonic() - t0:.1f}s after its start")
        c.check(cl.wait_lines(all_lines, 20), "with the section: every line arrives")
        bad = [e for e in cl.events() if e.get("kubernetes", {}).get("labels", {}).get(
            "tier") != "backend" or "annotations" in e["kubernetes"]]
        c.check(not bad, f"each of the {len(all_lines)} events carries its pod's labels, and "
                "no annotation (annotations.include is not set)", f"{len(bad)} differ")
        time.sleep(1)
        rss = rss_kib(agent.pid)
        cache = cl.metric("cache_bytes")
        print(f"figures: RSS {plain} KiB without the section, {empty} KiB with it and no pod, "
              f"{rss} KiB with {PODS} pods (+{rss - empty} KiB, {(rss - empty) / PODS:.1f} KiB "
              f"a pod; peak {agent.rss_peak_kib()} KiB); cache_bytes {cache:.0f} "
              f"({cache / PODS:.0f} a pod)")
        c.check(PODS * 100 < cache < PODS * 2048,
                "logferry_kubernetes_cache_bytes: under 2 KiB a pod", f"{cache:.0f}")
        if not tt.sanitized():
            c.check(rss - empty < PODS * 12, "RSS for 500 pods: under 12 KiB a pod, all told "
                    "(the LIST's JSON handed back)", f"+{rss - empty} KiB")
        reqs = tuple(n - b for n, b in zip(kt.wait_requests(api), before))
        c.check(reqs == (3, 1), f"{FILES} files, {len(all_lines)} lines: the LIST's 3 pages "
                "and one WATCH", str(reqs))
        cl.finish(c)
    finally:
        cl.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
