#!/usr/bin/env python3
"""SIGKILL during registry writes, 20 times (LF_SOAK=1: 100). The registry holds 50,000
entries besides the 4 live files (clean_removed: false keeps them), so a whole-file write
of it takes a while; lines are appended to the 4 files all along. A run writes the whole
file once, at its first flush, and then appends what changed to the journal,
<data_dir>/registry.log (docs/registry.md). Every other run is killed while registry.tmp
exists (inside that whole-file write), at a random point of it; the others are killed
just after one of their journal appends began (a torn record, or a whole one). Asserted
after every kill: the agent starts again (the registry on disk always loads, with all
50,000 other entries); each run began each file exactly at the offset the registry on disk
held when it started, so only events past the last acknowledged offset are sent again;
the offsets never go backwards. At the end: every line delivered, each file's first
arrivals in order."""
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
    journal = os.path.join(wd.data, "registry.log")

    def journal_state():
        try:
            st = os.stat(journal)
            return st.st_ino, st.st_size
        except OSError:
            return None

    during = 0
    appends = 0
    ended = None  # the run that ended by itself (refused to start), if any
    resumed_ok = 0
    resumed_bad = []
    backwards = []
    whole = 0
    last = {}
    saved = {}  # the offsets on disk when the running agent started
    before = out_files(wd.out)
    t0 = time.monotonic()
    for k in range(KILLS):
        # Every run's first write is a whole file; kill inside it, or after it, inside or
        # just after one of the journal appends that follow. Watched from the moment the
        # agent was started: a run that applies a journal writes the whole file at once,
        # often before it logs that it is following.
        seen = tt.wait_for(lambda: os.path.exists(tmp), 30, 0.001)
        if not a.alive():
            ended = k
            print(f"run {k + 1} ended by itself: {a.stderr().strip()[-300:]}")
            break
        if k % 2 == 0:
            time.sleep(rng.uniform(0, 0.004))
            in_write = os.path.exists(tmp)
            a.kill9()
            during += bool(seen and in_write)
        else:
            tt.wait_for(lambda: not os.path.exists(tmp), 30, 0.001)
            j0 = journal_state()
            grew = tt.wait_for(lambda: journal_state() != j0, 30, 0.0005)
            time.sleep(rng.uniform(0, 0.001))
            a.kill9()
            appends += bool(grew)
        # The run just killed began each file where the registry said when it started
        # (unless it was killed before it wrote any event).
        firsts = {}
        for name in sorted(out_files(wd.out) - before):
            for e in tt.read_events_file(os.path.join(wd.out, name)):
                firsts.setdefault(e["log"]["file"]["path"], e["log"]["offset"])
        if firsts and all(firsts[p] == saved.get(p, 0) for p in firsts):
            resumed_ok += 1
        elif firsts:
            resumed_bad.append((k, {os.path.basename(p): (firsts.get(p), saved.get(p))
                                    for p in paths}))
        offs, n = live_offsets(wd.data, paths)
        if offs is not None and n >= FAKE:
            whole += 1
        for p, o in (offs or {}).items():
            if o < last.get(p, 0):
                backwards.append((k, p, last[p], o))
            last[p] = o
        saved = dict(offs or {})
        before = out_files(wd.out)
        # A registry.tmp left by the kill would pass for the next run's write; the agent
        # ignores and replaces it (check_registry), so the test may remove it.
        if os.path.exists(tmp):
            os.unlink(tmp)
        a = tt.PipedAgent(config, wd, "regkill")
    print(f"{k + 1} kills in {time.monotonic() - t0:.1f} s, {during} while registry.tmp "
          f"existed, {appends} just after a journal append began")
    stop.set()
    th.join()
    total = counts[0]
    if ended is not None:
        c.check(False, "the agent always starts again", f"not after kill {ended}")
        a.kill9()
        wd.cleanup()
        c.finish()
    c.check(during >= KILLS // 4, "most kills meant for a whole-file write landed inside one",
            f"{during} of {KILLS // 2}")
    c.check(appends == KILLS // 2, "the other kills came just after a journal append began",
            f"{appends} of {KILLS // 2}")
    c.check(whole == KILLS, "after every kill the registry on disk is whole (all entries)",
            f"{whole} of {KILLS}")
    started = a.wait_log("following 1 inputs", 30) is not None and a.alive()
    c.check(started, "the agent always starts again", f"{KILLS} restarts, then {started}")
    c.check(not backwards, "acknowledged offsets never go backwards", f"{backwards[:3]}")
    c.check(not resumed_bad and resumed_ok >= KILLS // 2,
            "each run began exactly at the offsets saved before it (only unacknowledged "
            "events are sent again)", f"{resumed_ok} runs checked; {resumed_bad[:3]}")
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
