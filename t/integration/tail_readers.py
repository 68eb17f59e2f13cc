#!/usr/bin/env python3
"""The daemon reads files with a backlog on a thread per CPU (read phases).

Seven files under two inputs, five of them with a backlog of several MB, written to the
file output in text form, whose writes fail at first (RLIMIT_FSIZE of 4 KiB), so the
readers block in the middle of the backlog:
- the agent says it reads the backlog with a thread per CPU (at most 8), or, under
  `taskset -c 0`, never does;
- while the output refuses: lines are appended to every file, one file is rotated
  (renamed, made again), and a SIGHUP reloads a changed configuration; then the limit is
  lifted;
- the reload goes through (the readers are stopped for it and start again after it), a
  SIGTERM in the middle of the backlog exits 0, and a second run reads the rest;
- every line written arrives exactly once over the two runs, each file's lines in their
  order, and the registry ends at every file's size.
Before those, `moving`: a file that moves from one reading thread to another between two
phases arrives complete, once, in order."""
import os
import re
import resource
import signal
import subprocess
import sys
import time

import tailtest as tt

BIG = 60000    # lines of each file with a backlog (about 6 MB)
SMALL = 300
APPEND = 2000


def line(tag, i):
    return f"{tag} {i:07d} " + "abcdefghij" * (6 + (i * 7) % 5)


def write_lines(path, tag, start, n, mode="a"):
    with open(path, mode) as f:
        f.write("".join(line(tag, i) + "\n" for i in range(start, start + n)))
    return start + n


def config(wd, flush):
    path = os.path.join(wd.root, "logferry.yml")
    with open(path, "w") as f:
        f.write(f"""data_dir: {tt.yaml_str(wd.data)}
shutdown_timeout: 20s
inputs:
  - id: app
    paths: [{tt.yaml_str(wd.path("*.log*"))}]
    scan_interval: 200ms
  - id: other
    paths: [{tt.yaml_str(wd.path("b", "*.txt"))}]
    scan_interval: 200ms
outputs:
  - name: local
    type: file
    path: {tt.yaml_str(wd.out)}
    format: text
    compression: none
queue: {{batch: {{flush_interval: {flush}}}}}
registry: {{flush_interval: 200ms}}
metrics: {{listen: ""}}
logging: {{level: debug}}
""")
    return path


def output_lines(out_dir):
    data = b""
    for name in sorted(os.listdir(out_dir)) if os.path.isdir(out_dir) else []:
        with open(os.path.join(out_dir, name), "rb") as f:
            data += f.read()
    return data.decode().split("\n")[:-1]


def check_output(c, label, got, want):
    """Every line of want (tag -> count) exactly once, each tag's in order."""
    nxt = {}
    bad = []
    for ln in got:
        tag, num = ln.split(" ", 2)[:2]
        n = int(num)
        if n != nxt.get(tag, 0):
            bad.append((tag, n, nxt.get(tag, 0)))
        nxt[tag] = n + 1
    c.check(not bad, f"{label}: each file's lines once and in order",
            f"{len(bad)} breaks, first {bad[:3]}" if bad else f"{len(got)} lines")
    c.check(nxt == want, f"{label}: every line arrived",
            "" if nxt == want else f"got {nxt}, want {want}")


