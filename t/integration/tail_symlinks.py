#!/usr/bin/env python3
"""Symlinks under a glob, against the daemon (issue 7, security 6). logs/evil.log links to a
file outside, logs/dir links to a directory outside, both under logs/**/*.log: with the
default allowed_roots (the glob's fixed part logs/, plus /var/log) neither is read, each is
warned about once however many scans see it, and a plain file next to them is read in full.
A second input allows the outside directory explicitly and reads through the same kind of
links, as /var/log/containers links into /var/log/pods."""
import os
import time

import tailtest as tt


def main():
    c = tt.Checks()
    wd = tt.Workdir("symlinks")
    outside = os.path.join(wd.root, "outside")
    outdir = os.path.join(wd.root, "outdir")
    os.makedirs(os.path.join(outdir, "sub"))
    os.makedirs(outside)
    with open(os.path.join(outside, "secret.log"), "w") as f:
        f.write("root:secret-hash:19000\n")
    with open(os.path.join(outdir, "sub", "other.log"), "w") as f:
        f.write("outside the root\n")
    good = [f"good line {i}" for i in range(20)]
    with open(wd.path("good.log"), "w") as f:
        f.write("".join(x + "\n" for x in good))
    os.symlink(os.path.join(outside, "secret.log"), wd.path("evil.log"))
    os.symlink(outdir, wd.path("dir"))
    pods = os.path.join(wd.root, "pods")
    containers = os.path.join(wd.root, "containers")
    os.makedirs(pods)
    os.makedirs(containers)
    with open(os.path.join(pods, "0.log"), "w") as f:
        f.write("from a pod\n")
    os.symlink(os.path.join(pods, "0.log"), os.path.join(containers, "app.log"))
    config = tt.write_config(wd, [
        {"id": "logs", "paths": [os.path.join(wd.logs, "**", "*.log")]},
        {"id": "k8s", "paths": [os.path.join(containers, "*.log")],
         "allowed_roots": f"[{tt.yaml_str(containers)}, {tt.yaml_str(pods)}]"},
    ])
    agent = tt.Agent(config, wd, "symlinks")
    got = tt.wait_events(wd.out, len(good) + 1, 30)
    c.check(got >= len(good) + 1, "the plain file and the allowed link are read",
            f"{got} events")
    time.sleep(3.5)  # three more scans (scan_interval 1s) see the refused links again
    rc = agent.stop()
    c.check(rc == 0, "SIGTERM exits 0", f"rc={rc}")
    events = tt.read_events(wd.out)
    messages = [e["message"] for e in events]
    c.check("root:secret-hash:19000" not in messages, "a link to a file outside is not read",
            repr(messages[:3]))
    c.check("outside the root" not in messages, "a link to a directory outside is not read",
            repr(messages[:3]))
    c.check(sorted(m for m in messages if m.startswith("good")) == sorted(good),
            "the plain file is read in full", f"{len(messages)} events")
    pod = [e for e in events if e["message"] == "from a pod"]
    c.check(len(pod) == 1 and pod[0]["log"]["file"]["path"] == os.path.join(containers, "app.log"),
            "a link into an allowed root is read once, under its link's path", repr(pod))
    err = agent.stderr()
    evil = wd.path("evil.log")
    want = (f"input logs: refusing {evil}: its real path {outside}/secret.log is outside "
            f"allowed_roots ({wd.logs}, /var/log); skipping it")
    c.check(err.count(want) == 1, "the link to a file is warned about once, naming its target",
            err[-2000:])
    other = wd.path("dir", "sub", "other.log")
    c.check(err.count(f"refusing {other}: its real path {outdir}/sub/other.log") == 1,
            "the file behind the directory link is warned about once", err[-2000:])
    c.finish()
    wd.cleanup()


if __name__ == "__main__":
    main()
