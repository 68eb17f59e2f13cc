#!/usr/bin/env python3
"""`--once` is the tail engine run to the end of every file: what the daemon's settings mean
for a backfill.

Seven small files under one input with `max_open_files: 2` and `start_at: end`, a link to a
file outside `allowed_roots`, written to the file output in text form:
- every line of every file arrives once, in path order (a small backfill is read file after
  file), the file without a final newline included: two files open at a time, each closed
  at its end so the next can open, and `start_at: end` does not apply to a backfill;
- the link is refused with its warning and read nothing; the summary counts 8 files, none
  unreadable; the exit code is 0;
- a second run after lines were appended to two files sends exactly those lines: every
  file's offset reached the registry, the unterminated last line's included."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

LOGFERRY = os.environ.get("LOGFERRY", "./logferry")
SIZES = [300, 5, 0, 1200, 40, 700, 9]  # lines per file; file 4 ends without '\n'


def run(conf):
    p = subprocess.run([LOGFERRY, "-c", conf, "--once"], capture_output=True, text=True,
                       timeout=60)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        raise SystemExit(f"FAIL: logferry exited {p.returncode}")
    return p.stderr


def output(out):
    data = b"".join(open(os.path.join(out, f), "rb").read() for f in sorted(os.listdir(out)))
    return data.decode().split("\n")[:-1]


def main():
    root = tempfile.mkdtemp(prefix="lf-once-engine-")
    failed = 0
    try:
        logs = os.path.join(root, "logs")
        os.makedirs(logs)
        os.makedirs(os.path.join(root, "outside"))
        want = []
        for k, n in enumerate(SIZES):
            lines = [f"f{k} {i:05d} " + "x" * (i % 50) for i in range(n)]
            with open(os.path.join(logs, f"app-{k}.log"), "w") as f:
                f.write("\n".join(lines) + ("\n" if lines and k != 4 else ""))
            want += lines
        with open(os.path.join(root, "outside", "secret.log"), "w") as f:
            f.write("secret\n")
        os.symlink(os.path.join(root, "outside", "secret.log"), os.path.join(logs, "app-9.log"))
        conf = os.path.join(root, "once.yml")
        out = os.path.join(root, "out")
        with open(conf, "w") as f:
            f.write(f"data_dir: {root}/data\nmetrics: {{listen: \"\"}}\n"
                    f"inputs:\n  - id: logs\n    paths: [\"{logs}/*.log\"]\n"
                    f"    max_open_files: 2\n    start_at: end\n"
                    f"    allowed_roots: [{logs}]\n"
                    f"outputs:\n  - name: local\n    type: file\n    path: {out}\n"
                    f"    format: text\n    compression: none\n")

        err = run(conf)
        got = output(out)
        if got != want:
            failed += 1
            print(f"FAIL: first run: {len(got)} lines, {len(want)} expected in path order")
        else:
            print(f"ok: {len(got)} lines of {len(SIZES)} files, in path order, two files open "
                  f"at a time, start_at: end not applied")
        if not re.search(r"refusing \S*app-9\.log: its real path \S*secret\.log is outside "
                         r"allowed_roots", err):
            failed += 1
            print("FAIL: no 'refusing' warning for the link outside allowed_roots")
        else:
            print("ok: the link outside allowed_roots is refused")
        m = re.search(r"backfill done: (\d+) files \((\d+) unreadable\), (\d+) events read", err)
        if m is None or m.groups() != ("8", "0", str(len(want))):
            failed += 1
            sys.stderr.write(err)
            print(f"FAIL: summary {m.groups() if m else None}, expected 8 files, 0 unreadable, "
                  f"{len(want)} events")
        else:
            print("ok: the summary counts 8 files, 0 unreadable")

        with open(os.path.join(logs, "app-4.log"), "a") as f:
            f.write("f4 more\n")  # after the unterminated line sent at the end
        with open(os.path.join(logs, "app-6.log"), "a") as f:
            f.write("f6 more\n")
        shutil.rmtree(out)
        err = run(conf)
        got = output(out)
        if got != ["f4 more", "f6 more"]:
            failed += 1
            print(f"FAIL: second run sent {got[:5]}..., expected the two appended lines")
        else:
            print("ok: a second run sends only what was appended")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{4 - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
