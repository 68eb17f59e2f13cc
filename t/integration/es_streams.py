#!/usr/bin/env python3
"""document_id: auto names events, never content: every content generation of a source (a
file first seen, a file after a truncation, a new file under a rotated name, one run's
stdin) gets a stream id, and _id = the stream id and the offset, in hex. A new event never
collides with an older document (which es_receiver.py answers 409, counted as delivered:
a silent loss), and a resent event always names its document (a crash never doubles).

Each case ships to its own index of one es_receiver.py and counts the documents; the
receiver records a 409 whose refused document is another event than the stored one as a
clash, and no case may have one.

copytruncate    cp app.log app.log.1; : > app.log; the same lines again at the same offsets
                (daemon; --once with the new content shorter than what was read)
rotated         app.log renamed away, a new app.log with the same lines (--once and the
                daemon, each with and without the spool)
dissect         the same, with a dissect stage that drops the line's timestamp from message
stdin           the same lines on stdin to two runs (--once; the daemon): two streams, all
                indexed
spool switch    the daemon killed -9 before its registry flush, started again with the spool
                on (and the reverse): every line resent is answered 409, nothing doubles
replaced        a file empty when first seen (or just truncated) is written and shipped, the
                daemon killed -9 before any offset flush, the file's content replaced
                (same inode, same lengths) while it is down: the new content is a new
                stream, all of it indexed
repeated        identical lines: one document each (daemon and --once)"""
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import tailtest as tt  # noqa: E402

SPOOL = "spool: {enabled: true, max_bytes: 64MiB}"


class Rig:
    def __init__(self, c, wd, rx):
        self.c, self.wd, self.rx = c, wd, rx
        self.docs_path = os.path.join(rx.dir, "docs.jsonl")
        self.reqs_path = os.path.join(rx.dir, "requests.jsonl")

    def config(self, name, inputs, spool=False, registry_flush="200ms", parsers=None):
        """A config of its own data_dir (data-NAME) shipping inputs to index NAME. inputs:
        (id, path or None for stdin) pairs."""
        data = os.path.join(self.wd.root, f"data-{name}")
        lines = [f"data_dir: {tt.yaml_str(data)}", "shutdown_timeout: 5s", "inputs:"]
        for iid, path in inputs:
            lines.append(f"  - id: {iid}")
            if path is None:
                lines.append("    type: stdin")
            else:
                lines += [f"    paths: [{tt.yaml_str(path)}]", "    scan_interval: 200ms"]
            if parsers:
                lines.append(f"    parsers: {parsers}")
        lines += ["outputs:", "  - name: es", "    type: elasticsearch",
                  f"    url: {self.rx.url('')}", f"    index: {name}", "    max_in_flight: 1",
                  "    backoff: {initial: 100ms, max: 500ms}",
                  "queue: {batch: {flush_interval: 100ms, max_events: 500}"
                  + (f", {SPOOL}" if spool else "") + "}",
                  f"registry: {{flush_interval: {registry_flush}}}", "metrics: {listen: \"\"}"]
        path = os.path.join(self.wd.root, f"{name}-{int(spool)}-{registry_flush}.yml")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def docs(self, index):
        return [d["source"] for d in ht.read_jsonl(self.docs_path) if d["index"] == index]

    def items(self, index):
        return [i for r in ht.read_jsonl(self.reqs_path) for i in r["items"]
                if i["index"] == index]

    def wait_docs(self, index, n, timeout=20):
        return tt.wait_for(lambda: len(self.docs(index)) >= n, timeout, step=0.1)

    def check_index(self, index, want, what):
        """The index holds exactly the messages want (a multiset), and no 409 refused an
        event other than the one its _id had named."""
        time.sleep(0.3)  # anything still on its way would show now
        got = sorted(d["message"] for d in self.docs(index))
        clashes = [i for i in self.items(index) if i.get("clash")]
        n409 = sum(1 for i in self.items(index) if i["status"] == 409)
        self.c.check(got == sorted(want), f"{what}: one document per event",
                     f"{len(want)} expected, {len(got)} indexed, {n409} answered 409")
        self.c.check(not clashes, f"{what}: no 409 answers a new event",
                     f"{len(clashes)} new events answered 409 (counted as delivered: lost)")

    def once(self, cfg, stdin=None):
        r = subprocess.run([tt.LOGFERRY, "-c", cfg, "--once"], input=stdin,
                           capture_output=True, timeout=60)
        return r.returncode, r.stderr.decode("utf-8", "replace")


def write(path, lines, mode="a"):
    with open(path, mode) as f:
        f.write("".join(l + "\n" for l in lines))


