#!/usr/bin/env python3
"""An output that cannot write: the daemon survives, keeps the events, retries with backoff
and says so in its log, the registry does not move, and once the output can write again
every line arrives exactly once, in order. The output's writes are made to fail for real by
lowering the running agent's RLIMIT_FSIZE (prlimit): write(2) returns EFBIG."""
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
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}])
    with open(config) as f:
        text = f.read()
    # A small queue, so that reading has to stop while the output cannot write.
    text = text.replace("queue: {batch: {flush_interval: 100ms}}",
                        "queue: {max_bytes: 64KiB, batch: {max_events: 256, "
                        "flush_interval: 100ms}}")
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
    time.sleep(0.5)
    # Output files may not grow past 1 byte: every write of a batch fails with EFBIG.
    rc = subprocess.run(["prlimit", f"--pid={agent.pid}", "--fsize=1:unlimited"]).returncode
    c.check(rc == 0, "prlimit lowered the agent's file size limit", f"rc={rc}")
    expected = [f"line {i:06d} " + "y" * 60 for i in range(LINES)]
    with open(log, "a") as f:
        f.write("\n".join(expected) + "\n")
    time.sleep(3.0)
    c.check(agent.alive(), "the agent survives an output that cannot write")
    written = tt.count_lines(wd.out)
    c.check(written == 0, "nothing is acknowledged while the output fails", f"{written} lines")
    err = agent.stderr()
    c.check("retry" in err and "batch will be retried" in err,
            "the log says batches are retried", err[-300:].replace("\n", " | "))
    recs = tt.read_registry(wd.data) or []
    off = max((r["offset"] for r in recs), default=0)
    c.check(off == 0, "the registry does not move past unwritten events", f"offset {off}")
    rc = subprocess.run(["prlimit", f"--pid={agent.pid}", "--fsize=unlimited:unlimited"]).returncode
    got = tt.wait_events(wd.out, LINES, 60)
    c.check(got >= LINES, "after the output recovers every line arrives", f"{got} of {LINES}")
    events = tt.read_events(wd.out)
    msgs = [e["message"] for e in events]
    c.check(msgs == expected, "exactly once and in order",
            f"{len(msgs)} events, {len(set(msgs))} distinct")
    rc = agent.stop()
    c.check(rc == 0, "SIGTERM exits 0", f"rc={rc}")
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
