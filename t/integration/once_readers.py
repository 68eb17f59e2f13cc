#!/usr/bin/env python3
"""`--once` with several readers: one per CPU the process may run on, at most one per file,
once there are 64 MiB to read.

Six files of 89 MB in all (one empty, one without a final newline) under one input,
written to the file output in text form:
- with every CPU allowed, the agent says how many readers it started (as many as CPUs,
  files and the cap of 8 allow), every line arrives once, each file's lines in their
  order, and with two readers or more the files' batches interleave in the output;
- under `taskset -c 0` one reader reads the files one after the other;
- a second run over the same files reads nothing: every reader's offsets reached the
  registry;
- three small files (under 64 MiB in all) are read by one reader, in path order."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

LOGFERRY = os.environ.get("LOGFERRY", "./logferry")
SIZES = [80000, 0, 80000, 50000, 80000, 60001]  # lines per file; file 5 ends without '\n'
SMALL = [3000, 2000, 1000]


def make_inputs(root, sub, sizes, width):
    os.makedirs(os.path.join(root, sub))
    want = {}
    for k, n in enumerate(sizes):
        lines = [f"f{k} {i:06d} " + "abcdefghij" * (width + (i * 7 + k) % 40) for i in range(n)]
        data = "\n".join(lines) + ("\n" if lines and k != 5 else "")
        with open(os.path.join(root, sub, f"app-{k}.log"), "w") as f:
            f.write(data)
        want[f"f{k}"] = lines
    return want


def config(root, name, sub="in"):
    path = os.path.join(root, f"{name}.yml")
    with open(path, "w") as f:
        f.write(f"data_dir: {root}/data-{name}\n"
                f"metrics: {{listen: \"\"}}\n"
                f"inputs:\n  - id: logs\n    paths: [\"{root}/{sub}/*.log\"]\n"
                f"outputs:\n  - name: local\n    type: file\n    path: {root}/out-{name}\n"
                f"    format: text\n    compression: none\n")
    return path


def run(conf, prefix=()):
    p = subprocess.run(list(prefix) + [LOGFERRY, "-c", conf, "--once", "--log-level", "debug"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        raise SystemExit(f"FAIL: logferry exited {p.returncode}")
    m = re.search(r"backfill: (\d+) reader\(s\) for (\d+) file\(s\)", p.stderr)
    if m is None:
        sys.stderr.write(p.stderr)
        raise SystemExit("FAIL: no 'backfill: N reader(s)' line at debug level")
    return int(m.group(1)), int(m.group(2)), p.stderr


def output_lines(root, name):
    out = os.path.join(root, f"out-{name}")
    data = b"".join(open(os.path.join(out, f), "rb").read() for f in sorted(os.listdir(out)))
    return data.decode().split("\n")[:-1]


def check(want, got, label):
    """Every line once, each file's in order; returns the number of times the output moves
    from one file's line to another's."""
    per = {}
    switches = 0
    prev = None
    for line in got:
        fid = line.split(" ", 1)[0]
        per.setdefault(fid, []).append(line)
        if prev is not None and fid != prev:
            switches += 1
        prev = fid
    for fid, lines in want.items():
        have = per.pop(fid, [])
        if have != lines:
            raise SystemExit(f"FAIL: {label}: {fid}: {len(have)} lines, {len(lines)} expected, "
                             f"or not in order")
    if per:
        raise SystemExit(f"FAIL: {label}: lines of unknown files {sorted(per)}")
    return switches


def main():
    cpus = len(os.sched_getaffinity(0))
    root = tempfile.mkdtemp(prefix="lf-readers-")
    try:
        want = make_inputs(root, "in", SIZES, 5)
        nonempty = sum(1 for n in SIZES if n)
        total = sum(SIZES)

        readers, files, _ = run(config(root, "all"))
        expect = min(cpus, len(SIZES), 8)
        if (readers, files) != (expect, len(SIZES)):
            raise SystemExit(f"FAIL: {readers} readers for {files} files; expected {expect} "
                             f"for {len(SIZES)} ({cpus} CPUs allowed)")
        switches = check(want, output_lines(root, "all"), "all CPUs")
        print(f"ok: {readers} readers, {total} lines in {len(SIZES)} files, in order per file, "
              f"{switches} switches between files")
        if readers >= 2 and switches <= nonempty - 1:
            raise SystemExit(f"FAIL: {readers} readers but the files came one after the other "
                             f"({switches} switches)")

        readers, _, _ = run(config(root, "one"), ("taskset", "-c", "0"))
        switches = check(want, output_lines(root, "one"), "one CPU")
        if readers != 1 or switches != nonempty - 1:
            raise SystemExit(f"FAIL: taskset -c 0: {readers} readers, {switches} switches; "
                             f"expected 1 reader, {nonempty - 1} switches")
        print(f"ok: taskset -c 0: 1 reader, the files one after the other")

        shutil.rmtree(os.path.join(root, "out-all"))
        _, _, err = run(config(root, "all"))
        if not re.search(r"backfill done: 6 files \(0 unreadable\), 0 events read", err):
            sys.stderr.write(err)
            raise SystemExit("FAIL: the second run read again what the first delivered")
        print("ok: a second run reads nothing: every reader's offsets were saved")

        small = make_inputs(root, "small", SMALL, 1)
        readers, files, _ = run(config(root, "small", "small"))
        got = output_lines(root, "small")
        check(small, got, "small")
        if (readers, files) != (1, 3) or got != small["f0"] + small["f1"] + small["f2"]:
            raise SystemExit(f"FAIL: a small backfill: {readers} readers for {files} files, "
                             f"or not in path order")
        print("ok: a small backfill: 1 reader, the files in path order")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("4 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
