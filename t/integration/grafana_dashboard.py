#!/usr/bin/env python3
"""packaging/grafana/logferry.json against the real thing: the agent runs with its metrics
on 127.0.0.1, on a file that grows all along, and a real Prometheus scrapes it every
second. The dashboard parses, its panels have unique ids, a data source and targets; every
metric name it uses is one the agent's /metrics serves, and it covers the metrics of each
subject (events in and out, lag, queue and spool, retries and dead letters, latency,
reloads, journal cursors); its job and instance variables list the agent's labels. Then,
for every panel's target, the expression with Grafana's variables filled in as Grafana
would (the variables' values, $__rate_interval as four scrape intervals, $__range) is
sent to Prometheus's /api/v1/query: it parses and returns a non-empty result of numbers
(no NaN: the latency quantiles see acknowledged batches); the events read and
acknowledged are above zero."""
import json
import math
import os
import re
import shutil
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import promtest as pt  # noqa: E402
import tailtest as tt  # noqa: E402

SRC = os.environ.get("LF_SRCDIR", ".")
DASHBOARD = os.path.join(SRC, "packaging", "grafana", "logferry.json")
# Each subject of the dashboard and a metric that must be behind it.
SUBJECTS = {"events in": "logferry_events_read_total",
            "events out": "logferry_events_acked_total",
            "lag": "logferry_harvester_lag_bytes",
            "queue": "logferry_queue_bytes", "spool": "logferry_spool_bytes",
            "retries": "logferry_output_retries_total",
            "dead letters": "logferry_dead_letter_events_total",
            "latency": "logferry_output_latency_seconds_bucket",
            "reloads": "logferry_config_reloads_total",
            "journal cursors": "logferry_journal_cursor_lost_total"}
RATE_INTERVAL = "4s"   # Grafana's $__rate_interval at a 1 s scrape: 4 scrape intervals
RANGE = "30s"          # the time range shown


def panels_of(dash):
    """Every panel, those inside rows included."""
    out = []
    for p in dash.get("panels", []):
        out.append(p)
        out += p.get("panels", [])
    return out


def fill(expr, values):
    """expr with Grafana's variables replaced; longest names first ($__range_s before
    $__range)."""
    for name in sorted(values, key=len, reverse=True):
        expr = expr.replace("${%s}" % name, values[name]).replace("$" + name, values[name])
    return expr


class Writer(threading.Thread):
    """Appends a line to the log every 20 ms until stopped: events keep flowing."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path = path
        self.done = threading.Event()

    def run(self):
        i = 0
        with open(self.path, "a") as f:
            while not self.done.is_set():
                f.write(f"line {i} of a growing log\n")
                f.flush()
                i += 1
                time.sleep(0.02)


def check_static(c, dash, body):
    panels = [p for p in panels_of(dash) if p.get("type") != "row"]
    ids = [p.get("id") for p in panels_of(dash)]
    c.check(len(ids) == len(set(ids)) and None not in ids, "the panels' ids are unique",
            repr(ids))
    bad = [p.get("title") for p in panels if not p.get("targets") or
           p.get("datasource", {}).get("uid") != "${datasource}"]
    c.check(panels and not bad, f"{len(panels)} panels, each with targets on the data source "
            "variable", repr(bad))
    exprs = [t["expr"] for p in panels for t in p["targets"]]
    served = set(re.findall(r"^(logferry_[a-z_]+)[{ ]", body, re.M))
    used = set(re.findall(r"\blogferry_[a-z_]+", " ".join(exprs)))
    c.check(used and used <= served, "every metric the dashboard uses is served by /metrics",
            f"not served: {sorted(used - served)}")
    missing = [s for s, m in SUBJECTS.items() if m not in used]
    c.check(not missing, "the dashboard covers " + ", ".join(SUBJECTS), f"missing {missing}")
    return [(p["title"], t["refId"], t["expr"]) for p in panels for t in p["targets"]]


def variable_values(c, dash, prom):
    """The values Grafana would give $job and $instance, from the variables' own
    label_values() queries answered by Prometheus's label API."""
    values = {}
    for v in dash["templating"]["list"]:
        if v["type"] != "query":
            continue
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.fullmatch(r"label_values\((.+), *(\w+)\)", q)
        match = fill(m.group(1), values) if m else ""
        got = prom.get(f"/label/{m.group(2)}/values", **{"match[]": match}) if m else {}
        vals = got.get("data") or []
        c.check(len(vals) == 1, f"variable {v['name']}: {q} lists the agent's label", repr(got))
        values[v["name"]] = re.escape(vals[0]).replace("\\", "\\\\") if vals else ""
    return values


