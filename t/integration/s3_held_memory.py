"""The s3 output's held batches give their memory back: `logferry --once` gathers 40,000
lines (object_interval and object_bytes larger than the run) once in 10 batches, one
object, and once in 2,000 batches of 20 events, two objects (1,024 batches at most in
one). Every line must reach the store once each time, and the second run's peak RSS
(wait4, through t/bench/runstat) must stay within 16 MiB of the first's: each held batch
goes back to the queue as a stub, and the next batch cut must reuse what it gave back
instead of allocating another (arena, encodings, zstd context), which made the agent's
memory grow with the number of batches an object gathers (80 MiB on 200,000 lines into
the C sink, where 23 MiB do)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import s3test as s3  # noqa: E402
import tailtest as tt  # noqa: E402

LINES = 40000
RUNSTAT = os.path.join(os.environ.get("LF_BUILDDIR", "."), "t", "bench", "runstat")
SLACK_KIB = 16 << 10


def once(c, wd, store, max_events, objects):
    """Runs --once from the files' start into a fresh object; returns its peak RSS KiB."""
    if os.path.isdir(wd.data):
        ht.rewind_registry(wd.data)
    before = set(store.objects())
    keys = ["compression: zstd", "object_bytes: 256MiB", "object_interval: 10m"]
    cfg = s3.config(wd, store, keys, batch=f"flush_interval: 100ms, max_events: {max_events}")
    out = os.path.join(wd.root, f"runstat-{max_events}")
    err = os.path.join(wd.root, f"stderr-{max_events}")
    with open(err, "wb") as ef:
        rc = tt.subprocess.run([RUNSTAT, out, tt.LOGFERRY, "-c", cfg, "--once"], stdout=ef,
                               stderr=ef, env=s3.env(), timeout=300).returncode
    fields = open(out).read().split()
    status, peak = int(fields[3]), int(fields[2])
    ok = rc == 0 and status == 0
    c.check(ok, f"{max_events} events a batch: --once exits 0",
            f"status {status}" + ("" if ok else ": " + open(err).read()[-400:]))
    new = [k for k in store.objects() if k not in before]
    got = [m for k, m in s3.messages(store) if k in new]
    want = [f"line {i:06d} " + "x" * 80 for i in range(LINES)]
    c.check(sorted(got) == want, f"{max_events} events a batch: every line once",
            f"{len(got)} messages in {len(new)} objects, {len(set(got))} distinct")
    c.check(len(new) == objects, f"{max_events} events a batch: {objects} object(s) (1,024 "
            "batches at most in one)", f"{len(new)} objects")
    print(f"# {max_events} events a batch: peak RSS {peak / 1024:.1f} MiB")
    return peak


def held(c, wd, store):
    ht.write_lines(wd.path("app.log"), [f"line {i:06d} " + "x" * 80 for i in range(LINES)])
    few = once(c, wd, store, 4000, 1)
    many = once(c, wd, store, 20, 2)
    c.check(many <= few + SLACK_KIB,
            "2,000 held batches cost no more memory than 10, give or take 16 MiB",
            f"{many / 1024:.1f} MiB against {few / 1024:.1f} MiB")


if __name__ == "__main__":
    s3.run("s3-held-memory", [held])
