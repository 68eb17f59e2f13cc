"""500 pods on the node, as the stand-in API server (kube_apiserver.py) writes them (with
their managedFields, statuses, five labels and two annotations each), listed in pages of
200: the agent holds all 500 and enriches the files of 50 of them; its RSS and
logferry_kubernetes_cache_bytes are printed and bounded, and compared with the same agent
and files without the kubernetes section. Requests to the API server stay O(1): the LIST's
3 pages and one WATCH, however many files and lines."""
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
        # baseline: the same files, no kubernetes section
        for p in chosen:
            cl.write(p, [f"{p['metadata']['name']} {i}" for i in range(LINES)])
        plain = cl.start("plain", enabled=False)
        all_lines = [ln for v in cl.written.values() for ln in v]
        c.check(cl.wait_lines(all_lines, 20), "without the section: every line arrives")
        time.sleep(1)
        base = rss_kib(plain.pid)
        plain.stop()
        # the same with the section: 500 pods listed
        cl.wd.out = cl.wd.out + "-kube"
        cl.wd.data = cl.wd.data + "-kube"
        t0 = time.monotonic()
        agent = cl.start()
        c.check(cl.wait_metric("pods", lambda v: v == PODS, 20) == PODS,
                f"the agent holds the {PODS} pods of the node",
                f"{time.monotonic() - t0:.1f}s after its start")
        c.check(cl.wait_lines(all_lines, 20), "with the section: every line arrives")
        bad = [e for e in cl.events() if e.get("kubernetes", {}).get("labels", {}).get(
            "tier") != "backend"]
        c.check(not bad, f"each of the {len(all_lines)} events carries its pod's labels",
                f"{len(bad)} without")
        time.sleep(1)
        rss = rss_kib(agent.pid)
        cache = cl.metric("cache_bytes")
        print(f"figures: {PODS} pods: cache_bytes {cache} ({cache / PODS:.0f} per pod); "
              f"RSS {rss} KiB with the section, {base} KiB without (+{rss - base} KiB); "
              f"peak {agent.rss_peak_kib()} KiB")
        c.check(PODS * 100 < cache < PODS * 4096,
                "logferry_kubernetes_cache_bytes: under 4 KiB a pod", str(cache))
        if not tt.sanitized():
            c.check(rss - base < 16 * 1024, "the section's RSS for 500 pods: under 16 MiB",
                    f"+{rss - base} KiB")
        reqs = kt.wait_requests(api)
        c.check(reqs == (3, 1), f"{FILES} files, {len(all_lines)} lines: the LIST's 3 pages "
                "and one WATCH", str(reqs))
        cl.finish(c)
    finally:
        cl.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
