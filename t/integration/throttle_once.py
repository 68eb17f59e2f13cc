#!/usr/bin/env python3
"""The throttle and sample stages through the real binary, `logferry --once` over real
files (docs/processing.md "Throttling and sampling"):
- throttle keyed by pod: a chatty pod spread over two files of one input is held to its
  burst (the files draw on one bucket), in read order; a quiet pod and lines without the
  field (one shared, empty key) are untouched; counts are exact (rate 1/h: the bucket
  cannot refill during the run); the backfill's summary counts the dropped ones as
  filtered and throttled; the registry's offsets reach both files' ends (every dropped
  event acknowledged) and a second run reads nothing again;
- sample keyed by trace id: every trace's lines are kept or dropped together, about 1 in N
  traces is kept, and a second agent (fresh data dir) keeps exactly the same traces;
- two readers at once (two 33 MiB files: the backfill's read phases on every CPU) draw on
  one bucket under its lock: exactly its burst is kept of 68,384 lines, never more;
- --preview shows only the kept events;
- config mistakes (rate without a unit, action sample, a key on message) exit 2 with
  FILE:LINE:COL and the reason."""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402

LOGFERRY = tt.LOGFERRY


def config(wd, data, inputs):
    """inputs: [(id, glob, parsers YAML flow list)]."""
    lines = [f"data_dir: {json.dumps(data)}", "shutdown_timeout: 1s", "inputs:"]
    for iid, glob, parsers in inputs:
        lines += [f"  - id: {iid}", f"    paths: [{json.dumps(glob)}]",
                  f"    parsers: {parsers}"]
    lines += ["outputs:", f"  - {{name: local, type: file, path: {json.dumps(wd.out)}, "
              "compression: none}", 'metrics: {listen: ""}']
    path = os.path.join(wd.root, f"{os.path.basename(data)}.yml")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def once(conf):
    p = subprocess.run([LOGFERRY, "-c", conf, "--once"], capture_output=True, text=True,
                       timeout=300)
    return p.returncode, p.stderr


def pod_line(pod, n):
    obj = {"n": n, "msg": f"GET /items/{n} 200"}
    if pod is not None:
        obj["kubernetes"] = {"pod": {"name": pod}}
    return json.dumps(obj) + "\n"


def throttle_case(c, wd):
    a, b = wd.path("pods-a.log"), wd.path("pods-b.log")
    with open(a, "w") as f:  # web-1 is chatty; db-0 quiet; 5 lines without the field
        for i in range(600):
            f.write(pod_line("web-1", i))
            if i % 30 == 0:
                f.write(pod_line("db-0", i))
        for i in range(5):
            f.write(pod_line(None, 1000 + i))
    with open(b, "w") as f:
        for i in range(600, 1000):
            f.write(pod_line("web-1", i))
    conf = config(wd, os.path.join(wd.root, "data-t"),
                  [("pods", wd.path("pods-*.log"),
                    "[{ndjson: {}}, {throttle: {rate: 1/h, burst: 100, "
                    "key: '%{kubernetes.pod.name}'}}]")])
    rc, err = once(conf)
    c.check(rc == 0, "throttle: --once exits 0", f"rc={rc}\n{err[-2000:]}")
    events = tt.read_events(wd.out)
    by_pod = {}
    for e in events:
        pod = e.get("kubernetes", {}).get("pod", {}).get("name")
        by_pod.setdefault(pod, []).append(e["n"])
    web = by_pod.get("web-1", [])
    c.check(len(web) == 100, "throttle: the chatty pod is held to its burst of 100 over both "
            "files", f"got {len(web)}")
    c.check(web == list(range(100)), "throttle: the chatty pod's first 100 lines, in order, are "
            "the kept ones", f"{web[:5]} ... {web[-5:]}")
    c.check(sorted(by_pod.get("db-0", [])) == list(range(0, 600, 30)),
            "throttle: the quiet pod is untouched (20 of 20)", f"{len(by_pod.get('db-0', []))}")
    c.check(sorted(by_pod.get(None, [])) == list(range(1000, 1005)),
            "throttle: lines without the field share one bucket, within its burst (5 of 5)",
            f"{by_pod.get(None)}")
    # the summary's "events read" are those that passed the stages
    m = re.search(r"(\d+) events read, (\d+) filtered out \((\d+) throttled, (\d+) sampled out\), "
                  r"all acknowledged", err)
    c.check(m is not None and m.groups() == ("125", "900", "900", "0"),
            "throttle: the summary counts 125 passed, 900 filtered out, all 900 throttled, all "
            "acknowledged", m.group(0) if m else err[-800:])
    recs = tt.read_registry(os.path.join(wd.root, "data-t")) or []
    offs = {r["path"]: r["offset"] for r in recs}
    c.check(offs.get(a) == os.path.getsize(a) and offs.get(b) == os.path.getsize(b),
            "throttle: the registry's offsets reach both files' ends (dropped events "
            "acknowledged)", f"{offs} vs {os.path.getsize(a)}, {os.path.getsize(b)}")
    rc, err = once(conf)
    m = re.search(r"(\d+) events read", err)
    c.check(rc == 0 and m is not None and m.group(1) == "0",
            "throttle: a second run reads nothing again", m.group(0) if m else err[-500:])
    for name in os.listdir(wd.out):
        os.unlink(os.path.join(wd.out, name))