def check_queries(c, targets, values, prom):
    values = dict(values, __rate_interval=RATE_INTERVAL, __range=RANGE, datasource="")
    for title, ref, expr in targets:
        q = fill(expr, values)
        seen = [None]

        def answered():
            try:
                seen[0] = prom.get("/query", query=q)
            except (OSError, ValueError) as e:
                seen[0] = {"error": str(e)}
                return False
            res = seen[0].get("data", {}).get("result", [])
            return seen[0].get("status") == "success" and res and \
                all(not math.isnan(float(r["value"][1])) for r in res)
        ok = tt.wait_for(answered, 15, step=0.5)
        res = (seen[0] or {}).get("data", {}).get("result", [])
        c.check(ok and "$" not in q, f"{title} [{ref}]: the query parses and returns "
                f"{len(res)} series of numbers", "" if ok else f"{q}: {json.dumps(seen[0])[:400]}")
        if ok and re.search(r"logferry_events_(read|acked)_total", expr):
            v = [float(r["value"][1]) for r in res]
            c.check(min(v) > 0, f"{title}: events flow ({v})")


def main():
    if shutil.which("prometheus") is None:
        sys.exit("FAIL: prometheus is missing (Debian package prometheus: "
                 "./bootstrap.sh deps --all)")
    c = tt.Checks()
    with open(DASHBOARD) as f:
        dash = json.load(f)
    wd = tt.Workdir("grafana")
    log = wd.path("app.log")
    open(log, "w").close()
    config = tt.write_config(wd, [{"id": "app", "paths": [log]}])
    with open(config) as f:
        text = f.read().replace('metrics: {listen: ""}', 'metrics: {listen: "127.0.0.1:0"}')
    with open(config, "w") as f:
        f.write(text)
    writer = Writer(log)
    writer.start()
    agent = tt.Agent(config, wd, "agent")
    port = tt.metrics_port(agent, 15)
    c.check(port is not None, "the agent serves /metrics", f"port {port}")
    _, body = tt.scrape(port) if port else (None, "")
    targets = check_static(c, dash, body or "")

    t0 = time.monotonic()
    prom = pt.Prometheus(wd.root, [f"127.0.0.1:{port}"])
    try:
        c.check(tt.wait_for(prom.targets_up, 30, step=0.5),
                "Prometheus scrapes the agent: target up")

        def scrapes():   # enough samples for a rate over $__rate_interval
            try:
                r = prom.get("/query", query="count_over_time(up[%s])" % RATE_INTERVAL)
                return int(r["data"]["result"][0]["value"][1]) >= 3
            except (OSError, ValueError, KeyError, IndexError):
                return False
        c.check(tt.wait_for(scrapes, 20, step=0.5), "Prometheus holds 3 scrapes or more")
        values = variable_values(c, dash, prom)
        check_queries(c, targets, values, prom)
        print(f"queries answered {time.monotonic() - t0:.1f} s after Prometheus started")
    finally:
        prom.stop()
        writer.done.set()
        writer.join()
    rc = agent.stop()
    c.check(rc == 0, "the agent exits 0 on SIGTERM", f"rc={rc}")
    wd.cleanup()
    return c.finish()


if __name__ == "__main__":
    main()