def limit_fsize():
    """A preexec_fn: a soft RLIMIT_FSIZE of 4 KiB (lifted later with prlimit), SIGXFSZ
    ignored, so the file output's writes fail with EFBIG."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))


def spread_lines(agent):
    return re.findall(r"(\d+) files have a backlog: reading them with (\d+) threads",
                      agent.stderr())


def usable_cpus(prefix):
    if prefix:
        return 1
    return min(len(os.sched_getaffinity(0)), 8)


def scenario(c, label, prefix):
    wd = tt.Workdir(f"readers-{label}")
    os.makedirs(wd.path("b"))
    files = {"a0": wd.path("a0.log"), "a1": wd.path("a1.log"), "a2": wd.path("a2.log"),
             "rot": wd.path("rot.log"), "s0": wd.path("s0.log"),
             "b0": wd.path("b", "b0.txt"), "s1": wd.path("b", "s1.txt")}
    want = {}
    for tag, path in files.items():
        want[tag] = write_lines(path, tag, 0, SMALL if tag.startswith("s") else BIG, "w")
    conf = config(wd, "100ms")
    cpus = usable_cpus(prefix)

    a = tt.Agent(conf, wd, tag="run1", preexec=limit_fsize, argv_prefix=prefix)
    blocked = tt.wait_stderr(a, "File too large", timeout=30)  # the first refusal
    c.check(blocked, f"{label}: the output refuses while RLIMIT_FSIZE is 4 KiB")
    if cpus >= 2:
        c.check(tt.wait_for(lambda: spread_lines(a), 30),
                f"{label}: the backlog is read with a thread per CPU",
                f"{spread_lines(a)}, {cpus} CPUs")
        found = spread_lines(a)
        c.check(bool(found) and int(found[0][1]) == cpus,
                f"{label}: as many threads as usable CPUs ({cpus})", f"{found}")
    # While the readers wait for the output: appends, a rotation, a reload.
    for tag in ("a0", "a1", "a2", "b0", "s0", "s1"):
        want[tag] = write_lines(files[tag], tag, want[tag], APPEND)
    os.rename(files["rot"], files["rot"] + ".1")  # rotated: still matches *.log*
    want["rot2"] = write_lines(files["rot"], "rot2", 0, APPEND, "w")
    time.sleep(0.5)  # the scan sees the rename
    tt.edit_config(conf, "flush_interval: 100ms", "flush_interval: 150ms")
    a.proc.send_signal(signal.SIGHUP)
    time.sleep(0.3)
    c.check(tt.set_rlimit_fsize(a.pid, None) == 0, f"{label}: the limit is lifted")
    c.check(tt.wait_stderr(a, "reload 1: ", timeout=60) and "applied in" in a.stderr(),
            f"{label}: the reload is applied once the output takes the backlog",
            a.stderr()[-400:])
    total = sum(want.values())
    c.check(len(tt.wait_for(lambda: output_lines(wd.out) if len(output_lines(wd.out)) >= total
                            else None, 60) or []) == total,
            f"{label}: everything written so far arrives")
    # A second backlog, held up by the output again; SIGTERM in the middle of it.
    tt.set_rlimit_fsize(a.pid, 4096)
    for tag in ("a0", "a1", "b0"):
        want[tag] = write_lines(files[tag], tag, want[tag], BIG)
    total = sum(want.values())

    def settled():
        n = len(output_lines(wd.out))
        time.sleep(1.0)
        return n == len(output_lines(wd.out))
    tt.wait_for(settled, 30)
    a.proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    tt.set_rlimit_fsize(a.pid, None)  # what was read is delivered as it stops
    rc = a.stop(timeout=60)
    c.check(rc == 0, f"{label}: SIGTERM in the backlog exits 0", f"rc {rc}")
    got1 = len(output_lines(wd.out))
    c.check(got1 < total, f"{label}: the first run stopped with a backlog left",
            f"{got1} of {total} lines")
    if cpus >= 2:
        c.check(len(spread_lines(a)) >= 2, f"{label}: the readers start again after the reload",
                f"{len(spread_lines(a))} start(s)")
    else:
        c.check(not spread_lines(a), f"{label}: one CPU: no reading threads",
                f"{spread_lines(a)}")
    b = tt.Agent(conf, wd, tag="run2", argv_prefix=prefix)
    tt.wait_for(lambda: len(output_lines(wd.out)) >= total, 120)
    time.sleep(0.5)  # nothing more may come
    rc = b.stop(timeout=60)
    c.check(rc == 0, f"{label}: the second run exits 0", f"rc {rc}")
    check_output(c, label, output_lines(wd.out), want)
    print(f"{label}: {got1} of {total} lines in the first run")
    paths = list(files.values()) + [files["rot"] + ".1"]
    sizes = {os.stat(p).st_ino: (p, os.path.getsize(p)) for p in paths}
    regs = {r["ino"]: r["offset"] for r in tt.read_registry(wd.data) or []}
    wrong = [(p, regs.get(ino), size) for ino, (p, size) in sizes.items()
             if regs.get(ino) != size]
    c.check(not wrong, f"{label}: the registry ends at every file's size", f"{wrong}")
    errs = [ln for ln in (a.stderr() + b.stderr()).splitlines()
            if " error " in ln and "local" not in ln]
    c.check(not errs, f"{label}: nothing else logged as an error", f"{errs[:3]}")
    wd.cleanup()


def moving(c):
    """A file moves from one reading thread to another between two phases: four files with
    a backlog, in path order big, small, big, small, so that the first phase gives both big
    ones to reading thread 0 and both small ones to thread 1. The small ones are read to
    their end first; the next phase has two files for two threads, so the second big file,
    m2.log, moves to thread 1 (the log says so at debug level). The first big file is of the
    other input, so thread 0's open batch of m2.log's input is left with m2.log's last lines
    of the first phase while thread 1 pushes its next ones. m2.log's lines, and every other
    file's, must arrive complete, once, in order."""
    cpus = usable_cpus([])
    if cpus < 2:
        print("moving: one usable CPU: no reading threads, nothing can move")
        return
    wd = tt.Workdir("readers-moving")
    os.makedirs(wd.path("b"))
    # The small ones hold more than a phase reads of a file (4 MiB), so the move comes after
    # a phase that pushed m2.log's lines into thread 0 with no timed cut since.
    files = {"x0": (wd.path("b", "x0.txt"), 4 * BIG), "m1": (wd.path("m1.log"), 70000),
             "m2": (wd.path("m2.log"), 4 * BIG), "m3": (wd.path("m3.log"), 70000)}
    for tag, (path, n) in files.items():
        write_lines(path, tag, 0, n, "w")
    conf = config(wd, "3s")  # a batch stays open in its producer until cut, or full
    a = tt.Agent(conf, wd, tag="moving")
    total = sum(n for _, n in files.values())
    tt.wait_for(lambda: len(output_lines(wd.out)) >= total, 120)
    moved = re.findall(r"(\S+) moves to reading thread (\d+)", a.stderr())
    c.check(any(p == files["m2"][0] for p, _ in moved),
            "moving: m2.log moves to another reading thread", f"{moved}; {spread_lines(a)}")
    time.sleep(0.5)  # nothing more may come
    rc = a.stop(timeout=60)
    c.check(rc == 0, "moving: SIGTERM exits 0", f"rc {rc}")
    got = {}
    for ln in output_lines(wd.out):
        got.setdefault(ln.split(" ", 1)[0], []).append(ln)
    for tag, (path, n) in files.items():
        want = [line(tag, i) for i in range(n)]
        have = got.get(tag, [])
        first = next((i for i, (x, y) in enumerate(zip(have, want)) if x != y), None)
        c.check(have == want, f"moving: {os.path.basename(path)} arrives complete, once, in order",
                f"{len(have)} of {n} lines" + ("" if first is None else
                                               f", first difference at line {first}: "
                                               f"{have[first][:30]!r}, want {want[first][:30]!r}"))
    wd.cleanup()


def main():
    c = tt.Checks()
    moving(c)
    scenario(c, "spread", [])
    scenario(c, "one-cpu", ["taskset", "-c", "0"])
    c.finish()


if __name__ == "__main__":
    main()
