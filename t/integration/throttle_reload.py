#!/usr/bin/env python3
"""The throttle and sample stages in the daemon (docs/processing.md "Throttling and
sampling"), with its metrics and SIGHUP reloads:
- logferry_events_throttled_total and logferry_events_sampled_out_total are exported from
  start-up at zero for every input, with their # TYPE lines, and never carry a key label;
- a chatty pod is held to its burst while a quiet one passes; the counters match what was
  dropped exactly (throttled is part of filtered: read = filtered + delivered) and the
  registry reaches the file's end;
- a reload that leaves the input unchanged keeps its buckets (the chatty pod stays empty);
- a reload that changes the throttle gives fresh, full buckets (the new burst is kept);
- a sample stage without a key keeps 1 in N of each file."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reloadtest as rt  # noqa: E402
import tailtest as tt  # noqa: E402


def append(path, pod, first, n):
    with open(path, "a") as f:
        for i in range(first, first + n):
            f.write(f'{{"pod":"{pod}","n":{i}}}\n')


def config(wd, burst):
    pods = ("pods", [wd.path("pods.log")],
            {"parsers": f"[{{ndjson: {{}}}}, {{throttle: {{rate: 1/h, burst: {burst}, "
                        "key: '%{pod}'}}]"})
    every = ("every", [wd.path("every.log")], {"parsers": "[{sample: {rate: 4}}]"})
    return rt.config_text(wd, [pods, every], [("local", rt.file_output(wd.out))])


def counts(rig, iid):
    body = rig.metrics()
    lab = f'{{input="{iid}"}}'
    return tuple(rt.sample(body, f"logferry_{m}", lab)
                 for m in ("events_read_total", "events_filtered_total",
                           "events_throttled_total", "events_sampled_out_total"))


def kept(wd, pod):
    return sorted(e["n"] for e in tt.read_events(wd.out) if e.get("pod") == pod)


def main():
    c = tt.Checks()
    wd = tt.Workdir("throttle-reload")
    pods = wd.path("pods.log")
    every = wd.path("every.log")
    open(pods, "w").close()
    open(every, "w").close()
    rig = rt.Rig(wd, config(wd, 10))
    try:
        body = rig.metrics()
        for m in ("logferry_events_throttled_total", "logferry_events_sampled_out_total"):
            c.check(f"# TYPE {m} counter" in body and rt.sample(body, m, '{input="pods"}') == 0
                    and rt.sample(body, m, '{input="every"}') == 0,
                    f"{m} is exported at zero for every input from start-up")
        append(pods, "web", 0, 50)
        append(pods, "db", 0, 5)
        end = os.path.getsize(pods)
        tt.wait_registry_offset(wd.data, pods, end)
        tt.wait_for(lambda: counts(rig, "pods")[0] == 55, 10)
        c.check(kept(wd, "web") == list(range(10)) and kept(wd, "db") == list(range(5)),
                "the chatty pod is held to its burst (10 of 50), the quiet one passes (5 of 5)",
                f"web {kept(wd, 'web')} db {kept(wd, 'db')}")
        c.check(counts(rig, "pods") == (55, 40, 40, 0),
                "read 55, filtered 40, throttled 40, sampled out 0", str(counts(rig, "pods")))
        body = rig.metrics()
        labelled = [ln for ln in body.splitlines()
                    if ln.startswith("logferry_events_throttled_total{")]
        c.check(all(ln.startswith('logferry_events_throttled_total{input="') and ln.count("=") == 1
                    for ln in labelled), "the throttled counter has the input label only",
                str(labelled))
        c.check(tt.registry_offset(wd.data, pods) == end,
                "the registry reaches the file's end: the dropped events were acknowledged")

        (ok, bad), _ = rig.reload()
        c.check(ok == 1 and bad == 0, "a SIGHUP with the same file reloads", f"{ok}/{bad}")
        append(pods, "web", 50, 5)
        end = os.path.getsize(pods)
        tt.wait_registry_offset(wd.data, pods, end)
        tt.wait_for(lambda: counts(rig, "pods")[0] == 60, 10)
        c.check(kept(wd, "web") == list(range(10)),
                "an unchanged input keeps its buckets across a reload (the chatty pod stays "
                "empty)", str(kept(wd, "web")))

        rig.write(config(wd, 20))
        (ok, bad), _ = rig.reload()
        c.check(ok == 2 and bad == 0, "a SIGHUP with a new burst reloads", f"{ok}/{bad}")
        append(pods, "web", 55, 30)
        end = os.path.getsize(pods)
        tt.wait_registry_offset(wd.data, pods, end)
        tt.wait_for(lambda: len(kept(wd, "web")) >= 30, 10)
        c.check(kept(wd, "web") == list(range(10)) + list(range(55, 75)),
                "a changed throttle starts with fresh, full buckets (20 more of 30)",
                str(kept(wd, "web")))
        tt.wait_for(lambda: counts(rig, "pods")[0] == 90, 10)
        c.check(counts(rig, "pods") == (90, 55, 55, 0),
                "the counters go on across reloads: read 90, filtered 55 (40 + 5 + 10), "
                "throttled 55",
                str(counts(rig, "pods")))

        with open(every, "a") as f:
            f.write("".join(f"line {i}\n" for i in range(40)))
        tt.wait_registry_offset(wd.data, every, os.path.getsize(every))
        tt.wait_for(lambda: counts(rig, "every")[0] == 40, 10)
        got = sorted(int(e["message"].split()[1]) for e in tt.read_events(wd.out)
                     if e["message"].startswith("line "))
        c.check(got == list(range(0, 40, 4)), "sample without a key keeps the 1st, 5th, 9th ... "
                "line of the file", str(got))
        c.check(counts(rig, "every") == (40, 30, 0, 30),
                "read 40, filtered 30, sampled out 30", str(counts(rig, "every")))
        tt.check_no_error_logged(c, rig.agent.stderr())
    finally:
        rc = rig.stop()
        c.check(rc == 0, "SIGTERM exits 0", f"rc={rc}")
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
