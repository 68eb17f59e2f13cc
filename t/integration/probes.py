#!/usr/bin/env python3
"""The daemon's probes and /status (docs/metrics.md "Probes"):

  stuck      a thread blocked for real is named by /healthz: the console output writes
             into a pipe nobody reads, its lane thread blocks in write(2) once the pipe is
             full; with metrics.stuck_after 2s /healthz answers 503 "output local thread
             stuck for N s" (local: the output's name); once the pipe is read it answers 200 "ok" again, and every line
             arrived once, in order
  readyz     /readyz is 200 "ready" while running, a reload of a broken config keeps it
             200; after SIGTERM, while the stop waits for an output that cannot write,
             it is 503 "stopping" (and /healthz stays 200)
  status     /status is JSON: the input with its file (size, read and acknowledged
             offsets, bytes not acknowledged), the output "retrying" since a time
             with its last error while it cannot write, then "delivering" with every event
             acknowledged; queue bytes; the config generation and the last reload's result
  status_cli `logferry status` prints the running agent's /status as a table (the file's
             row: path, size, read, acknowledged, lag; the output's row); with no agent
             answering, `logferry --status` prints the registry's row for the file (its
             size now, the acknowledged offset, the bytes after it)"""
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402


def metrics_base(c, a, tag):
    line = a.wait_log("metrics on http://", 30) or ""
    m = re.search(r"http://127\.0\.0\.1:(\d+)/metrics", line)
    c.check(m is not None, f"{tag}: the log says where metrics are served", line)
    return f"http://127.0.0.1:{m.group(1)}" if m else None


def case_stuck(c):
    wd = tt.Workdir("stuck")
    log = wd.path("app.log")
    expected = [f"line {i:05d} " + "s" * 200 for i in range(2000)]  # ~420 KiB: fills a pipe
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}],
                             extra='metrics: {listen: "127.0.0.1:0", stuck_after: 2s}')
    tt.edit_config(config, 'metrics: {listen: ""}\n', "")
    tt.edit_config(config, "    type: file", "    type: console\n    format: text")
    tt.edit_config(config, f"    path: {tt.yaml_str(wd.out)}\n    compression: none\n", "")
    r, w = os.pipe()
    a = tt.PipedAgent(config, wd, "stuck", stdout=w)
    os.close(w)
    base = metrics_base(c, a, "stuck")
    if base is None:
        a.stop()
        return
    st, body = tt.http_get(base + "/healthz")
    c.check((st, body) == (200, "ok\n"), "stuck: 200 ok before the pipe fills", f"{st} {body!r}")
    with open(log, "w") as f:
        f.write("".join(x + "\n" for x in expected))
    t0 = time.monotonic()
    got = [None, None]

    def stuck():
        got[0], got[1] = tt.http_get(base + "/healthz")
        return got[0] == 503
    bad = tt.wait_for(stuck, 30, 0.5)
    took = time.monotonic() - t0
    m = re.fullmatch(r"output local thread stuck for (\d+) s\n", got[1] or "")
    c.check(bad and m is not None and int(m.group(1)) >= 2,
            "stuck: /healthz is 503 naming the blocked output thread and for how long",
            f"{got[0]} {got[1]!r} after {took:.1f} s")
    st, body = tt.http_get(base + "/readyz")
    c.check(st == 200, "stuck: /readyz is not about liveness: still 200", f"{st} {body!r}")
    data = []

    def drain():
        while True:
            chunk = os.read(r, 1 << 16)
            if not chunk:
                return
            data.append(chunk)
    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    good = tt.wait_for(lambda: tt.http_get(base + "/healthz") == (200, "ok\n"), 20, 0.2)
    c.check(good, "stuck: 200 ok again once the pipe is read")
    tt.wait_for(lambda: sum(len(x) for x in data) >= sum(len(x) + 1 for x in expected), 30, 0.1)
    c.check(a.stop() == 0, "stuck: SIGTERM exits 0", f"rc={a.rc}")
    reader.join(10)
    os.close(r)
    lines = b"".join(data).decode().splitlines()
    c.check(lines == expected, "stuck: every line once, in order", f"{len(lines)} lines")
    wd.cleanup()


