"""The elasticsearch output through an outage: es_receiver.py is stopped (by PID) for 10 s
mid-run while lines keep being written, then started again on the same port with the
documents it had (outage.py). With document_id auto every line is indexed exactly once: a
request whose answer the outage cut is sent again, and its copies are answered 409.

Beside a.log, b.log of the same input holds the first 500 of those lines before the start:
the same text at the same offsets in another file (another stream). Its lines must be
indexed as well, and no 409 may refuse an event other than the one stored under its _id
(es_receiver.py records that as a clash): an _id that ignored the stream id, or the offset,
would lose lines here."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import outage  # noqa: E402
import tailtest as tt  # noqa: E402


def main():
    c = tt.Checks()
    wd = tt.Workdir("es-outage")
    rx = ht.Receiver(os.path.join(wd.root, "rx"), script="es_receiver.py")
    docs_path = os.path.join(rx.dir, "docs.jsonl")
    agent = None
    try:
        cfg = ht.write_config(wd, [f"url: {rx.url('')}", "index: \"logs-%Y.%m.%d\"",
                                   "timeout: 2s", "max_in_flight: 2",
                                   "backoff: {initial: 200ms, max: 2s}"],
                              out_type="elasticsearch")
        open(wd.path("a.log"), "w").close()
        lines = outage.lines("es")
        twin = lines[:500]
        with open(wd.path("b.log"), "w") as f:
            f.write("".join(l + "\n" for l in twin))
        agent = tt.Agent(cfg, wd, "outage")

        def messages(name="a.log"):
            return [d["source"]["message"] for d in ht.read_jsonl(docs_path)
                    if d["source"]["log"]["file"]["path"] == wd.path(name)]
        outage.through(c, wd.path("a.log"), lines, rx.stop, rx.start,
                       received=lambda: len(messages()))
        tt.wait_for(lambda: len(set(messages())) >= len(lines), 30, step=0.2)
        outage.check_arrived(c, lines, messages(), copies_ok=False)
        outage.check_arrived(c, twin, messages("b.log"), copies_ok=False,
                             what="from b.log (a.log's first lines at a.log's offsets)")
        clashes = [i for r in rx.requests() for i in r["items"] if i.get("clash")]
        c.check(not clashes, "no 409 refused an event other than the one its _id named",
                f"{len(clashes)} events answered 409 and lost")
        statuses = [i["status"] for r in rx.requests() for i in r["items"]]
        print(f"info: {statuses.count(201)} items created, {statuses.count(409)} answered 409")
        outage.check_said_why(c, agent.stderr())
        rc = agent.stop()
        c.check(rc == 0, "the daemon stops cleanly", f"rc {rc}")
        c.check(ht.dead_letters(wd.data) == [], "nothing is dead-lettered")
    finally:
        if agent is not None and agent.alive():
            agent.stop()
        rx.stop()
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
