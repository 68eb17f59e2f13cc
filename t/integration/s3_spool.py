"""The s3 output in the daemon with the disk spool: lines are written steadily while
objects gather (object_interval 1s); the agent is killed with SIGKILL mid-stream, while
some batches are held in open objects, and started again on the same data_dir: every line
is in the store at least once (a batch whose object was put but not yet acknowledged may
come again, in another object: at least once), none lost, and the restarted daemon stops
cleanly."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import s3test as s3  # noqa: E402
import tailtest as tt  # noqa: E402


def main():
    c = tt.Checks()
    os.environ["S3_SECRET"] = s3.SECRET  # the daemons' environment
    wd = tt.Workdir("s3-spool")
    store = s3.Store(os.path.join(wd.root, "store"))
    agent = None
    try:
        cfg = s3.config(wd, store, ["object_interval: 1s"],
                        batch="flush_interval: 100ms, max_events: 200}, "
                              "spool: {enabled: true, max_bytes: 64MiB")
        open(wd.path("s.log"), "w").close()
        agent = tt.Agent(cfg, wd, tag="first")
        lines = []

        def write(k):
            batch = [f"spool line {len(lines) + i} \u00e9" for i in range(k)]
            ht.write_lines(wd.path("s.log"), batch)
            lines.extend(batch)
        for _ in range(20):
            write(100)
            time.sleep(0.1)
        tt.wait_for(lambda: len(s3.messages(store)) > 0, 10)
        for _ in range(5):
            write(100)
            time.sleep(0.05)
        stored_before = len(s3.messages(store))
        agent.kill9()
        c.check(0 < stored_before < len(lines),
                "killed with SIGKILL mid-stream: some lines stored, some not yet",
                f"{stored_before} of {len(lines)}")
        write(300)  # more while it is down
        agent = tt.Agent(cfg, wd, tag="second")
        ok = tt.wait_for(lambda: {m for _, m in s3.messages(store)} >= set(lines), 60,
                         step=0.3)
        got = [m for _, m in s3.messages(store)]
        c.check(ok and set(got) == set(lines),
                "after the restart every line is in the store, at least once",
                f"{len(set(got))} of {len(lines)} distinct, {len(got) - len(set(got))} again")
        rc = agent.stop()
        c.check(rc == 0, "the restarted daemon stops cleanly", f"rc {rc}: {agent.stderr()[-300:]}")
        agent = None
    finally:
        if agent is not None and agent.alive():
            agent.stop()
        store.stop()
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
