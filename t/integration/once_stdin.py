#!/usr/bin/env python3
"""--once with a stdin input whose O_NONBLOCK flag is set (a shell or supervisor sharing the
pipe can set it): while no bytes come, the agent must wait in poll(2), not spin on EAGAIN
(issue 7, item 9). Expected: every line delivered, exit 0, and well under 0.5 s of CPU
time over a 2 s quiet spell (a spinning agent burns about 2 s)."""
import fcntl
import os
import subprocess
import sys
import tempfile
import time

LOGFERRY = os.environ.get("LOGFERRY", "./logferry")


def main():
    root = tempfile.mkdtemp(prefix="lf-stdin-")
    config = os.path.join(root, "logferry.yml")
    with open(config, "w") as f:
        f.write(f"data_dir: {root}/data\n"
                "inputs:\n  - {id: in, type: stdin}\n"
                "outputs:\n  - {name: screen, type: console, format: text}\n"
                "metrics: {listen: \"\"}\n")
    r, w = os.pipe()
    flags = fcntl.fcntl(r, fcntl.F_GETFL)
    fcntl.fcntl(r, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    out_path = os.path.join(root, "out")
    with open(out_path, "wb") as out:
        proc = subprocess.Popen([LOGFERRY, "-c", config, "--once"], stdin=r, stdout=out,
                                stderr=subprocess.DEVNULL)
    os.close(r)
    os.write(w, b"first\n")
    time.sleep(2.0)
    os.write(w, b"second\nthird\n")
    os.close(w)
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except ChildProcessError:
        status, usage = None, None
    rc = os.waitstatus_to_exitcode(status) if status is not None else None
    cpu = usage.ru_utime + usage.ru_stime if usage is not None else 99.0
    with open(out_path, "rb") as f:
        got = f.read()
    checks = [
        (rc == 0, "--once on a non-blocking stdin exits 0", f"rc={rc}"),
        (got == b"first\nsecond\nthird\n", "every line arrives", repr(got)),
        (cpu < 0.5, "a quiet non-blocking stdin costs no CPU", f"{cpu:.2f} s of CPU"),
    ]
    failed = 0
    for ok, name, detail in checks:
        print(f"{'ok' if ok else 'FAIL'}: {name} ({detail})")
        failed += 0 if ok else 1
    print(f"{len(checks) - failed} passed, {failed} failed")
    subprocess.run(["rm", "-rf", root], check=False)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