def case_readyz_status(c):
    wd = tt.Workdir("readyz")
    log = wd.path("app.log")
    first = [f"first {i:03d}" for i in range(50)]
    with open(log, "w") as f:
        f.write("".join(x + "\n" for x in first))
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}],
                             shutdown_timeout="6s")
    port = tt.free_port()  # a fixed port: `logferry status` finds the agent through the config
    tt.edit_config(config, 'metrics: {listen: ""}', f'metrics: {{listen: "127.0.0.1:{port}"}}')
    a = tt.PipedAgent(config, wd, "readyz")
    base = metrics_base(c, a, "readyz")
    if base is None:
        a.stop()
        return
    ok = tt.wait_for(lambda: tt.http_get(base + "/readyz") == (200, "ready\n"), 10, 0.1)
    c.check(ok, "readyz: 200 ready once started", str(tt.http_get(base + "/readyz")))
    c.check(tt.wait_events(wd.out, 50, 20) == 50, "readyz: the first lines are delivered")

    def status():
        st, body = tt.http_get(base + "/status")
        return json.loads(body) if st == 200 else {"status": st, "body": body}
    # The files' offsets are refreshed at each registry turn (registry.flush_interval 200ms).
    tt.wait_for(lambda: status()["inputs"][0]["files"][0]["acknowledged"] ==
                os.path.getsize(log), 5, 0.1)
    doc = status()
    out = (doc.get("outputs") or [{}])[0]
    inp = (doc.get("inputs") or [{}])[0]
    size = os.path.getsize(log)
    c.check(out.get("name") == "local" and out.get("state") == "delivering" and
            out.get("events_acked") == 50 and out.get("since") is None,
            "status: the output is delivering, 50 events acknowledged", json.dumps(out))
    c.check(inp.get("id") == "app" and inp.get("events") == 50 and inp.get("bytes") == size and
            inp.get("lag_bytes") == 0, f"status: the input read {size} bytes, 50 events, no lag",
            json.dumps({k: v for k, v in inp.items() if k != "files"}))
    c.check(inp.get("files") == [{"path": log, "size": size, "read": size, "acknowledged": size,
                                  "lag_bytes": 0}],
            "status: the input's file with its size, read and acknowledged offsets, no lag",
            json.dumps(inp.get("files")))
    c.check(doc.get("config", {}).get("generation") == 1 and
            doc["config"].get("last_reload") is None and doc.get("ready") is True,
            "status: config generation 1, no reload yet, ready", json.dumps(doc.get("config")))
    # `logferry status`: the same, as a table, from the running agent.
    run = subprocess.run([tt.LOGFERRY, "status", "-c", config], capture_output=True, text=True,
                         timeout=20)
    row = re.search(r"^app +(\S+) +(\d+) +(\d+) +(\d+) +(\d+)$", run.stdout, re.M)
    c.check(run.returncode == 0 and "ready, config " in run.stdout and row is not None and
            row.groups() == (log, str(size), str(size), str(size), "0") and
            re.search(r"^local +delivering +50 +0 +0$", run.stdout, re.M) is not None,
            "status_cli: `logferry status` prints the agent's file row and output row",
            f"rc={run.returncode} {run.stdout!r} {run.stderr!r}")
    # A broken config: the reload is refused, /readyz stays 200, /status says why.
    good_text = open(config).read()
    with open(config, "w") as f:
        f.write(good_text.replace("inputs:", "inputs: [", 1))
    os.kill(a.pid, signal.SIGHUP)
    a.wait_log("the running configuration stays", 20)
    st, body = tt.http_get(base + "/readyz")
    c.check((st, body) == (200, "ready\n"), "readyz: a broken reload keeps it 200", f"{st} {body!r}")
    last = status().get("config", {})
    c.check(last.get("generation") == 1 and (last.get("last_reload") or {}).get("result") ==
            "error" and last.get("reloads_error") == 1,
            "status: the refused reload is the last one, the generation stays 1", json.dumps(last))
    with open(config, "w") as f:
        f.write(good_text)
    os.kill(a.pid, signal.SIGHUP)
    tt.wait_for(lambda: status().get("config", {}).get("generation") == 2, 20, 0.2)
    last = status().get("config", {})
    c.check(last.get("generation") == 2 and (last.get("last_reload") or {}).get("result") == "ok",
            "status: a good reload makes generation 2, result ok", json.dumps(last))
    # The output cannot write: retrying with its last error; /healthz, /readyz stay 200.
    c.check(tt.set_rlimit_fsize(a.pid, 1) == 0, "status: prlimit lowered RLIMIT_FSIZE")
    t_fail = time.time()
    with open(log, "a") as f:
        f.write("".join(f"second {i:03d}\n" for i in range(30)))
    tt.wait_for(lambda: status()["outputs"][0]["state"] == "retrying", 20, 0.2)
    out = status()["outputs"][0]
    since = out.get("since") or ""
    sec = time.mktime(time.strptime(since[:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone \
        if since else 0
    c.check(out.get("state") == "retrying" and out.get("failed_attempts", 0) >= 1 and
            abs(sec - t_fail) < 10 and "File too large; batch will be retried" in
            (out.get("last_error") or ""),
            "status: the output is retrying since the failure, with its last error in the "
            "output's own words",
            json.dumps(out))
    c.check(status().get("queue_bytes", 0) > 0, "status: the unacknowledged batch is queued")
    grown = os.path.getsize(log)
    tt.wait_for(lambda: status()["inputs"][0]["files"][0]["size"] == grown, 10, 0.2)
    f = status()["inputs"][0]["files"][0]
    c.check(f == {"path": log, "size": grown, "read": grown, "acknowledged": size,
                  "lag_bytes": grown - size},
            f"status: the file's {grown - size} new bytes are read and not acknowledged",
            json.dumps(f))
    st, body = tt.http_get(base + "/healthz")
    c.check((st, body) == (200, "ok\n"), "readyz: /healthz stays 200 while the output fails",
            f"{st} {body!r}")
    # SIGTERM while the output cannot write: stopping, /readyz 503 until the exit.
    a.proc.send_signal(signal.SIGTERM)
    time.sleep(1.0)
    st, body = tt.http_get(base + "/readyz")
    c.check((st, body) == (503, "stopping\n"), "readyz: 503 stopping after SIGTERM",
            f"{st} {body!r}")
    st, body = tt.http_get(base + "/healthz")
    c.check(st == 200, "readyz: /healthz 200 while stopping", f"{st} {body!r}")
    rc = a.wait(30)
    c.check(rc is not None, "readyz: the agent exits after shutdown_timeout", f"rc={rc}")
    # No agent: `logferry --status` shows the registry (acknowledged: the first lines only).
    run = subprocess.run([tt.LOGFERRY, "--status", "-c", config], capture_output=True,
                         text=True, timeout=20)
    row = re.search(r"^app +(\S+) +(\d+) +(\d+) +(\d+)$", run.stdout, re.M)
    c.check(run.returncode == 0 and f"no agent answers at 127.0.0.1:{port}" in run.stderr and
            "registry " in run.stdout and row is not None and
            row.groups() == (log, str(grown), str(size), str(grown - size)),
            "status_cli: with no agent, `logferry --status` prints the registry's file row: "
            "size now, acknowledged offset, bytes after it",
            f"rc={run.returncode} {run.stdout!r} {run.stderr!r}")
    wd.cleanup()


def main():
    c = tt.Checks()
    th = threading.Thread(target=case_stuck, args=(c,))
    th.start()
    case_readyz_status(c)
    th.join()
    c.finish()


if __name__ == "__main__":
    main()
