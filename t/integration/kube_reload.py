#!/usr/bin/env python3
"""The kubernetes section changed by SIGHUP while the agent runs (the stand-in API server,
kube_apiserver.py; a file that stays open throughout):

on       the agent starts without the section (the file name's fields only); a reload that
         turns it on lists and watches the node's pods, and the lines written after it
         carry the pod's labels, in the same file;
changed  a reload with `labels: false` watches anew: the lines after it carry the pod's uid
         but no labels;
off      a reload that turns the section off: the lines after it carry the file name's
         fields only, and the agent asks the API server nothing more;
every line arrives once; the reloads are counted ok."""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kubetest as kt  # noqa: E402
import tailtest as tt  # noqa: E402


def reload(cl, c, what, **kw):
    """Rewrites the config, sends SIGHUP and waits until the reload is counted."""
    cl.config(**kw)
    before = tt.metric(tt.scrape(cl.port)[1], "logferry_config_reloads_total",
                       '{result="ok"}') or 0
    os.kill(cl.agent.pid, signal.SIGHUP)
    ok = tt.wait_for(lambda: (tt.metric(tt.scrape(cl.port)[1], "logferry_config_reloads_total",
                                        '{result="ok"}') or 0) > before, 10, 0.1)
    c.check(ok, f"{what}: the reload is applied")


def last(cl, text):
    return (cl.by_message().get(text) or [{}])[-1]


def main():
    c = tt.Checks()
    cl = kt.Cluster("kube-reload")
    try:
        pod = cl.web_pod("web-1", {"app": "web"})
        cl.write(pod, ["before 0"])
        cl.start(enabled=False)
        c.check(cl.wait_lines(["before 0"]), "off at start: the first line arrives")
        e = last(cl, "before 0")
        c.check("uid" not in e.get("kubernetes", {}).get("pod", {}),
                "off at start: the file name's fields only", kt.show(e))

        reload(cl, c, "on", enabled=True)
        c.check(cl.wait_synced(), "on: the agent lists and watches: synced is 1")
        cl.write(pod, ["on 0"])
        c.check(cl.wait_lines(["on 0"]), "on: the line arrives")
        e = last(cl, "on 0")
        k = e.get("kubernetes", {})
        c.check(k.get("labels") == {"app": "web"} and
                k.get("pod", {}).get("uid") == pod["metadata"]["uid"],
                "on: the same file's next line carries the pod's labels and uid", kt.show(e))

        lists = cl.metric("lists_total")
        reload(cl, c, "changed", kube=", labels: false")
        seen = cl.wait_metric("lists_total", lambda v: v > lists)
        c.check(seen is not None and seen > lists and cl.wait_synced(),
                "changed: a new LIST, synced again", f"lists_total {lists} -> {seen}")
        cl.write(pod, ["changed 0"])
        c.check(cl.wait_lines(["changed 0"]), "changed: the line arrives")
        e = last(cl, "changed 0")
        k = e.get("kubernetes", {})
        c.check("labels" not in k and k.get("pod", {}).get("uid") == pod["metadata"]["uid"],
                "changed: the next line has the uid and no labels", kt.show(e))

        reload(cl, c, "off", enabled=False)
        n_before = len(cl.api.request_log())
        cl.write(pod, ["off 0"])
        c.check(cl.wait_lines(["off 0"]), "off: the line arrives")
        e = last(cl, "off 0")
        c.check("uid" not in e.get("kubernetes", {}).get("pod", {}) and
                e.get("kubernetes", {}).get("pod", {}).get("name") == "web-1",
                "off: the next line carries the file name's fields only", kt.show(e))
        time.sleep(1.5)
        c.check(len(cl.api.request_log()) == n_before,
                "off: no request to the API server after it",
                f"{len(cl.api.request_log()) - n_before} more")
        cl.finish(c)
    finally:
        cl.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
