#!/usr/bin/env python3
"""What an operator reads when something is off, each message checked as printed:

- the daemon refusing an unusable data_dir says so in its own name (no "once:" prefix);
- the `--once` summary counts events an output refused for good (dead letters) apart from
  the ones it delivered;
- an output that failed and then delivers again says so, with how many attempts failed;
- `--preview ... | head` ends quietly with exit 0 when head closes the pipe;
- a stage name given as an input key (a Filebeat habit: input-level exclude_lines) says
  where it belongs, at the key's FILE:LINE:COL."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import tailtest as tt  # noqa: E402


def data_dir_refused(c):
    wd = tt.Workdir("opmsg-datadir")
    blocker = os.path.join(wd.root, "not-a-dir")
    with open(blocker, "w") as f:
        f.write("a file where data_dir's parent should be\n")
    config = os.path.join(wd.root, "logferry.yml")
    with open(config, "w") as f:
        f.write(f"data_dir: {tt.yaml_str(blocker + '/data')}\n"
                f"inputs:\n  - id: app\n    paths: [{tt.yaml_str(wd.path('*.log'))}]\n"
                "outputs:\n  - {name: screen, type: console}\n"
                "metrics: {listen: \"\"}\n")
    r = subprocess.run([tt.LOGFERRY, "-c", config], capture_output=True, text=True, timeout=30)
    lines = r.stderr.splitlines()
    said = [ln for ln in lines if f"data_dir {blocker}/data is not usable" in ln]
    c.check(r.returncode == 1, "the daemon exits 1 on an unusable data_dir", f"rc={r.returncode}")
    c.check(len(said) == 1 and " once: " not in said[0],
            "it says data_dir is not usable, not as the backfill (no \"once:\")", repr(lines))
    wd.cleanup()


def once_dead_letters(c):
    wd = tt.Workdir("opmsg-dead")
    rcv = ht.Receiver(os.path.join(wd.root, "rcv"))
    try:
        rcv.control(seq="400")  # the first request is refused for good, the others taken
        ht.write_lines(wd.path("app.log"), [f"line-{i}" for i in range(10)])
        config = ht.write_config(wd, [f"url: {tt.yaml_str(rcv.url())}", "max_in_flight: 1"],
                                 batch="flush_interval: 100ms, max_events: 5")
        rc, err = ht.run_once(config)
    finally:
        rcv.stop()
    summary = [ln for ln in err.splitlines() if "backfill done" in ln]
    dead = ht.dead_letters(wd.data)
    c.check(rc == 0 and len(rcv.accepted()) == 5 and len(dead) == 5,
            "--once: 5 events accepted by the collector, 5 in the dead letters",
            f"rc={rc} accepted={len(rcv.accepted())} dead={len(dead)}")
    line = summary[0] if summary else err[-400:]
    c.check(re.search(r"output collector: 5 delivered, 5 dead-lettered", line) is not None,
            "the summary counts the dead-lettered events apart from the delivered ones", line)
    c.check("10 events delivered" not in line,
            "the summary does not call the refused events delivered", line)
    wd.cleanup()


def recovery_logged(c):
    wd = tt.Workdir("opmsg-recover")
    rcv = ht.Receiver(os.path.join(wd.root, "rcv"))
    agent = None
    try:
        rcv.control(status=503, count=3)
        config = ht.write_config(wd, [f"url: {tt.yaml_str(rcv.url())}", "max_in_flight: 1",
                                      "backoff: {initial: 100ms, max: 200ms}"])
        agent = tt.Agent(config, wd)
        ht.write_lines(wd.path("app.log"), [f"event-{i}" for i in range(20)])
        ok = tt.wait_for(lambda: len(rcv.accepted()) >= 20, 30)
        c.check(ok, "the collector gets all 20 events after three 503 answers",
                f"{len(rcv.accepted())} accepted")
        tt.wait_stderr(agent, "delivering again", timeout=10)
        agent.stop()
    finally:
        if agent is not None and agent.alive():
            agent.stop()
        rcv.stop()
    err = agent.stderr()
    back = [ln for ln in err.splitlines() if "delivering again" in ln]
    c.check(len(back) == 1 and "output collector: delivering again after 3 failed attempts"
            in back[0], "the recovery is logged once, with the failed attempts counted",
            repr(back) if back else err[-600:])
    wd.cleanup()


def preview_into_head(c):
    wd = tt.Workdir("opmsg-preview")
    log = wd.path("app.log")
    with open(log, "w") as f:
        for i in range(200000):
            f.write(f"preview line {i} " + "x" * 40 + "\n")
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}])
    lf = subprocess.Popen([tt.LOGFERRY, "-c", config, "--preview", "app", log],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    head = subprocess.run(["head", "-n", "2"], stdin=lf.stdout, capture_output=True, timeout=60)
    lf.stdout.close()  # head's end is the only reader left
    err = lf.stderr.read().decode("utf-8", "replace")
    rc = lf.wait(timeout=60)
    got = head.stdout.decode().splitlines()
    c.check(len(got) == 2 and '"message":"preview line 0 ' in got[0],
            "head gets the first two events", repr(got)[:200])
    c.check(rc == 0 and err == "", "--preview | head exits 0 and prints nothing on stderr",
            f"rc={rc} stderr={err[-300:]!r}")
    wd.cleanup()


def stage_as_input_key(c):
    wd = tt.Workdir("opmsg-stagekey")
    config = os.path.join(wd.root, "logferry.yml")
    with open(config, "w") as f:
        f.write(f"data_dir: {tt.yaml_str(wd.data)}\n"
                "inputs:\n"
                "  - id: app\n"
                f"    paths: [{tt.yaml_str(wd.path('*.log'))}]\n"
                "    exclude_lines: ['DEBUG']\n"
                "    multiline: {pattern: '^x'}\n"
                "outputs:\n  - {name: screen, type: console}\n")
    r = subprocess.run([tt.LOGFERRY, "-c", config, "--test-config"], capture_output=True,
                       text=True, timeout=30)
    lines = r.stderr.splitlines()
    c.check(r.returncode == 2, "--test-config exits 2", f"rc={r.returncode}")
    c.check(f"{config}:5:5: inputs[0]: exclude_lines is a stage: "
            "parsers: [{exclude_lines: ...}]" in lines,
            "input-level exclude_lines: where it lives, at its FILE:LINE:COL", repr(lines))
    c.check(f"{config}:6:5: inputs[0]: multiline is a stage: parsers: [{{multiline: ...}}]"
            in lines, "input-level multiline: the same", repr(lines))
    c.check(not any("did you mean" in ln for ln in lines),
            "no \"did you mean exclude_files\"", repr(lines))
    wd.cleanup()


def main():
    c = tt.Checks()
    data_dir_refused(c)
    once_dead_letters(c)
    recovery_logged(c)
    preview_into_head(c)
    stage_as_input_key(c)
    return c.finish()


if __name__ == "__main__":
    main()