HEALTH = ["health check ok", "job started", "health check ok", "job started",
          "request served", "health check ok", "job started"]


def copytruncate_daemon(r):
    log = r.wd.path("ct-daemon.log")
    write(log, HEALTH, "w")
    agent = tt.Agent(r.config("ct-daemon", [("ctd", log)]), r.wd, tag="ct-daemon")
    try:
        r.c.check(r.wait_docs("ct-daemon", 7), "copytruncate (daemon): the first lines arrive")
        shutil.copyfile(log, log + ".1")
        open(log, "w").close()  # the truncation: same device and inode
        time.sleep(1.5)         # seen empty before it grows again
        write(log, HEALTH[:6])  # the same text at the same offsets
        r.wait_docs("ct-daemon", 13, timeout=10)
    finally:
        rc = agent.stop()
    r.c.check(rc == 0, "copytruncate (daemon): stops with exit 0", f"rc {rc}")
    r.check_index("ct-daemon", HEALTH + HEALTH[:6], "copytruncate (daemon)")


def copytruncate_once(r):
    log = r.wd.path("ct-once.log")
    write(log, HEALTH, "w")
    cfg = r.config("ct-once", [("cto", log)])
    rc1, _ = r.once(cfg)
    shutil.copyfile(log, log + ".1")
    open(log, "w").close()
    write(log, HEALTH[:6])  # shorter than what run 1 read: new content
    rc2, err = r.once(cfg)
    r.c.check(rc1 == 0 and rc2 == 0, "copytruncate (--once): both runs exit 0",
              f"rc {rc1}, {rc2}: {err.strip()[-200:]}")
    r.check_index("ct-once", HEALTH + HEALTH[:6], "copytruncate (--once)")


def stamped(hour):
    return [f"2026-12-03T{hour:02d}:00:0{i} " + ("job started" if i % 2 else "health check ok")
            for i in range(10)]


DISSECT = "[{dissect: {tokenizer: '%{ts} %{message}'}}]"


def rotated(r, mode, dissect=False):
    """mode: once, once-spool, daemon or spool (the daemon with the spool on)."""
    name = f"rot-{mode}" + ("-dissect" if dissect else "")
    what = f"rotated successor ({mode}{', dissect' if dissect else ''})"
    log = r.wd.path(f"{name}.log")
    first = stamped(10)
    # The same lengths (the same offsets); without dissect, every other line repeats the
    # old file's text, with dissect only the stage's message does.
    second = [first[i] if i % 2 and not dissect else l for i, l in enumerate(stamped(11))]
    want = first + second
    if dissect:
        want = [l.split(" ", 1)[1] for l in want]
    write(log, first, "w")
    cfg = r.config(name, [(name, log)], spool=mode in ("spool", "once-spool"),
                   parsers=DISSECT if dissect else None)
    if mode.startswith("once"):
        rc1, _ = r.once(cfg)
        os.rename(log, log + ".1")
        write(log, second, "w")
        rc2, err = r.once(cfg)
        r.c.check(rc1 == 0 and rc2 == 0, f"{what}: both runs exit 0", f"rc {rc1}, {rc2}")
    else:
        agent = tt.Agent(cfg, r.wd, tag=name)
        try:
            r.c.check(r.wait_docs(name, 10), f"{what}: the first file arrives")
            os.rename(log, log + ".1")  # out of the glob
            write(log, second, "w")
            r.wait_docs(name, 20, timeout=10)
        finally:
            rc = agent.stop()
        r.c.check(rc == 0, f"{what}: stops with exit 0", f"rc {rc}")
    r.check_index(name, want, what)


def stdin_twice(r, mode):
    """Each run's stdin is a stream of its own: the same lines twice are two sets of events."""
    lines = ["tick", "tock", "tick", "tock", "tick", "tock"]
    name = f"stdin-{mode}"
    cfg = r.config(name, [("in", None)])
    data = "".join(l + "\n" for l in lines).encode()
    for run in (1, 2):
        if mode == "once":
            rc, _ = r.once(cfg, stdin=data)
        else:
            agent = tt.Agent(cfg, r.wd, tag=f"{name}-{run}", stdin=subprocess.PIPE)
            agent.proc.stdin.write(data)
            agent.proc.stdin.close()  # the end of stdin: the daemon goes on
            r.wait_docs(name, 6 * run, timeout=10)
            rc = agent.stop()
        r.c.check(rc == 0, f"stdin ({mode}): run {run} exits 0", f"rc {rc}")
    r.check_index(name, lines + lines, f"stdin, two runs ({mode})")


