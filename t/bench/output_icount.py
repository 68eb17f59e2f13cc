#!/usr/bin/env python3
"""Instructions per event of each network output, against the file output's NDJSON.

Runs `logferry --once` under callgrind (valgrind) over one generated file into the local
receivers of local_receivers.py (http_receiver.py, es_receiver.py, the mock Kafka cluster),
and into a file (format json, compression none) for the reference. Instruction counts do
not move with the load of a shared machine, so two builds (or two commits) compare in one
run where CPU seconds would not. Prints per output: the agent's instructions per event in
all (start-up included, so use enough lines), the difference to the file output, and the
inclusive instructions per event of the functions named with --funcs (callgrind_annotate
--inclusive=yes), which say where the difference goes.

    t/bench/output_icount.py --builddir BUILD [--lines N] [--only file,http,elasticsearch]
        [--funcs es_send,lf_batch_ndjson] [--keep DIR] [--extra 'KEY: VALUE, ...']

Not part of `make check`: a run of 50,000 lines takes about a minute per output. A release
build (`../configure CFLAGS="-O2 -g"`) gives the figures worth quoting; valgrind is needed.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

import local_receivers as ob  # noqa: E402  (the generator, config and receivers)
import tailtest as tt  # noqa: E402

FUNCS = ["lf_batch_add", "lf_event_encode_cached", "lf_batch_ndjson", "lf_batch_gzip", "lf_batch_zstd", "lf_httpc_gzip", "es_send",
         "build_body", "append_action", "document_id", "read_items", "loki_send",
         "kafka_send", "rd_kafka_produce", "rd_kafka_produce_batch", "rd_kafka_poll",
         "file_write", "lf_httpc_submit", "curl_multi_perform", "__memcpy_avx_unaligned_erms"]


class File:
    """The reference: NDJSON into a file, no compression."""

    def __init__(self, root, kind):
        self.dir = os.path.join(root, "out")
        os.makedirs(self.dir)

    def output(self, comp, mif):
        return f"{{name: out, type: file, path: \"{self.dir}\", compression: none}}"

    def count(self):
        n = 0
        for name in os.listdir(self.dir):
            with open(os.path.join(self.dir, name), "rb") as f:
                n += sum(1 for _ in f)
        return n

    def close(self):
        pass


def parse_forms(text):
    """[(kind, compression)] of "http:none,elasticsearch:gzip" (none if no compression)."""
    out = []
    for item in text.split(","):
        kind, _, comp = item.partition(":")
        out.append((kind, comp or "none"))
    return out


def run_one(args, log, lines, kind, comp):
    """(total instructions, {function: inclusive instructions}) of one run."""
    root = tempfile.mkdtemp(prefix="lf-icount-")
    rx = File(root, kind) if kind == "file" else ob.RECEIVERS[kind](root, kind)
    out = os.path.join(args.keep or root, f"callgrind.{kind}.{comp}.{lines}.out")
    try:
        out_yaml = rx.output(comp, 1)
        if args.extra:  # more keys in the output's flow mapping
            out_yaml = out_yaml[:-1] + ", " + args.extra + "}"
        cfg = ob.config(root, log, out_yaml)
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                        args.logferry, "-c", cfg, "--once"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        tt.wait_for(lambda: rx.count() >= lines, 30, step=0.2)
        got = rx.count()
        if got != lines:
            raise SystemExit(f"{kind} {comp}: {got} of {lines} events arrived")
        ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out],
                             check=True, capture_output=True, text=True).stdout
        total = None
        per = {}
        for line in ann.splitlines():
            m = re.match(r"\s*([\d,]+)\s+(?:\(\s*[\d.]+%\)\s+)?(?:PROGRAM TOTALS|(\S+):(\S+))",
                         line)
            if not m:
                continue
            ir = int(m.group(1).replace(",", ""))
            if m.group(2) is None:
                total = ir
            else:
                fn = m.group(3).split("'")[0].split(".")[0]
                per[fn] = max(per.get(fn, 0), ir)
        return total, per
    finally:
        rx.close()
        if not args.keep:
            subprocess.run(["rm", "-rf", root], check=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--builddir", required=True)
    ap.add_argument("--lines", type=int, default=50000)
    ap.add_argument("--only", default="file,http:none,http:gzip,http:zstd,loki:none,"
                    "loki:gzip,elasticsearch:none,elasticsearch:gzip,kafka:none")
    ap.add_argument("--funcs", default=",".join(FUNCS))
    ap.add_argument("--keep", help="directory that keeps the callgrind files")
    ap.add_argument("--extra", help="YAML keys added to each output, as 'acks: \"1\"'")
    args = ap.parse_args()
    args.logferry = os.path.join(args.builddir, "logferry")
    os.environ["LOGFERRY"] = args.logferry
    os.environ["LF_BUILDDIR"] = args.builddir
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    work = tempfile.mkdtemp(prefix="lf-icount-input-")
    small = args.lines // 5
    logs = {}
    for n in (small, args.lines):
        logs[n] = os.path.join(work, f"bench.{n}.log")
        ob.generate(logs[n], n)
    print(f"{args.lines} and {small} events of 100 bytes; instructions per event more "
          f"(callgrind, all threads, start-up taken out)")
    print(f"{'output':14s} {'comp':>5s} {'instr/ev':>9s} {'vs file':>9s} {'ratio':>6s}")
    funcs = [f for f in args.funcs.split(",") if f]
    try:
        base = None
        for kind, comp in parse_forms(args.only):
            t1, p1 = run_one(args, logs[small], small, kind, comp)
            t2, p2 = run_one(args, logs[args.lines], args.lines, kind, comp)
            d = args.lines - small
            ipe = (t2 - t1) / d
            per = {fn: (p2.get(fn, 0) - p1.get(fn, 0)) / d for fn in p2}
            if kind == "file":
                base = ipe
            diff = f"{ipe - base:+9.0f}" if base is not None else f"{'':>9s}"
            ratio = f"{ipe / base:5.2f}x" if base else ""
            print(f"{kind:14s} {comp:>5s} {ipe:9.0f} {diff} {ratio:>6s}", flush=True)
            for fn in funcs:
                if per.get(fn, 0) >= 1:
                    print(f"    {fn:40s} {per[fn]:9.0f}", flush=True)
    finally:
        subprocess.run(["rm", "-rf", work], check=False)


if __name__ == "__main__":
    main()