def sample_case(c, wd):
    path = wd.path("traces.log")
    traces = [f"{i * 2654435761 % (1 << 64):016x}{i:016x}" for i in range(2000)]
    with open(path, "w") as f:
        for rnd in range(5):  # a trace's 5 lines spread over the file, interleaved with others
            for i, t in enumerate(traces):
                f.write(json.dumps({"trace": {"id": t}, "span": rnd, "i": i}) + "\n")
    kept_sets = []
    for run in ("s1", "s2"):
        conf = config(wd, os.path.join(wd.root, "data-" + run),
                      [("traces", wd.path("traces.log"),
                        "[{ndjson: {}}, {sample: {rate: 10, key: '%{trace.id}'}}]")])
        rc, err = once(conf)
        c.check(rc == 0, f"sample ({run}): --once exits 0", f"rc={rc}\n{err[-1500:]}")
        events = tt.read_events(wd.out)
        spans = {}
        for e in events:
            spans.setdefault(e["trace"]["id"], []).append(e["span"])
        whole = all(sorted(v) == [0, 1, 2, 3, 4] for v in spans.values())
        c.check(whole, f"sample ({run}): every kept trace has all its 5 lines",
                str([(k, v) for k, v in spans.items() if sorted(v) != [0, 1, 2, 3, 4]][:3]))
        # 1 in 10 of 2000 traces: 200, standard deviation 13.4; 5 of them is far outside
        c.check(133 <= len(spans) <= 267, f"sample ({run}): about 1 trace in 10 is kept",
                f"{len(spans)} of 2000")
        m = re.search(r"(\d+) events read, (\d+) filtered out \((\d+) throttled, (\d+) sampled "
                      r"out\), all acknowledged", err)
        want = (str(len(events)), str(10000 - len(events)), "0", str(10000 - len(events)))
        c.check(m is not None and m.groups() == want,
                f"sample ({run}): the summary counts the left-out events as filtered and "
                "sampled out, all acknowledged", m.group(0) if m else err[-800:])
        kept_sets.append(set(spans))
        for name in os.listdir(wd.out):
            os.unlink(os.path.join(wd.out, name))
    c.check(len(kept_sets) == 2 and kept_sets[0] == kept_sets[1],
            "sample: a second agent with its own data dir keeps exactly the same traces")


