#!/usr/bin/env python3
"""SIGKILL during registry writes, 20 times (LF_SOAK=1: 100). The registry holds 50,000
entries besides the 4 live files (clean_removed: false keeps them), so each write of it
takes a while; lines are appended to the 4 files all along, and the agent is killed while
<data_dir>/registry.tmp exists (a write in progress), at a random point of it, then
restarted at once. Asserted after every kill: the agent starts again (no torn registry is
ever left: the file on disk always loads, with all 50,000 other entries); a restarted agent
resumes each file exactly at the offset the registry on disk holds, so only events past
the last acknowledged offset are sent again; the offsets never go backwards. At the end:
every line delivered, each file's first arrivals in order."""
import os
import random
import sys
import threading
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402

KILLS = 100 if tt.SOAK else 20
FAKE = 50000
FILES = 4


def write_fake_registry(data_dir):
    os.makedirs(data_dir, exist_ok=True)
    body = [f"logferry-registry 1 {FAKE}\n"]
    for i in range(FAKE):
        body.append(f"kill\t1\t{i + 1}\t0\t0000000000000000\t{i}\t1700000000000\t"
                    f"/nonexistent/old-{i:06d}.log\n")
    data = "".join(body).encode()
    with open(os.path.join(data_dir, "registry"), "wb") as f:
        f.write(data + b"end %08x\n" % zlib.crc32(data))


def writer(paths, stop, counts):
    handles = [open(p, "a", buffering=1) for p in paths]
    n = 0
    while not stop.is_set():
        for k, f in enumerate(handles):
            f.write("".join(f"f{k} {i:08d}\n" for i in range(n, n + 20)))
        n += 20
        counts[0] = n
        time.sleep(0.005)
    for f in handles:
        f.close()


def live_offsets(data_dir, paths):
    recs = tt.read_registry(data_dir)
    if recs is None:
        return None, None
    return {r["path"]: r["offset"] for r in recs if r["path"] in paths}, len(recs)


def out_files(out):
    return set(n for n in os.listdir(out)) if os.path.isdir(out) else set()


def main():
    c = tt.Checks()
    rng = random.Random(int(os.environ.get("LF_SEED", "11")))
    wd = tt.Workdir("regkill")
    paths = [wd.path(f"f{k}.log") for k in range(FILES)]
    for p in paths:
        open(p, "w").close()
    write_fake_registry(wd.data)
    config = tt.write_config(wd, [{"id": "kill", "paths": [wd.path("*.log")]}],
                             registry_flush="100ms")
    tt.edit_config(config, "registry: {flush_interval: 100ms}",
                   "registry: {flush_interval: 100ms, clean_removed: false}")
    stop = threading.Event()
    counts = [0]
    th = threading.Thread(target=writer, args=(paths, stop, counts))
    th.start()
    a = tt.PipedAgent(config, wd, "regkill")
    tmp = os.path.join(wd.data, "registry.tmp")
    during = 0
    restart_ok = 0
    resumed_ok = 0
    resumed_bad = []
    backwards = []
    whole = 0
    last = {}
    t0 = time.monotonic()
    for k in range(KILLS):
        # Wait for a registry write to begin, then kill within it at a random point.
        seen = tt.wait_for(lambda: os.path.exists(tmp), 30, 0.001)
        time.sleep(rng.uniform(0, 0.004))
        in_write = os.path.exists(tmp)
        a.kill9()
        during += bool(seen and in_write)
        offs, n = live_offsets(wd.data, paths)
        if offs is not None and n >= FAKE:
            whole += 1
        for p, o in (offs or {}).items():
            if o < last.get(p, 0):
                backwards.append((k, p, last[p], o))
            last[p] = o
        before = out_files(wd.out)
        a = tt.PipedAgent(config, wd, "regkill")
        started = a.wait_log("following 1 inputs", 30) is not None and a.alive()
        restart_ok += started
        if not started:
            print(f"kill {k + 1}: the agent did not start again: {a.stderr().strip()[-300:]}")
            break
        # The new run's first event of each file starts at the saved offset.
        def first_offsets():
            firsts = {}
            for name in sorted(out_files(wd.out) - before):
                for e in tt.read_events_file(os.path.join(wd.out, name)):
                    firsts.setdefault(e["log"]["file"]["path"], e["log"]["offset"])
            return firsts
        firsts = {}
        tt.wait_for(lambda: len(firsts.update(first_offsets()) or firsts) == FILES, 30, 0.05)
        if all(firsts.get(p) == (offs or {}).get(p, 0) for p in paths):
            resumed_ok += 1
        else:
            resumed_bad.append((k, {os.path.basename(p): (firsts.get(p), (offs or {}).get(p))
                                    for p in paths}))
    print(f"{k + 1} kills in {time.monotonic() - t0:.1f} s, {during} while registry.tmp existed")
    stop.set()
    th.join()
    total = counts[0]
    if restart_ok < k + 1:
        c.check(False, "the agent always starts again", f"not after kill {k + 1}")
        a.kill9()
        wd.cleanup()
        c.finish()
    c.check(during >= KILLS // 2, "most kills landed inside a registry write",
            f"{during} of {KILLS}")
    c.check(whole == KILLS, "after every kill the registry on disk is whole (all entries)",
            f"{whole} of {KILLS}")
    c.check(restart_ok == KILLS, "the agent always starts again", f"{restart_ok} of {KILLS}")
    c.check(not backwards, "acknowledged offsets never go backwards", f"{backwards[:3]}")
    c.check(resumed_ok == KILLS, "each restart resumes exactly at the saved offsets "
            "(only unacknowledged events are sent again)", f"{resumed_bad[:3]}")
    sizes = {p: os.path.getsize(p) for p in paths}
    done = tt.wait_for(lambda: (live_offsets(wd.data, paths)[0] or {}) == sizes, 90, 0.2)
    c.check(done, "the registry reaches the end of every file",
            f"{live_offsets(wd.data, paths)[0]} vs {sizes}")
    c.check(a.stop() == 0, "the final SIGTERM exits 0", f"rc={a.rc}")
    by = tt.messages_by_path(tt.read_events(wd.out, []))
    lost = dups = order = 0
    for k, p in enumerate(paths):
        expected = [f"f{k} {i:08d}" for i in range(total)]
        missing, d, o = tt.compare_streams(expected, by.get(p, []))
        lost += len(missing)
        dups += d
        order += o
    print(f"{FILES * total} lines written, {dups} sent twice")
    c.check(lost == 0, "every line delivered", f"{lost} lost")
    c.check(order == 0, "first arrivals in file order", f"{order} out of order")
    wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
