"""Namespace labels when the namespaces are listed later than the pods (their LIST answered
1 s late by the stand-in API server, kube_apiserver.py): the events of a file there before
the agent starts, and of files made as soon as the pods are synced, still carry
kubernetes.namespace_labels, from the first: nothing is read before all the metadata the
config asks for is known, within kubernetes.wait."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kube_apiserver as ka  # noqa: E402
import kube_fields as kf  # noqa: E402
import kubetest as kt  # noqa: E402
import tailtest as tt  # noqa: E402


def main():
    c = tt.Checks()
    cl = kt.Cluster("kube-nslate")
    try:
        api = cl.api
        for ns, labels in kf.NS_LABELS.items():
            api.add_namespace(ka.make_namespace(ns, labels))
        ps = api.add_pods(kf.pods())
        cl.write(ps[0], [f"at start {i}" for i in range(20)])
        api.slow_lists("namespaces", 1)
        cl.start_synced(c, kube=", namespace_labels: true")
        for p in ps[1:]:
            cont = p["spec"]["containers"][0]["name"]
            cl.write(p, [f"{p['metadata']['name']} {i}" for i in range(20)], cont)
        c.check(cl.wait_lines([ln for v in cl.written.values() for ln in v]),
                "every line arrives")
        for p in ps:
            ns = p["metadata"]["namespace"]
            want = dict(kf.NS_LABELS[ns], **{"kubernetes.io/metadata.name": ns})
            cont = p["spec"]["containers"][0]["name"]
            evs = [e for e in cl.events() if e["log"]["file"]["path"] == cl.log_path(p, cont)]
            bad = [e for e in evs
                   if e.get("kubernetes", {}).get("namespace_labels") != kt.dedot(want)]
            c.check(evs and not bad, f"{p['metadata']['name']}: each of {len(evs)} events has "
                    "its namespace's labels", f"{len(bad)} without")
        cl.finish(c)
    finally:
        cl.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