def readers_case(c, wd):
    big = os.path.join(wd.root, "big")
    os.makedirs(big)
    # 64 MiB in two files or more start a reader per CPU; long lines keep the run short
    line = (b"2026-11-30 12:00:01.123 INFO [db.pool-1] GET /api/v1/items?id=12345 200 "
            b"trace=0af7651916cd43dd8448eb211c80319c " + b"x" * 900 + b"\n")
    n = 33 * 1024 * 1024 // len(line)
    for name in ("a.log", "b.log"):
        with open(os.path.join(big, name), "wb") as f:
            f.write(line * n)
    conf = config(wd, os.path.join(wd.root, "data-r"),
                  [("big", os.path.join(big, "*.log"), "[{throttle: {rate: 1/h, burst: 1000}}]")])
    p = subprocess.run([LOGFERRY, "-c", conf, "--once", "--log-level", "debug"],
                       capture_output=True, text=True, timeout=600)
    m = re.search(r"backfill: (\d+) reader\(s\) for (\d+) file\(s\)", p.stderr)
    readers = int(m.group(1)) if m else 0
    kept = tt.count_lines(wd.out)
    c.check(p.returncode == 0 and kept == 1000,
            f"two files read by {readers} reader(s) at once keep exactly the bucket's 1000 of "
            f"{2 * n} lines", f"rc={p.returncode} kept={kept}")
    m = re.search(r"(\d+) events read, (\d+) filtered out \((\d+) throttled", p.stderr)
    c.check(m is not None and m.groups() == ("1000", str(2 * n - 1000), str(2 * n - 1000)),
            "the readers' summary: 1000 passed, the rest filtered out and throttled",
            m.group(0) if m else p.stderr[-500:])
    shutil.rmtree(big)
    for name in os.listdir(wd.out):
        os.unlink(os.path.join(wd.out, name))


def preview_case(c, wd):
    path = wd.path("preview.txt")
    with open(path, "w") as f:
        for i in range(10):
            f.write(pod_line("p", i))
    conf = config(wd, os.path.join(wd.root, "data-p"),
                  [("pv", wd.path("preview.txt"),
                    "[{ndjson: {}}, {throttle: {rate: 1/h, burst: 3, "
                    "key: '%{kubernetes.pod.name}'}}, {sample: {rate: 2}}]")])
    p = subprocess.run([LOGFERRY, "-c", conf, "--preview", "pv", path], capture_output=True,
                       text=True, timeout=60)
    got = [json.loads(x)["n"] for x in p.stdout.splitlines() if x]
    c.check(p.returncode == 0 and got == [0, 2], "--preview prints only what throttle (3 of 10) "
            "then sample (1 in 2) keep", f"rc={p.returncode} {got} {p.stderr[-300:]}")


def errors_case(c, wd):
    cases = [
        ("{throttle: {rate: 1000}}", r"\.yml:6:\d+: .*rate.*expected events per second"),
        ("{throttle: {rate: 10/s, action: sample}}", r"\.yml:6:\d+: .*action sample is not "
         r"supported"),
        ("{throttle: {rate: 10/s, key: '%{message}'}}", r"\.yml:6:\d+: .*%\{message\}.*the agent "
         r"writes that key itself"),
        ("{sample: {rate: 0}}", r"\.yml:6:\d+: .*rate"),
    ]
    for parsers, want in cases:
        conf = config(wd, os.path.join(wd.root, "data-e"), [("e", wd.path("none.log"),
                                                             f"[{parsers}]")])
        rc, err = once(conf)
        c.check(rc == 2 and re.search(want, err) is not None,
                f"config error {parsers}: exit 2 naming FILE:LINE:COL and the reason",
                f"rc={rc} {err.strip()[-400:]}")


def main():
    c = tt.Checks()
    wd = tt.Workdir("throttle")
    os.makedirs(wd.out)
    try:
        throttle_case(c, wd)
        sample_case(c, wd)
        readers_case(c, wd)
        preview_case(c, wd)
        errors_case(c, wd)
    finally:
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
