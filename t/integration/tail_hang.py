#!/usr/bin/env python3
"""An output that hangs (a console whose reader never reads) cannot hold the agent hostage:
SIGTERM ends it within shutdown_timeout, exit 0, with the registry at what was
acknowledged, and a restart delivers the rest."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402


def main():
    c = tt.Checks()
    wd = tt.Workdir("hang")
    log = wd.path("a.log")
    n = 200000
    with open(log, "w") as f:
        f.write("".join(f"{i}\n" for i in range(n)))
    cfg = os.path.join(wd.root, "hang.yml")
    with open(cfg, "w") as f:
        f.write(f"data_dir: {tt.yaml_str(wd.data)}\nshutdown_timeout: 2s\n"
                f"inputs:\n  - {{id: app, paths: [{tt.yaml_str(wd.path('*.log'))}]}}\n"
                "outputs:\n  - {name: screen, type: console, format: text}\n"
                "metrics: {listen: \"127.0.0.1:0\"}\n")
    r, w = os.pipe()  # kept open, never read: the console blocks once the pipe is full
    errpath = os.path.join(wd.root, "hang.stderr")
    with open(errpath, "wb") as errf:
        proc = subprocess.Popen([tt.LOGFERRY, "-c", cfg], stdin=subprocess.DEVNULL, stdout=w,
                                stderr=errf)

    class agent:
        @staticmethod
        def stderr():
            with open(errpath, "rb") as f:
                return f.read().decode("utf-8", "replace")
    # Some batches fit in the pipe and are acknowledged, then the console blocks and the
    # reader with it: wait until /metrics shows both.
    port = tt.metrics_port(agent)
    acked = tt.wait_metric(port, "logferry_events_acked_total", '{output="screen"}',
                           lambda v: v > 0, 30)
    c.check(acked is not None and 0 < acked < n, "the pipe takes some batches, then blocks",
            f"{acked} events acknowledged before the hang")
    tt.wait_for(lambda: tt.metric(tt.scrape(port)[1], "logferry_queue_bytes") not in (None, 0),
                30, step=0.1)
    # The reader is held up inside a push; the offsets acknowledged so far must still reach
    # the registry (every registry.flush_interval), not only at the stop.

    def saved():
        return [r_["offset"] for r_ in tt.read_registry(wd.data) or [] if r_["path"] == log]
    c.check(tt.wait_for(lambda: saved() and saved()[0] > 0, 15),
            "while the output hangs the registry is written with what was acknowledged",
            f"registry {saved()}")
    t0 = time.monotonic()
    proc.terminate()
    try:
        rc = proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = "hung"
    took = time.monotonic() - t0
    c.check(rc == 0, "SIGTERM exits 0 although the output hangs", f"rc={rc}")
    c.check(took < 5.0, "within shutdown_timeout (2 s) plus a little", f"{took:.2f} s")
    recs = [r_ for r_ in tt.read_registry(wd.data) or [] if r_["path"] == log]
    off = recs[0]["offset"] if len(recs) == 1 else None
    size = os.path.getsize(log)
    c.check(off is not None and 0 < off < size,
            "the registry holds an entry at what was acknowledged only (0 < offset < size)",
            f"{len(recs)} entries for {log}, offset {off} of {size}")
    off = off or 0
    os.close(w)
    os.close(r)
    out = subprocess.run([tt.LOGFERRY, "-c", cfg, "--once"], capture_output=True, timeout=60)
    got = out.stdout.decode().split("\n")[:-1]
    c.check(out.returncode == 0 and got and got[-1] == str(n - 1),
            "a backfill after it delivers the rest up to the last line",
            f"rc={out.returncode}, {len(got)} lines, last {got[-1] if got else None}")
    starts = {}
    pos = 0
    for i in range(n):
        starts[pos] = i
        pos += len(f"{i}\n")
    c.check(got and starts.get(off) == int(got[0]),
            "it resumes exactly at the acknowledged offset",
            f"offset {off} is line {starts.get(off)}, backfill starts at {got[0] if got else None}")
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
