"""Pods that change while the agent runs, through the real binary and the stand-in API server
(kube_apiserver.py), kubernetes.wait 2s and delete_grace 5s:
- a file there before the agent starts: its first events have the pod's metadata;
- a label changed (MODIFIED): the lines written after it carry the new value, those before
  the old one;
- a deleted pod (DELETED): the lines written within delete_grace still carry its metadata,
  those written after it and the sweep do not;
- a pod whose file came first and whose ADDED follows 0.5 s later: its first event already
  has the labels, and nothing counts as a miss;
- a file whose pod never appears: it waits about 2 s, then ships without the metadata, and
  logferry_kubernetes_metadata_misses_total is 1.
Every line arrives once; one LIST and one WATCH for all of it."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kube_apiserver as ka  # noqa: E402
import kubetest as kt  # noqa: E402
import tailtest as tt  # noqa: E402


def lines(tag, a, b):
    return [f"{tag} {i}" for i in range(a, b)]


def meta_of(cl, msgs):
    """message -> (kubernetes, container) of the event carrying it (the first one)."""
    by = cl.by_message()
    return {m: (by[m][0].get("kubernetes"), by[m][0].get("container")) for m in msgs if m in by}


def check_meta(c, cl, pod, msgs, want, name):
    got = meta_of(cl, msgs)
    bad = [m for m in msgs if got.get(m) != want]
    return c.check(not bad, name, f"{len(bad)} of {len(msgs)} differ; first {bad[0]!r}: "
                   + str(got.get(bad[0]))[:400] + f"\n  want {want}" if bad else "")


def main():
    c = tt.Checks()
    cl = kt.Cluster("kube-changes")
    try:
        api = cl.api
        api.add_namespace(ka.make_namespace("shop"))
        mod, dele = api.add_pods([
            ka.make_pod("web-7d4b9-aaaaa", "shop", labels={"app": "web", "tier": "silver",
                                                            "pod-template-hash": "7d4b9"},
                        owner=("ReplicaSet", "web-7d4b9")),
            ka.make_pod("job-1-bbbbb", "shop", labels={"app": "job"}, owner=("Job", "job-1"),
                        ip="10.1.2.9")])
        cl.write(mod, lines("mod", 0, 20))  # there before the agent starts
        cl.start_synced(c)
        cl.write(dele, lines("del", 0, 20))
        c.check(cl.wait_lines(lines("mod", 0, 20) + lines("del", 0, 20)), "first lines arrive")

        # DELETED: the pod's last lines, within delete_grace, keep its metadata
        api.delete_pod("shop", "job-1-bbbbb")
        deleted_at = time.monotonic()
        c.check(cl.wait_metric("watch_events_total", lambda v: v >= 1) == 1,
                "the DELETED is applied (watch_events_total 1)")
        cl.write(dele, lines("del", 20, 40))

        # MODIFIED: a label changes
        modded = api.modify_pod("shop", "web-7d4b9-aaaaa",
                                lambda p: p["metadata"]["labels"].update(tier="gold"))
        c.check(cl.wait_metric("watch_events_total", lambda v: v >= 2) == 2,
                "the MODIFIED is applied (watch_events_total 2)")
        cl.write(mod, lines("mod", 20, 40))

        # a file first, its pod's ADDED 0.5 s later
        late = ka.make_pod("late-0", "shop", labels={"app": "late"},
                           owner=("StatefulSet", "late"))
        t0 = time.monotonic()
        cl.write(late, lines("late", 0, 20))
        time.sleep(0.5)
        late = api.add_pod(late)
        # a file whose pod never appears
        never = ka.make_pod("ghost-0", "shop", labels={"app": "ghost"})
        t1 = time.monotonic()
        cl.write(never, lines("ghost", 0, 20))
        c.check(cl.wait_lines(lines("late", 0, 20)), "the late pod's lines arrive",
                f"after {time.monotonic() - t0:.1f}s")
        c.check(cl.wait_lines(lines("ghost", 0, 20)), "the unknown pod's lines arrive")
        ghost_s = time.monotonic() - t1
        c.check(1.5 <= ghost_s <= 6, "the unknown pod's file waits about kubernetes.wait (2s)",
                f"{ghost_s:.1f}s")
        c.check(cl.wait_lines(lines("mod", 20, 40) + lines("del", 20, 40)),
                "the lines after MODIFIED and DELETED arrive")

        check_meta(c, cl, mod, lines("mod", 0, 20), kt.expected(mod),
                   "a file there at start, lines before the MODIFIED: metadata, tier=silver")
        check_meta(c, cl, mod, lines("mod", 20, 40), kt.expected(modded),
                   "lines after the MODIFIED carry tier=gold")
        check_meta(c, cl, dele, lines("del", 20, 40), kt.expected(dele),
                   "a deleted pod's lines within delete_grace carry its metadata")
        check_meta(c, cl, late, lines("late", 0, 20), kt.expected(late),
                   "a pod ADDED 0.5 s after its file: the first event has the labels")
        check_meta(c, cl, never, lines("ghost", 0, 20), kt.expected(never, with_meta=False),
                   "a pod never seen: its lines ship with the file name's fields only")
        misses = cl.wait_metric("metadata_misses_total", lambda v: v >= 1, 5)
        c.check(misses == 1, "logferry_kubernetes_metadata_misses_total is 1", str(misses))

        # past delete_grace (5s) and a sweep: the deleted pod is gone from the cache
        gone = cl.wait_metric("pods", lambda v: v == 2, deleted_at + 9 - time.monotonic())
        c.check(gone == 2, "the deleted pod leaves the cache after delete_grace",
                f"pods {gone} {time.monotonic() - deleted_at:.1f}s after the DELETED")
        cl.write(dele, lines("del", 40, 50))
        c.check(cl.wait_lines(lines("del", 40, 50)), "lines after that arrive")
        check_meta(c, cl, dele, lines("del", 40, 50), kt.expected(dele, with_meta=False),
                   "a deleted pod's lines after delete_grace: the file name's fields only")
        reqs = kt.wait_requests(api, 3)
        c.check(reqs == (1, 1), "1 LIST and 1 WATCH of pods for all of it", str(reqs))
        tt.check_no_error_logged(c, cl.finish(c))
    finally:
        cl.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
