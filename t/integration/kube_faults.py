"""The watch through what an API server does to it, with the real binary and the stand-in
API server (kube_apiserver.py):
- 410 Expired: changes compacted away before an open watch sent them (an ERROR event in
  the stream), then again before a dropped watch came back (200, then the ERROR): each time
  a re-LIST, after which the changes show on the lines; none lost, none twice;
- the token rotated: the file rewritten and the server's token changed, streams dropped: the
  agent comes back with the new token; the server changing first (401 until the file is
  rewritten 1.5 s later): back within seconds, a bounded number of errors; no token logged;
- 403: a warning that names the RBAC the service account lacks; 500 twice: retried;
- requests taken and never answered for 4 s (timeout 1s): lines keep shipping, the watch is
  given up and made again, and the log says why.
Each change made meanwhile shows on the lines written after the agent is back; every line
arrives once."""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kube_apiserver as ka  # noqa: E402
import kubetest as kt  # noqa: E402
import tailtest as tt  # noqa: E402


class Step:
    """Writes 10 lines after each change to the pod and checks that they carry it."""

    def __init__(self, c, cl, pod):
        self.c = c
        self.cl = cl
        self.pod = pod
        self.n = 0

    def relabel(self, value):
        """The pod's label step=value, as the test changes it on the server."""
        return self.cl.api.modify_pod("shop", self.pod["metadata"]["name"],
                                      lambda p: p["metadata"]["labels"].update(step=value))

    def expect(self, pod, what, timeout=20):
        """Writes lines until one carries pod's metadata (the agent caught up); then 10 more,
        which must all carry it."""
        want = kt.expected(pod)
        t0 = time.monotonic()
        end = t0 + timeout
        caught = False
        while not caught and time.monotonic() < end:
            msg = f"{what} probe {self.n}"
            self.n += 1
            self.cl.write(self.pod, [msg])
            if self.cl.wait_lines([msg], 5):
                e = self.cl.by_message()[msg][0]
                caught = (e.get("kubernetes"), e.get("container")) == want
            time.sleep(0.2)
        caught_s = time.monotonic() - t0
        msgs = [f"{what} {i}" for i in range(10)]
        self.cl.write(self.pod, msgs)
        arrived = self.cl.wait_lines(msgs, 10)
        by = self.cl.by_message()
        bad = [m for m in msgs if m not in by or
               (by[m][0].get("kubernetes"), by[m][0].get("container")) != want]
        self.c.check(caught and arrived and not bad, f"{what}: the lines after it carry it",
                     f"caught up in {caught_s:.1f}s; " * caught +
                     f"{'' if caught else 'never caught up; '}{len(bad)} of 10 differ" +
                     (": " + kt.show(by[bad[0]][0]) if bad and bad[0] in by else ""))


def expiry(c, cl, step):
    api = cl.api
    lists = cl.metric("lists_total")
    with api.changes():  # the open watch has not sent these when they are compacted
        pod = step.relabel("compacted-open")
        other = api.add_pod(ka.make_pod("batch-0", "shop", labels={"app": "batch"}))
        api.compact()
    step.expect(pod, "410 on the open watch")
    c.check(cl.metric("lists_total") == lists + 1, "410 on the open watch: one re-LIST",
            f"lists_total {lists} -> {cl.metric('lists_total')}")
    cl.write(other, ["batch 0", "batch 1"])
    c.check(cl.wait_lines(["batch 0", "batch 1"]) and all(
        (e.get("kubernetes"), e.get("container")) == kt.expected(other)
        for e in cl.by_message()["batch 0"]), "a pod added before the compaction is known")
    with api.changes():  # the watch is dropped, and what it missed compacted before it is back
        api.drop_streams()
        pod = step.relabel("compacted-dropped")
        api.compact()
    step.expect(pod, "410 on the watch's return")
    c.check(cl.metric("lists_total") == lists + 2, "410 on the watch's return: one re-LIST",
            f"lists_total {cl.metric('lists_total')}")


