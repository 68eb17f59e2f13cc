#!/usr/bin/env python3
"""Crashes and restarts of a daemon following a journal directory (journaltest.py).

kill -9      100,000 entries are written over time in batches into two journals of one
             directory (system.journal and user-1000.journal, one boot each, batches
             alternating) while the daemon ships them to es_receiver.py (elasticsearch output,
             document_id auto: _id from input id + stream id + offset); it is killed -9 and
             started again 10 times at random moments. At the end the index holds exactly
             100,000 documents, each equal to its entry, first stored in journal order per
             journal; no 409 ever refused another event than the one stored (a clash: an _id
             given to two entries). Nothing lost, nothing doubled.
SIGTERM      a daemon with a file output stopped with SIGTERM and started again 6 times,
             entries written while it runs and while it is stopped: every entry exactly
             once, in order, log.offset 0..n-1 across the restarts (one stream).

LF_SEED=N repeats a run's random moments."""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import journaltest as jt  # noqa: E402
import tailtest as tt  # noqa: E402

TOTAL = 100_000
BATCH = 1_000
RESTARTS = 10


class Writer(threading.Thread):
    """Writes TOTAL entries, BATCH at a time alternating between the two journals, each
    batch later in time than all before it (as journald writes), a pause after each
    round."""

    def __init__(self, jdir, rng):
        super().__init__(daemon=True)
        self.rng = rng
        self.journals = [jt.Journal(jdir, "system"), jt.Journal(jdir, "user-1000")]
        t0 = 1_700_600_000_000_000
        self.boots = [jt.Boot("1a" * 16, t0), jt.Boot("2b" * 16, t0 + 500)]
        self.error = None
        self.done = threading.Event()

    def run(self):
        try:
            n = 0
            while n < TOTAL:
                for k, (j, b) in enumerate(zip(self.journals, self.boots)):
                    b.skip_to(max(x.realtime for x in self.boots))  # later than all before
                    j.append(jt.numbered(b, f"h{k + 1}", len(j.entries), BATCH, step_us=1000,
                                         _HOSTNAME=f"h{k + 1}", _SYSTEMD_UNIT="load.service",
                                         PRIORITY=6))
                    n += BATCH
                time.sleep(self.rng.uniform(0.15, 0.45))
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            self.error = repr(e)
        self.done.set()


def es_config(wd, rx, jdir):
    out = ["  - name: es", "    type: elasticsearch", f"    url: {rx.url('')}",
           "    index: journal", "    max_in_flight: 1",
           "    backoff: {initial: 100ms, max: 500ms}"]
    return jt.write_config(os.path.join(wd.root, "es.yml"), jt.config_text(
        os.path.join(wd.root, "data-es"), [{"id": "journal", "directory": jdir}], out,
        batch="flush_interval: 100ms, max_events: 1000", shutdown_timeout="5s"))


