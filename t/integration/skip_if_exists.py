#!/usr/bin/env python3
"""skip_if_exists: an input reads nothing while one of its paths exists, checked at the start
(daemon and --once) and when a reload adds or changes the input; the other inputs read on.

The default config relies on it to read a host's system logs once: from the journal where
there is one, from /var/log/syslog where there is not."""
import os
import signal
import subprocess
import time

import tailtest as tt


def main():
    c = tt.Checks()
    wd = tt.Workdir("skipif")
    marker = os.path.join(wd.root, "marker")
    with open(marker, "w") as f:
        f.write("")
    a_log, b_log = wd.path("a.log"), wd.path("b.log")
    with open(a_log, "w") as f:
        f.write("".join(f"a{i}\n" for i in range(5)))
    with open(b_log, "w") as f:
        f.write("".join(f"b{i}\n" for i in range(7)))
    inputs = [{"id": "a", "paths": [a_log], "skip_if_exists": f"[{tt.yaml_str(marker)}]"},
              {"id": "b", "paths": [b_log]}]
    cfg = tt.write_config(wd, inputs)

    # --once with the marker: only b is read
    r = subprocess.run([tt.LOGFERRY, "-c", cfg, "--once"], capture_output=True, text=True,
                       timeout=60)
    got = [e["message"] for e in tt.read_events(wd.out)]
    c.check(r.returncode == 0, "--once exits 0 with a skipped input", r.stderr[-300:])
    c.check(sorted(got) == [f"b{i}" for i in range(7)], "--once: only the other input's lines",
            str(got))
    c.check(f"input a: reads nothing: {marker} exists (skip_if_exists)" in r.stderr,
            "the skip is said at info", r.stderr[-300:])

    # the daemon, marker still there: a stays off; then the marker goes and a reload that
    # changes a starts it
    agent = tt.Agent(cfg, wd)
    with open(b_log, "a") as f:
        f.write("b7\n")
    c.check(tt.wait_events(wd.out, 8, 15), "the daemon reads the other input")
    time.sleep(1.5)
    got = [e["message"] for e in tt.read_events(wd.out)]
    c.check(not any(m.startswith("a") for m in got), "the daemon leaves the skipped input off",
            str(got))
    os.unlink(marker)
    agent.proc.send_signal(signal.SIGHUP)  # the config as it was: the check runs again
    c.check(tt.wait_events(wd.out, 13, 15), "after the marker went, a reload (config "
            "unchanged) starts the input")
    got = [e["message"] for e in tt.read_events(wd.out)]
    c.check(sorted(m for m in got if m.startswith("a")) == [f"a{i}" for i in range(5)],
            "the skipped input's lines, each once", str(got))
    # the marker back: the next reload turns the input off again
    with open(marker, "w") as f:
        f.write("")
    agent.proc.send_signal(signal.SIGHUP)
    c.check(tt.wait_stderr(agent, f"input a: reads nothing: {marker} exists", count=2),
            "a reload with the marker back says so")
    time.sleep(0.5)
    with open(a_log, "a") as f:
        f.write("a5\n")
    with open(b_log, "a") as f:
        f.write("b8\n")
    c.check(tt.wait_events(wd.out, 14, 15), "the other input reads on")
    time.sleep(1.5)
    got = [e["message"] for e in tt.read_events(wd.out)]
    c.check("a5" not in got and got.count("b8") == 1,
            "the input turned off reads no more", str(got[-4:]))
    c.check(agent.stop() == 0, "the daemon stops cleanly")
    wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
