#!/usr/bin/env python3
"""Journal files the agent's user may not read: sd-journal leaves them out without a word,
so the journald input says so once, naming a file and the fix (the group systemd-journal),
and reads the files it may read."""
import os
import subprocess
import tempfile

import tailtest as tt

REMOTE = "/lib/systemd/systemd-journal-remote"


def journal(path, first, n):
    export = b"".join(b"__REALTIME_TIMESTAMP=%d\n__MONOTONIC_TIMESTAMP=%d\n"
                      b"_BOOT_ID=00112233445566778899aabbccddeeff\nMESSAGE=entry %d\n\n"
                      % (1700000000000000 + i, 1000 + i, i) for i in range(first, first + n))
    subprocess.run([REMOTE, "-o", path, "-"], input=export, check=True, capture_output=True)


def main():
    c = tt.Checks()
    if not os.access(REMOTE, os.X_OK):
        print(f"FAIL: {REMOTE} is missing (bootstrap.sh installs systemd-journal-remote)")
        raise SystemExit(1)
    root = tempfile.mkdtemp(prefix="lf-jperms-")
    os.chmod(root, 0o755)
    machine = os.path.join(root, "journal", "00112233445566778899aabbccddeeff")
    os.makedirs(machine)
    os.chmod(os.path.dirname(machine), 0o755)
    os.chmod(machine, 0o755)
    readable = os.path.join(machine, "readable.journal")
    closed = os.path.join(machine, "closed.journal")
    journal(readable, 0, 3)
    journal(closed, 10, 4)
    os.chmod(readable, 0o644)
    os.chmod(closed, 0o600 if os.geteuid() == 0 else 0o000)
    cfg = os.path.join(root, "logferry.yml")
    data = os.path.join(root, "data")
    with open(cfg, "w") as f:
        f.write(f"data_dir: {tt.yaml_str(data)}\ninputs:\n  - id: j\n    type: journald\n"
                f"    directory: {tt.yaml_str(os.path.dirname(machine))}\n"
                "outputs:\n  - {name: c, type: console}\nmetrics: {listen: \"\"}\n")
    os.chmod(cfg, 0o644)
    preexec = None
    if os.geteuid() == 0:  # root reads everything: run as nobody
        os.makedirs(data)
        os.chown(data, 65534, 65534)

        def preexec():
            os.setgid(65534)
            os.setuid(65534)
    r = subprocess.run([tt.LOGFERRY, "-c", cfg, "--once"], capture_output=True, text=True,
                       timeout=60, preexec_fn=preexec)
    got = [line for line in r.stdout.splitlines() if line.startswith("{")]
    c.check(r.returncode == 0, "--once exits 0", r.stderr[-300:])
    c.check(len(got) == 3, "the readable file's entries are read", str(len(got)))
    needle = (f"input j: 1 journal files cannot be read by this user (such as {closed}): their "
              "entries are left out; add the user to the group systemd-journal")
    c.check(r.stderr.count(needle) == 1, "the unreadable file is named once, with the fix",
            r.stderr[-400:])
    subprocess.run(["rm", "-rf", root])
    c.finish()


if __name__ == "__main__":
    main()