def rotation(c, cl, step):
    api = cl.api
    errors = cl.metric("api_errors_total")
    tokens = []
    cl.write_token("T2-" + os.urandom(8).hex())
    tokens.append(cl.token)
    with api.changes():
        api.set_token(cl.token)
        pod = step.relabel("rotated")
        api.drop_streams()
        asked = len(api.request_log())
    step.expect(pod, "token rotated, file first")
    seen = {(code, auth) for verb, res, q, code, auth in api.request_log()[asked:]}
    c.check(seen == {(200, "Bearer " + cl.token)},
            "the requests after it bear the new token, and are answered",
            str({code for code, _ in seen}))
    c.check(cl.metric("api_errors_total") - errors <= 1,
            "a rotation the file announced costs at most one error",
            f"{cl.metric('api_errors_total') - errors:.0f}")
    errors = cl.metric("api_errors_total")
    t0 = time.monotonic()
    api.set_token("T3-" + os.urandom(8).hex())
    tokens.append(api.state.token)
    api.drop_streams()
    pod = step.relabel("rotated-late")
    time.sleep(1.5)
    cl.write_token(api.state.token)
    step.expect(pod, "token rotated, file 1.5 s late")
    back = time.monotonic() - t0
    n = cl.metric("api_errors_total") - errors
    c.check(back < 10 and 1 <= n <= 8, "the server's token first: 401s, back within seconds "
            "of the file's rewrite, errors bounded", f"back in {back:.1f}s, {n:.0f} errors")
    return tokens


def refusals(c, cl, step):
    api = cl.api
    errors = cl.metric("api_errors_total")
    api.fail_next(403)
    api.drop_streams()
    pod = step.relabel("after-403")
    step.expect(pod, "after a 403")
    err = cl.agent.stderr()
    line = next((ln for ln in err.splitlines() if "403" in ln), "")
    c.check("rbac" in line.lower(), "a 403 is warned about, naming RBAC", line[:300])
    api.fail_next(500, 2)
    api.drop_streams()
    pod = step.relabel("after-500")
    step.expect(pod, "after two 500s")
    n = cl.metric("api_errors_total") - errors
    c.check(3 <= n <= 5, "api_errors_total counts the 403 and the two 500s (and at most the "
            "two streams dropped)", f"{n:.0f}")


def hangs(c, cl, step):
    """The server takes requests and answers none for 4 s, kubernetes.timeout 1s."""
    api = cl.api
    with api.changes():
        api.hang(4)
        api.drop_streams()
        pod = step.relabel("after-hang")
    msgs = [f"during the hang {i}" for i in range(10)]
    t0 = time.monotonic()
    cl.write(step.pod, msgs)
    ok = cl.wait_lines(msgs, 5)
    c.check(ok and time.monotonic() - t0 < 3, "during the 4 s hang, lines keep shipping",
            f"{time.monotonic() - t0:.1f}s")
    c.check(cl.wait_metric("synced", lambda v: v == 0, 5) == 0,
            "a WATCH with no answer is given up after kubernetes.timeout: synced 0")
    step.expect(pod, "after a 4 s hang")
    line = next((ln for ln in cl.agent.stderr().splitlines() if "no answer" in ln), "")
    c.check(line, "the log says the API server did not answer", line[:200])


def run(c, phases, **kw):
    """One agent through phases (functions of c, cl, step), from a pod known at start; an
    agent per group, so that one group's backoff does not slow another's. Returns the
    tokens used and the agent's log."""
    cl = kt.Cluster("kube-faults")
    try:
        pod = cl.web_pod("web-7d4b9-ccccc", {"app": "web", "step": "0"})
        cl.start_synced(c, **kw)
        step = Step(c, cl, pod)
        step.expect(pod, "at start")
        tokens = [cl.token]
        for phase in phases:
            tokens += phase(c, cl, step) or []
        return tokens, cl.finish(c)
    finally:
        cl.cleanup()


def main():
    c = tt.Checks()
    # the refusals and the hang in threads of their own beside the rest
    others = [(tt.Checks(), (refusals,), ""), (tt.Checks(), (hangs,), ", timeout: 1s")]
    threads = [threading.Thread(target=run, args=(c2, phases), kwargs={"kube": kube})
               for c2, phases, kube in others]
    for t in threads:
        t.start()
    try:
        tokens, err = run(c, (expiry, rotation))
        c.check(not any(t in err for t in tokens), "no token is ever logged")
    finally:
        for t in threads:
            t.join()
    for c2, _, _ in others:
        c.passed += c2.passed
        c.failed += c2.failed
    c.finish()


if __name__ == "__main__":
    main()
