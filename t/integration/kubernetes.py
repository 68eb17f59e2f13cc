#!/usr/bin/env python3
"""A Kubernetes node's log tree in a temp dir, read through the real binary: CRI files under
/var/log/pods/ with /var/log/containers/ symlinks, runtime partials, a Java stack trace and
an interleaved stderr line, through container + multiline (java) + exclude_lines, via
`logferry --preview`. Asserts the exact events: messages, offsets, flags, stream, runtime
time and the Kubernetes names taken from the symlink's path."""
import json
import os
import subprocess
import sys
import tempfile

LOGFERRY = os.environ.get("LOGFERRY", "./logferry")
CID = "4f2a9c0d1e8b7a6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c"


def t(sec, frac):
    return "2026-11-30T01:02:%02d.%09dZ" % (sec, frac)


# (runtime time, stream, tag, text); the app's own lines start with an ISO time.
LINES = [
    (t(3, 1), "stdout", "F", "2026-11-30T01:02:03.000Z INFO starting web"),
    (t(3, 2), "stdout", "F", "DBG cache warm"),
    (t(4, 3), "stdout", "P", "2026-11-30T01:02:04.000Z ERROR request failed: a long "),
    (t(4, 4), "stderr", "F", "GC pause 12ms"),
    (t(4, 5), "stdout", "F", "message split by the runtime"),
    (t(4, 6), "stdout", "F", "java.lang.IllegalStateException: boom"),
    (t(4, 7), "stdout", "F", "\tat com.example.Web.handle(Web.java:42)"),
    (t(4, 8), "stdout", "P", "\tat com.example.Server."),
    (t(4, 9), "stdout", "F", "run(Server.java:7)"),
    (t(4, 10), "stdout", "F", "Caused by: java.io.IOException: disk full"),
    (t(4, 11), "stdout", "F", "\t... 3 more"),
    (t(5, 12), "stdout", "F", "DBG retry scheduled"),
    (t(5, 13), "stdout", "F", "2026-11-30T01:02:05.000Z INFO recovered"),
]


def build_tree(root):
    pods = os.path.join(root, "var/log/pods/shop_web-7d4b9-xk2lp_0d5c7e3a/app")
    containers = os.path.join(root, "var/log/containers")
    os.makedirs(pods)
    os.makedirs(containers)
    real = os.path.join(pods, "0.log")
    offsets = []
    with open(real, "wb") as f:
        for ts, stream, tag, text in LINES:
            offsets.append(f.tell())
            f.write(("%s %s %s %s\n" % (ts, stream, tag, text)).encode())
    link = os.path.join(containers, "web-7d4b9-xk2lp_shop_app-%s.log" % CID)
    os.symlink(real, link)
    return link, offsets


def expected(offsets):
    kube = {"pod": {"name": "web-7d4b9-xk2lp"}, "namespace": "shop",
            "container": {"name": "app"}}
    trace = "\n".join([
        "2026-11-30T01:02:04.000Z ERROR request failed: a long message split by the runtime",
        "java.lang.IllegalStateException: boom",
        "\tat com.example.Web.handle(Web.java:42)",
        "\tat com.example.Server.run(Server.java:7)",
        "Caused by: java.io.IOException: disk full",
        "\t... 3 more",
    ])
    # (offset, message, stream, flags, @timestamp); the stderr line overtakes the stdout
    # partial held before it, as the container stage allows.
    rows = [
        (offsets[0], "2026-11-30T01:02:03.000Z INFO starting web", "stdout", [],
         "2026-11-30T01:02:03.000Z"),
        (offsets[3], "GC pause 12ms", "stderr", [], "2026-11-30T01:02:04.000Z"),
        (offsets[2], trace, "stdout", ["multiline", "partial_joined"],
         "2026-11-30T01:02:04.000Z"),
        (offsets[12], "2026-11-30T01:02:05.000Z INFO recovered", "stdout", [],
         "2026-11-30T01:02:05.000Z"),
    ]
    return [{"offset": o, "message": m, "stream": s, "flags": f, "@timestamp": ts,
             "kubernetes": kube, "container": {"id": CID}} for o, m, s, f, ts in rows]


def main():
    with tempfile.TemporaryDirectory() as tmp:
        link, offsets = build_tree(tmp)
        cfg = os.path.join(tmp, "k8s.yml")
        with open(cfg, "w") as f:
            f.write("data_dir: %s/data\n"
                    "inputs:\n"
                    "  - id: k8s\n"
                    "    paths: ['%s/var/log/containers/*.log']\n"
                    "    parsers:\n"
                    "      - container: {format: cri}\n"
                    "      - multiline: {preset: java}\n"
                    "      - exclude_lines: ['^DBG']\n"
                    "outputs:\n"
                    "  - {name: local, type: file, path: %s/out}\n" % (tmp, tmp, tmp))
        res = subprocess.run([LOGFERRY, "-c", cfg, "--preview", "k8s", link],
                             capture_output=True, timeout=60)
        err = res.stderr.decode(errors="replace")
        if res.returncode != 0:
            sys.exit("FAIL: --preview exit %d: %s" % (res.returncode, err))
        events = [json.loads(line) for line in res.stdout.decode("utf-8").splitlines()]
        got = [{"offset": e["log"]["offset"], "message": e["message"],
                "stream": e.get("stream"), "flags": sorted(e["log"].get("flags", [])),
                "@timestamp": e["@timestamp"], "kubernetes": e.get("kubernetes"),
                "container": e.get("container")} for e in events]
        want = expected(offsets)
        if got != want:
            print("got:")
            for g in got:
                print("  " + json.dumps(g))
            print("want:")
            for w in want:
                print("  " + json.dumps(w))
            sys.exit("FAIL: events differ")
        for e in events:
            if e["log"]["file"]["path"] != link:
                sys.exit("FAIL: log.file.path %r, want the symlink %r"
                         % (e["log"]["file"]["path"], link))
        print("ok: %d events from %d CRI lines" % (len(events), len(LINES)))


if __name__ == "__main__":
    main()