def spool_switch(r, spool_first):
    """The daemon ships 100 lines, is killed -9 before its registry flush (1 h), and starts
    again with the spool setting flipped: it reads the file again from the start, and every
    line is answered 409."""
    name = "switch-" + ("on-off" if spool_first else "off-on")
    what = "spool " + ("on, then off" if spool_first else "off, then on") + " across a crash"
    log = r.wd.path(f"{name}.log")
    lines = [f"switch line {i:03d}" for i in range(100)]
    write(log, lines, "w")
    cfg1 = r.config(name, [(name, log)], spool=spool_first, registry_flush="1h")
    cfg2 = r.config(name, [(name, log)], spool=not spool_first, registry_flush="1h")
    agent = tt.Agent(cfg1, r.wd, tag=f"{name}-1")
    r.c.check(r.wait_docs(name, 100), f"{what}: run 1 indexes every line")
    time.sleep(0.3)
    agent.kill9()
    before = len(r.items(name))
    agent = tt.Agent(cfg2, r.wd, tag=f"{name}-2")
    try:
        tt.wait_for(lambda: len(r.items(name)) - before >= 100, 15, step=0.1)
    finally:
        rc = agent.stop()
    resent = r.items(name)[before:]
    r.c.check(rc == 0 and len(resent) >= 100 and all(i["status"] == 409 for i in resent),
              f"{what}: run 2 sends every line again, each answered 409",
              f"rc {rc}, {len(resent)} items, statuses {sorted({i['status'] for i in resent})}")
    r.check_index(name, lines, what)


def replaced_while_down(r, truncated):
    name = "replaced-" + ("truncated" if truncated else "empty")
    what = "content replaced while stopped (" + ("after a truncation" if truncated
                                                  else "a file first seen empty") + ")"
    log = r.wd.path(f"{name}.log")
    old = [f"old content line {i}" for i in range(8)]
    a = [f"first content {i:02d}" for i in range(6)]
    b = [f"other content {i:02d}" for i in range(6)]  # the same lengths: the same offsets
    write(log, old if truncated else [], "w")
    cfg = r.config(name, [(name, log)], registry_flush="1h")
    agent = tt.Agent(cfg, r.wd, tag=f"{name}-1")
    want = list(a) + list(b)
    if truncated:
        r.c.check(r.wait_docs(name, len(old)), f"{what}: the old content arrives")
        open(log, "w").close()
        time.sleep(1.5)
        want += old
    else:
        time.sleep(1.5)  # found, opened and saved while empty
    write(log, a)
    r.c.check(r.wait_docs(name, len(want) - len(b)), f"{what}: run 1 indexes the content")
    agent.kill9()
    with open(log, "r+") as f:  # the same inode, other bytes
        f.truncate(0)
        f.write("".join(l + "\n" for l in b))
    agent = tt.Agent(cfg, r.wd, tag=f"{name}-2")
    try:
        r.wait_docs(name, len(want), timeout=10)
    finally:
        rc = agent.stop()
    r.c.check(rc == 0, f"{what}: run 2 stops with exit 0", f"rc {rc}")
    r.check_index(name, want, what)


def repeated(r, mode):
    name = f"repeat-{mode}"
    log = r.wd.path(f"{name}.log")
    lines = ["the same line"] * 50
    write(log, lines, "w")
    cfg = r.config(name, [(name, log)])
    if mode == "once":
        rc, _ = r.once(cfg)
        r.c.check(rc == 0, "repeated lines (--once): exit 0", f"rc {rc}")
    else:
        agent = tt.Agent(cfg, r.wd, tag=name)
        try:
            r.wait_docs(name, 50, timeout=10)
        finally:
            agent.stop()
    r.check_index(name, lines, f"repeated identical lines ({mode})")


def main():
    c = tt.Checks()
    wd = tt.Workdir("es-streams")
    rx = ht.Receiver(os.path.join(wd.root, "rx"), script="es_receiver.py")
    r = Rig(c, wd, rx)
    try:
        copytruncate_daemon(r)
        copytruncate_once(r)
        rotated(r, "once")
        rotated(r, "once-spool")
        rotated(r, "daemon")
        rotated(r, "spool")
        rotated(r, "once", dissect=True)
        rotated(r, "spool", dissect=True)
        stdin_twice(r, "once")
        stdin_twice(r, "daemon")
        spool_switch(r, spool_first=False)
        spool_switch(r, spool_first=True)
        replaced_while_down(r, truncated=False)
        replaced_while_down(r, truncated=True)
        repeated(r, "daemon")
        repeated(r, "once")
    finally:
        rx.stop()
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
