#!/usr/bin/env python3
"""The metrics, checked by Prometheus itself: `promtool check metrics` accepts the agent's
/metrics text, the alert rules in packaging/prometheus pass `promtool check rules` and their
unit tests, and a real Prometheus on 127.0.0.1 scrapes the agent: the target is up and
logferry_events_acked_total, read through Prometheus's HTTP API, equals the events the file
output holds. Exits 77 when the Debian package prometheus is missing."""
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import promtest as pt  # noqa: E402
import tailtest as tt  # noqa: E402

SRCDIR = os.environ.get("LF_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
RULES = os.path.join(SRCDIR, "packaging", "prometheus")


def get(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def main():
    if shutil.which("promtool") is None or shutil.which("prometheus") is None:
        print("SKIP: promtool/prometheus not installed (Debian package prometheus)")
        sys.exit(77)
    c = tt.Checks()
    r = subprocess.run(["promtool", "check", "rules", os.path.join(RULES, "logferry-rules.yml")],
                       capture_output=True, text=True)
    c.check(r.returncode == 0 and "SUCCESS: 7 rules found" in r.stdout,
            "promtool check rules accepts the alert rules", (r.stdout + r.stderr).strip())
    r = subprocess.run(["promtool", "test", "rules", "logferry-rules.test.yml"], cwd=RULES,
                       capture_output=True, text=True)
    c.check(r.returncode == 0, "the alert rules' unit tests pass", (r.stdout + r.stderr)[-400:])

    wd = tt.Workdir("prom")
    log = wd.path("app.log")
    lines = [f"line {i}" for i in range(500)]
    with open(log, "w") as f:
        f.write("".join(line + "\n" for line in lines))
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}])
    with open(config) as f:
        text = f.read().replace('metrics: {listen: ""}', 'metrics: {listen: "127.0.0.1:0"}')
    with open(config, "w") as f:
        f.write(text)
    agent = tt.Agent(config, wd, "agent")
    port = [None]

    def find_port():
        m = re.search(r"metrics on http://127\.0\.0\.1:(\d+)/metrics", agent.stderr())
        port[0] = int(m.group(1)) if m else None
        return port[0]
    c.check(tt.wait_for(find_port, 15), "the agent serves /metrics", f"port {port[0]}")
    tt.wait_events(wd.out, len(lines), 15)
    body = get(f"http://127.0.0.1:{port[0]}/metrics")
    r = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True,
                       text=True)
    c.check(r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(),
            "promtool check metrics finds no problem in /metrics",
            (r.stdout + r.stderr).strip()[:400])

    version = subprocess.run([tt.LOGFERRY, "--version"], capture_output=True,
                             text=True).stdout.splitlines()[0].split()[-1]

    def sample(name, labels=""):
        m = re.search(r"^%s%s (\S+)$" % (re.escape(name), re.escape(labels)), body, re.M)
        return float(m.group(1)) if m else None
    body = ""

    def settled():
        nonlocal body
        body = get(f"http://127.0.0.1:{port[0]}/metrics")
        return sample("logferry_registry_entries") == 1
    tt.wait_for(settled, 10)
    want = {("logferry_build_info", '{version="%s"}' % version): 1,
            ("logferry_registry_entries", ""): 1,
            ("logferry_harvester_lag_bytes", '{input="app"}'): 0}
    got = {k: sample(*k) for k in want}
    c.check(got == want, "build_info, registry_entries and harvester_lag_bytes are right",
            repr(got))
    count = sample("logferry_output_latency_seconds_count", '{output="local"}')
    inf = sample("logferry_output_latency_seconds_bucket", '{output="local",le="+Inf"}')
    total = sample("logferry_output_latency_seconds_sum", '{output="local"}')
    buckets = [float(v) for v in re.findall(
        r'^logferry_output_latency_seconds_bucket\{output="local",le="[^"]+"\} (\S+)$', body,
        re.M)]
    c.check(count is not None and count >= 1 and inf == count and total > 0 and
            buckets == sorted(buckets) and len(buckets) == 15,
            "the latency histogram counts every acknowledged batch, cumulatively",
            f"count {count}, +Inf {inf}, sum {total}, buckets {buckets}")

    # A real Prometheus with its own config and data directory, on loopback only.
    prom = pt.Prometheus(wd.root, [f"127.0.0.1:{port[0]}"],
                         rule_files=[os.path.join(RULES, "logferry-rules.yml")])
    api = prom.api
    try:
        c.check(tt.wait_for(prom.targets_up, 60, step=0.5),
                "Prometheus scrapes the agent: target up")
        expected = tt.count_lines(wd.out)
        query = 'logferry_events_acked_total{output="local"}'

        def acked():
            try:
                q = json.loads(get(api + "/query?query=" + urllib.parse.quote(query)))
                res = q["data"]["result"]
                return int(float(res[0]["value"][1])) if res else None
            except (OSError, KeyError, ValueError):
                return None
        got = [None]

        def matches():
            got[0] = acked()
            return got[0] == expected
        c.check(tt.wait_for(matches, 30, step=0.5),
                "logferry_events_acked_total in Prometheus equals the events in the output",
                f"Prometheus {got[0]}, output {expected}")
        rules = json.loads(get(api + "/rules"))
        names = sorted(r["name"] for g in rules["data"]["groups"] for r in g["rules"])
        c.check(len(names) == 7 and "LogferryOutputFailing" in names,
                "Prometheus loaded the alert rules", repr(names))
    finally:
        prom.stop()
    rc = agent.stop()
    c.check(rc == 0, "the agent exits 0 on SIGTERM", f"rc={rc}")
    wd.cleanup()
    return c.finish()


if __name__ == "__main__":
    main()