def kill_restarts(c, wd, rng):
    jdir = os.path.join(wd.root, "journal")
    rx = ht.Receiver(os.path.join(wd.root, "es"), script="es_receiver.py")
    docs_path = os.path.join(rx.dir, "docs.jsonl")
    cfg = es_config(wd, rx, jdir)
    w = Writer(jdir, rng)
    t0 = time.monotonic()
    w.start()
    time.sleep(0.3)
    agent = tt.Agent(cfg, wd, "es")
    kills = []
    for i in range(RESTARTS):
        time.sleep(rng.uniform(0.3, 2.5))
        n = len(ht.read_jsonl(docs_path))
        agent.kill9()
        kills.append(n)
        agent = tt.Agent(cfg, wd, "es")
    print(f"killed -9 with {kills} documents indexed")
    w.done.wait(120)
    c.check(w.error is None, "the writer wrote its 100,000 entries", w.error)
    tt.wait_for(lambda: len(ht.read_jsonl(docs_path)) >= TOTAL, 90, step=0.5)
    time.sleep(1.5)  # anything still coming would be a double
    docs = ht.read_jsonl(docs_path)
    print(f"{len(docs)} documents {time.monotonic() - t0:.1f} s after the first write")
    c.check(len(docs) == TOTAL, f"the index holds exactly {TOTAL} documents", f"{len(docs)}")
    clashes = ht.read_jsonl(os.path.join(rx.dir, "clashes.jsonl"))
    c.check(not clashes, "no _id was given to two entries (no clash)",
            f"{len(clashes)}: {clashes[:1]}")
    refused = sum(1 for r in ht.read_jsonl(os.path.join(rx.dir, "requests.jsonl"))
                  for it in r["items"] if it["status"] == 409)
    print(f"{refused} resent events answered 409 (duplicates absorbed by _id)")
    for k, j in enumerate(w.journals):
        exp = jt.expected_events(j.entries)
        by_msg = {e["message"]: e for e in exp}
        got = [d["source"] for d in docs
               if (d["source"].get("journald") or {}).get("hostname") == f"h{k + 1}"]
        missing, dups, order = tt.compare_streams([e["message"] for e in exp],
                                                  [g["message"] for g in got])
        c.check(not missing and not dups and order == 0,
                f"{j.name}: its {len(exp)} entries stored once each, in journal order",
                f"{len(missing)} missing (first {missing[:3]}), {dups} doubles, "
                f"{order} out of order")
        bad = [d for d in (jt.event_diff(g, by_msg[g["message"]]) for g in got
                           if g["message"] in by_msg) if d]
        c.check(not bad, f"{j.name}: every document equals its entry", "; ".join(bad[:3]))
    ids = {d["id"] for d in docs}
    c.check(len(ids) == len(docs), "one _id per document", f"{len(ids)} ids")
    rc = agent.stop()
    c.check(rc == 0, "the last daemon exits 0 on SIGTERM", f"rc={rc}")
    err = open(agent.stderr_path, errors="replace").read()
    c.check(not jt.log_lines(err, "error"), "no error logged",
            "\n".join(jt.log_lines(err, "error"))[:600])
    rx.stop()


def term_restarts(c, wd, rng):
    jdir = os.path.join(wd.root, "journal-term")
    out = os.path.join(wd.root, "out-term")
    cfg = jt.write_config(os.path.join(wd.root, "term.yml"), jt.config_text(
        os.path.join(wd.root, "data-term"), [{"id": "journal", "directory": jdir}],
        jt.file_output(out)))
    j = jt.Journal(jdir)
    boot = jt.Boot("3c" * 16, 1_700_700_000_000_000)
    j.append(jt.numbered(boot, "term", 0, 2000, PRIORITY=6))
    for i in range(6):
        agent = tt.Agent(cfg, wd, "term")
        tt.wait_stderr(agent, "daemon: following", 20)
        j.append(jt.numbered(boot, "term", len(j.entries), rng.randrange(200, 3000),
                             PRIORITY=6))
        time.sleep(rng.uniform(0.1, 1.0))
        rc = agent.stop()
        c.check(rc == 0, f"SIGTERM {i + 1}: exit 0", f"rc={rc}")
        j.append(jt.numbered(boot, "term", len(j.entries), rng.randrange(0, 1000),
                             PRIORITY=6))
    agent = tt.Agent(cfg, wd, "term")
    tt.wait_events(out, len(j.entries), 30)
    time.sleep(0.5)
    rc = agent.stop()
    events = tt.read_events(out)
    jt.check_events(c, events, jt.expected_events(j.entries),
                    f"SIGTERM restarts: {len(j.entries)} entries, each once")
    c.check(rc == 0, "the last daemon exits 0", f"rc={rc}")


def main():
    c, wd, rng = jt.begin("jrestart")
    kill_restarts(c, wd, rng)
    term_restarts(c, wd, rng)
    return jt.end(c, wd)


if __name__ == "__main__":
    sys.exit(main())
