#!/usr/bin/env python3
"""The s3 output holds the batches it gathers without holding up the readers, and a reload
never waits for what an old output holds.

gather: batches of 50 events cut every 100 ms, one object put after object_interval 6s,
max_in_flight at its default (4) and the pipeline's cap of 6 batches in memory: the 2,000
lines written over 2 s are all read within 4 s while no object is put and no offset is
acknowledged (a held batch gives its memory back and stays owed); then one object holds
every line once, in order, and the registry reaches the file's end.

reload: the store is down (the endpoint's port refuses) while the output holds 300 lines; a
reload points the output at a live store and lines written after it arrive there at once,
although the old output still holds the first ones; once a store answers on the old port,
the old output delivers them: every line exactly once over the two stores."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import s3test as s3  # noqa: E402
import tailtest as tt  # noqa: E402


def config(wd, endpoint, interval):
    lines = [f"bucket: {s3.BUCKET}", f"region: {s3.REGION}", f"endpoint: {endpoint}",
             f"object_interval: {interval}", "object_bytes: 64MiB",
             "backoff: {initial: 200ms, max: 1s}",
             f"access_key_id: {s3.AKID}", "secret_access_key: ${S3_SECRET}"]
    return ht.write_config(wd, lines, out_type="s3", metrics=True,
                           batch="flush_interval: 100ms, max_events: 50")


def messages(store):
    return [m for _, m in s3.messages(store)]


def gather(c, wd, store):
    cfg = config(wd, store.url(), "6s")
    agent = tt.Agent(cfg, wd, tag="gather")
    try:
        port = tt.metrics_port(agent)
        time.sleep(1.2)  # the first scan has run: the file is followed from its start
        path = wd.path("g.log")
        want = [f"gather {i:05d}" for i in range(2000)]
        t0 = time.monotonic()
        for k in range(40):
            with open(path, "a") as f:
                f.write("".join(l + "\n" for l in want[k * 50:(k + 1) * 50]))
            time.sleep(0.05)
        read = tt.wait_metric(port, "logferry_events_read_total", '{input="app"}',
                              lambda v: v >= 2000, timeout=4 - (time.monotonic() - t0))
        secs = time.monotonic() - t0
        objects = store.objects()
        offset = tt.registry_offset(wd.data, path)
        c.check(read is not None and read >= 2000 and secs < 4, "gather: 2,000 lines in 40 "
                "batches are read while the output holds them (the cap is 6 batches in memory)",
                f"read {read} after {secs:.1f} s")
        c.check(not objects and not offset, "gather: nothing put and nothing acknowledged "
                "before object_interval", f"{len(objects)} objects, offset {offset}")
        size = os.path.getsize(path)
        reached = tt.wait_registry_offset(wd.data, path, size, timeout=20)
        got = messages(store)
        c.check(len(store.objects()) == 1 and got == want,
                "gather: one object with every line once, in order",
                f"{len(store.objects())} objects, {len(got)} lines")
        c.check(reached == size, "gather: the registry reaches the file's end after the PUT",
                f"{reached} of {size}")
    finally:
        rc = agent.stop()
    c.check(rc == 0, "gather: stops with 0", f"rc {rc}: {agent.stderr()[-300:]}")


def reload(c, wd, store):
    dead = tt.free_port()
    cfg = config(wd, f"http://127.0.0.1:{dead}", "1s")
    agent = tt.Agent(cfg, wd, tag="reload")
    late = None
    try:
        tt.metrics_port(agent)
        time.sleep(1.2)
        path = wd.path("r.log")
        first = [f"before {i:04d}" for i in range(300)]
        ht.write_lines(path, first)
        time.sleep(3)  # object_interval 1s: the object is due, its PUT refused, retried
        tt.edit_config(cfg, f"endpoint: http://127.0.0.1:{dead}", f"endpoint: {store.url()}")
        agent.proc.send_signal(1)  # SIGHUP
        tt.wait_stderr(agent, "reload", timeout=10)
        time.sleep(1)
        after = [f"after {i:04d}" for i in range(300)]
        with open(path, "a") as f:
            f.write("".join(l + "\n" for l in after))
        t0 = time.monotonic()
        ok = tt.wait_for(lambda: sorted(m for m in messages(store) if m.startswith("after"))
                         == after, 10)
        c.check(ok, "reload: lines written after the reload reach the new store while the "
                "old output still holds the first ones",
                f"{time.monotonic() - t0:.1f} s; {len(messages(store))} lines there")
        c.check(not any(m.startswith("before") for m in messages(store)),
                "reload: the held lines are not sent twice by the new output", "")
        late = s3.Store(os.path.join(wd.root, "late"), port=dead)
        ok = tt.wait_for(lambda: sorted(messages(late)) == first, 15)
        c.check(ok, "reload: once a store answers on the old port the old output delivers "
                "what it held", f"{len(messages(late))} of {len(first)}")
        total = [m for m in messages(store) + messages(late) if m.startswith(("before", "after"))]
        c.check(sorted(total) == sorted(first + after), "reload: every line exactly once over "
                "the two stores", f"{len(total)} lines, {len(set(total))} distinct")
        size = os.path.getsize(path)
        c.check(tt.wait_registry_offset(wd.data, path, size, timeout=10) == size,
                "reload: the registry reaches the file's end", "")
    finally:
        rc = agent.stop()
        if late is not None:
            late.stop()
    c.check(rc == 0, "reload: stops with 0", f"rc {rc}: {agent.stderr()[-300:]}")


def main():
    s3.run("s3-gather", [gather, reload])


if __name__ == "__main__":
    main()
