#!/usr/bin/env python3
"""Under systemd (NOTIFY_SOCKET set) the daemon reports READY=1 once it runs and
STOPPING=1 when SIGTERM starts a stop, on a real unix datagram socket."""
import os
import signal
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402


def main():
    c = tt.Checks()
    wd = tt.Workdir("systemd")
    with open(wd.path("a.log"), "w") as f:
        f.write("hello\n")
    config = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}])
    sock_path = os.path.join(wd.root, "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(sock_path)
    sock.settimeout(10)
    env = dict(os.environ, NOTIFY_SOCKET=sock_path)
    proc = subprocess.Popen([tt.LOGFERRY, "-c", config], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        msg = sock.recv(256).decode()
    except socket.timeout:
        msg = "(nothing in 10 s)"
    c.check(msg == "READY=1", "READY=1 once the daemon runs", repr(msg))
    proc.send_signal(signal.SIGTERM)
    try:
        msg = sock.recv(256).decode()
    except socket.timeout:
        msg = "(nothing in 10 s)"
    c.check(msg == "STOPPING=1", "STOPPING=1 when SIGTERM starts the stop", repr(msg))
    rc = proc.wait(30)
    c.check(rc == 0, "and it exits 0", f"rc={rc}")
    sock.close()
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
