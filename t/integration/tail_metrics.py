#!/usr/bin/env python3
"""The daemon's /metrics and /healthz: every family of the contract with its # TYPE line
from start-up, per-input and per-output counters that match what was read and delivered,
and a SIGHUP counted as a reload that succeeded."""
import os
import re
import signal
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402

FAMILIES = {
    "logferry_events_read_total": "counter", "logferry_bytes_read_total": "counter",
    "logferry_events_filtered_total": "counter", "logferry_lines_truncated_total": "counter",
    "logferry_encoding_errors_total": "counter", "logferry_files_open": "gauge",
    "logferry_events_acked_total": "counter", "logferry_output_errors_total": "counter",
    "logferry_output_retries_total": "counter", "logferry_queue_bytes": "gauge",
    "logferry_spool_bytes": "gauge", "logferry_registry_flushes_total": "counter",
    "logferry_config_reloads_total": "counter", "logferry_dead_letter_events_total": "counter",
}


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def sample(body, name, labels=""):
    m = re.search(r"^%s%s (\d+)$" % (re.escape(name), re.escape(labels)), body, re.M)
    return int(m.group(1)) if m else None


def main():
    c = tt.Checks()
    wd = tt.Workdir("metrics")
    log = wd.path("app.log")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    with open(log, "wb") as f:
        f.write(b"one\nDBG two\nthree \xff\n" + b"x" * 100 + b"\n")
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")],
                                   "max_line_bytes": 50,
                                   "parsers": "\n      - exclude_lines: ['^DBG']"}])
    with open(config) as f:
        text = f.read().replace('metrics: {listen: ""}', 'metrics: {listen: "127.0.0.1:0"}')
    with open(config, "w") as f:
        f.write(text)
    agent = tt.Agent(config, wd, "metrics")
    port = [None]

    def find_port():
        m = re.search(r"metrics on http://127\.0\.0\.1:(\d+)/metrics", agent.stderr())
        port[0] = int(m.group(1)) if m else None
        return port[0]
    c.check(tt.wait_for(find_port, 10), "the daemon logs where /metrics is served",
            f"port {port[0]}")
    base = f"http://127.0.0.1:{port[0]}"
    tt.wait_events(wd.out, 3, 30)
    # Acknowledged and flushed to the registry.
    tt.wait_metric(port[0], "logferry_events_acked_total", '{output="local"}', lambda v: v >= 3)
    tt.wait_registry_offset(wd.data, log, os.path.getsize(log), 30)
    status, body = get(base + "/metrics")
    c.check(status == 200, "GET /metrics answers 200", str(status))
    missing = [n for n, t in FAMILIES.items() if f"# TYPE {n} {t}" not in body]
    c.check(not missing, "every family of the contract has its # TYPE line", repr(missing))
    lab = '{input="app"}'
    size = os.path.getsize(log)
    want = {("logferry_events_read_total", lab): 4,  # read = filtered + delivered
            ("logferry_events_filtered_total", lab): 1,
            ("logferry_bytes_read_total", lab): size,
            ("logferry_lines_truncated_total", lab): 1,
            ("logferry_encoding_errors_total", lab): 1,
            ("logferry_files_open", lab): 1,
            ("logferry_events_acked_total", '{output="local"}'): 3,
            ("logferry_output_errors_total", '{output="local"}'): 0,
            ("logferry_queue_bytes", ""): 0,
            ("logferry_spool_bytes", ""): 0}
    got = {k: sample(body, *k) for k in want}
    c.check(got == want, "counters match what was read and delivered",
            "; ".join(f"{k[0]}{k[1]}={got[k]} (want {v})" for k, v in want.items()))
    flushes = sample(body, "logferry_registry_flushes_total")
    c.check(flushes is not None and flushes > 0, "registry flushes are counted", str(flushes))
    status, hbody = get(base + "/healthz")
    c.check(status == 200, "GET /healthz is 200 while outputs deliver", f"{status} {hbody!r}")
    os.kill(agent.pid, signal.SIGHUP)
    tt.wait_metric(port[0], "logferry_config_reloads_total", '{result="ok"}', lambda v: v >= 1)
    _, body = get(base + "/metrics")
    counts = [sample(body, "logferry_config_reloads_total", '{result="ok"}'),
              sample(body, "logferry_config_reloads_total", '{result="error"}')]
    c.check(counts == [1, 0], "a SIGHUP with the same file is counted as a reload that succeeded",
            f"ok={counts[0]} error={counts[1]}")
    status, _ = get(base + "/nope")
    c.check(status == 404, "an unknown path is 404", str(status))
    rc = agent.stop()
    c.check(rc == 0, "SIGTERM exits 0 with the endpoint open", f"rc={rc}")
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
