#!/usr/bin/env python3
"""An output that cannot write: the daemon survives, keeps the events, retries with backoff
and says so in its log, the registry does not move, and once the output can write again
every line arrives exactly once, in order. The output's writes are made to fail for real by
lowering the running agent's RLIMIT_FSIZE (prlimit): write(2) returns EFBIG.

The lowered limit also stops the registry file from being written, so the registry cannot
show what was acknowledged during the outage: /metrics (served from memory) does. During the
outage events_acked_total stays 0 and queue_bytes stays within queue.max_bytes, and the
reader stops: its descriptor's position (/proc/PID/fdinfo) stays put, below the file size."""
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402

LINES = 20000


def main():
    c = tt.Checks()
    wd = tt.Workdir("backpressure")
    log = wd.path("app.log")
    open(log, "w").close()
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")],
                                   "close_inactive": "5m"}])
    with open(config) as f:
        text = f.read()
    # A small queue, so that reading has to stop while the output cannot write.
    text = text.replace("queue: {batch: {flush_interval: 100ms}}",
                        "queue: {max_bytes: 64KiB, batch: {max_events: 256, "
                        "flush_interval: 100ms}}")
    text = text.replace('metrics: {listen: ""}', 'metrics: {listen: "127.0.0.1:0"}')
    with open(config, "w") as f:
        f.write(text)
    # stderr through a pipe: the lowered limit applies to every file the agent writes,
    # its log too if that were a file.
    proc = subprocess.Popen([tt.LOGFERRY, "-c", config], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    log_lines = []
    reader = threading.Thread(target=lambda: log_lines.extend(
        l.decode(errors="replace") for l in proc.stderr), daemon=True)
    reader.start()

    class A:
        pid = proc.pid

        @staticmethod
        def alive():
            return proc.poll() is None

        @staticmethod
        def stderr():
            return "".join(log_lines)

        @staticmethod
        def stop():
            proc.terminate()
            rc = proc.wait(30)
            reader.join(5)
            return rc
    agent = A
    port = tt.metrics_port(agent)
    c.check(port is not None, "the agent serves /metrics", agent.stderr()[-300:])
    acked = '{output="local"}'
    # Output files may not grow past 1 byte: every write of a batch fails with EFBIG.
    rc = subprocess.run(["prlimit", f"--pid={agent.pid}", "--fsize=1:unlimited"]).returncode
    c.check(rc == 0, "prlimit lowered the agent's file size limit", f"rc={rc}")
    expected = [f"line {i:06d} " + "y" * 60 for i in range(LINES)]
    with open(log, "a") as f:
        f.write("\n".join(expected) + "\n")
    size = os.path.getsize(log)
    c.check(tt.wait_stderr(agent, "batch will be retried", 60) and "retry" in agent.stderr(),
            "the log says batches are retried", agent.stderr()[-300:].replace("\n", " | "))
    c.check(agent.alive(), "the agent survives an output that cannot write")
    # The reader stops once the queue is full: its position stops moving, short of the end.
    tt.wait_metric(port, "logferry_queue_bytes", "", lambda v: v >= 64 * 1024, 60)
    pos = [None, None]

    def reader_still():
        pos[0], prev = tt.fd_position(agent.pid, log), pos[0]
        return pos[0] is not None and pos[0] == prev
    tt.wait_for(reader_still, 30, step=1.0)
    samples = []
    for _ in range(3):
        time.sleep(0.5)
        _, body = tt.scrape(port)
        samples.append((tt.metric(body, "logferry_events_acked_total", acked),
                        tt.metric(body, "logferry_queue_bytes"),
                        tt.fd_position(agent.pid, log)))
    print(f"during the outage (acked, queue_bytes, read position): {samples}, file size {size}")
    c.check(all(a == 0 for a, _, _ in samples),
            "no event is acknowledged while the output fails (/metrics events_acked_total)",
            repr([a for a, _, _ in samples]))
    # Readers pause once the queue is at the cap: the batch being filled when the cap was
    # reached is let in, so the bound is the cap plus one batch (256 events of 72 bytes).
    bound = 64 * 1024 + 256 * len(expected[0])
    c.check(all(q is not None and 0 < q <= bound for _, q, _ in samples),
            "queue_bytes holds the unwritten events, within queue.max_bytes plus one batch",
            f"{[q for _, q, _ in samples]}, bound {bound}")
    c.check(all(p is not None and p == pos[0] and p < size for _, _, p in samples),
            "the reader stopped short of the end (fdinfo position still, below the size)",
            f"positions {[p for _, _, p in samples]}, file size {size}")
    written = tt.count_lines(wd.out)
    c.check(written == 0, "nothing reaches the output while it fails", f"{written} lines")
    recs = tt.read_registry(wd.data) or []
    off = max((r["offset"] for r in recs), default=0)
    c.check(off == 0, "the registry does not move past unwritten events", f"offset {off}")
    rc = subprocess.run(["prlimit", f"--pid={agent.pid}", "--fsize=unlimited:unlimited"]).returncode
    got = tt.wait_events(wd.out, LINES, 90)
    c.check(got >= LINES, "after the output recovers every line arrives", f"{got} of {LINES}")
    n = tt.wait_metric(port, "logferry_events_acked_total", acked, lambda v: v >= LINES, 30)
    c.check(n == LINES, "events_acked_total counts every line once", f"{n}")
    off = tt.wait_registry_offset(wd.data, log, size, 30)
    c.check(off == size, "the registry reaches the end of the file", f"offset {off} of {size}")
    events = tt.read_events(wd.out)
    msgs = [e["message"] for e in events]
    c.check(msgs == expected, "exactly once and in order",
            f"{len(msgs)} events, {len(set(msgs))} distinct")
    rc = agent.stop()
    c.check(rc == 0, "SIGTERM exits 0", f"rc={rc}")
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
