"""The API server down for 15 s (the stand-in kube_apiserver.py stopped, then started again
on the same port), with the real binary shipping container logs throughout:
- lines written during the outage arrive within a few seconds, a known pod's with its
  metadata; logferry_kubernetes_synced goes to 0;
- a pod created during the outage: its file does not wait for the API server (it ships
  within kubernetes.wait, with the file name's fields);
- once the server is back: synced is 1 again, and the lines written then carry the metadata
  of the pod created during the outage and the label changed during it;
- every line arrives once."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kube_apiserver as ka  # noqa: E402
import kubetest as kt  # noqa: E402
import tailtest as tt  # noqa: E402

OUTAGE_S = 15  # the watch backs off with full jitter up to 16 s by then (30 s at most)


def arrives_within(cl, pod, msgs, seconds):
    t0 = time.monotonic()
    cl.write(pod, msgs)
    ok = cl.wait_lines(msgs, seconds)
    return ok, time.monotonic() - t0


def with_meta(cl, msgs, want):
    by = cl.by_message()
    return [m for m in msgs if m not in by or
            (by[m][0].get("kubernetes"), by[m][0].get("container")) != want]


def during(c, cl, known):
    """The outage: lines of a known pod and of a new one keep arriving. Returns when the
    server is back, the new pod and the known pod as changed meanwhile."""
    t_stop = time.monotonic()
    api = cl.api
    api.stop()
    # the server's state changes while it is down: a pod added, a label changed
    new = api.add_pod(ka.make_pod("worker-0", "shop", labels={"app": "worker"},
                                  owner=("StatefulSet", "worker"), ip="10.1.2.8"))
    known2 = api.modify_pod("shop", known["metadata"]["name"],
                            lambda p: p["metadata"]["labels"].update(tier="gold"))
    synced = cl.wait_metric("synced", lambda v: v == 0, 10)
    c.check(synced == 0, "the API server down: synced is 0",
            f"after {time.monotonic() - t_stop:.1f}s")
    worst = 0.0
    late = []
    i = 0
    while time.monotonic() - t_stop < OUTAGE_S - 4:
        msgs = [f"outage {i} {j}" for j in range(10)]
        ok, took = arrives_within(cl, known, msgs, 10)
        worst = max(worst, took)
        if not ok:
            late.append(i)
        i += 1
        time.sleep(max(0.0, 3 - took))
    c.check(not late and worst < 5, f"during the outage, lines of a known pod arrive ({i} "
            "rounds)", f"slowest {worst:.1f}s; late rounds {late}")
    bad = with_meta(cl, [f"outage {k} {j}" for k in range(i) for j in range(10)],
                    kt.expected(known))
    c.check(not bad, "and keep its metadata", f"{len(bad)} without")
    ok, took = arrives_within(cl, new, [f"new {j}" for j in range(10)], 10)
    c.check(ok and took < 3.5, "a pod created during the outage: its file ships within the "
            "wait", f"{took:.1f}s")
    bad = with_meta(cl, [f"new {j}" for j in range(10)], kt.expected(new, with_meta=False))
    c.check(not bad, "with the file name's fields only", f"{len(bad)} differ")
    time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - t_stop)))
    api.start()
    return time.monotonic(), new, known2


def main():
    c = tt.Checks()
    cl = kt.Cluster("kube-outage")
    try:
        api = cl.api
        known = cl.web_pod("web-7d4b9-ddddd", {"app": "web", "tier": "silver"})
        cl.start_synced(c)
        ok, _ = arrives_within(cl, known, [f"before {j}" for j in range(10)], 10)
        c.check(ok and not with_meta(cl, [f"before {j}" for j in range(10)],
                                     kt.expected(known)), "before the outage: metadata")
        errors = cl.metric("api_errors_total")
        back_at, new, known2 = during(c, cl, known)
        synced = cl.wait_metric("synced", lambda v: v == 1, OUTAGE_S + 10)
        c.check(synced == 1, "the API server back: synced is 1 again",
                f"{time.monotonic() - back_at:.1f}s after it came back")
        for pod, want, tag in ((new, kt.expected(new), "after-new"),
                               (known, kt.expected(known2), "after-known")):
            msgs = [f"{tag} {j}" for j in range(10)]
            ok, _ = arrives_within(cl, pod, msgs, 10)
            bad = with_meta(cl, msgs, want)
            c.check(ok and not bad, f"{tag}: the lines written then carry the metadata of "
                    "what changed during the outage",
                    f"{len(bad)} differ" + (": " + kt.show(cl.by_message()[bad[0]][0])
                                            if bad and bad[0] in cl.by_message() else ""))
        n = cl.metric("api_errors_total") - errors
        c.check(1 <= n <= 15, f"api_errors_total during {OUTAGE_S} s of outage: a few "
                "(backoff)",
                f"{n:.0f}")
        print(f"requests during the test: {api.requests('pods', 'list')} LISTs, "
              f"{api.requests('pods', 'watch')} WATCHes, lists_total "
              f"{cl.metric('lists_total')}")
        cl.finish(c)
    finally:
        cl.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
