"""Where dead letters go. The elasticsearch output refuses events whose message holds
MAPPING_ERROR (es_receiver.py answers 400); they are written to
DATA_DIR/dead_letters/collector.ndjson.zst. With --data-dir the override is that DATA_DIR,
whatever the config says, and nothing is written relative to the working directory (the
output once kept a pointer to the config's data_dir string, which the override freed). A
dead-letter file that is a symlink is refused with a clear error, and the file it points
to is left untouched; the directory is created 0700."""
import os
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import tailtest as tt  # noqa: E402


def run_once(cfg, wd, data_dir):
    """--once with --data-dir, from a working directory of its own; returns (rc, stderr)."""
    cwd = os.path.join(wd.root, "cwd")
    os.makedirs(cwd, exist_ok=True)
    r = subprocess.run([os.path.abspath(tt.LOGFERRY), "-c", cfg, "--once", "--data-dir",
                        data_dir], capture_output=True, timeout=60, cwd=cwd)
    return r.returncode, r.stderr.decode("utf-8", "replace")


def main():
    c = tt.Checks()
    wd = tt.Workdir("deadletter-dir")
    rx = ht.Receiver(os.path.join(wd.root, "rx"), script="es_receiver.py")
    try:
        cfg = ht.write_config(wd, [f"url: {rx.url('')}", "timeout: 2s"],
                              out_type="elasticsearch")
        lines = [f"line {i} MAPPING_ERROR" for i in range(5)]
        ht.write_lines(wd.path("a.log"), lines)
        other = os.path.join(wd.root, "other")
        rc, err = run_once(cfg, wd, other)
        dead = ht.dead_letters(other)
        c.check(rc == 0 and [d["event"]["message"] for d in dead] == lines,
                "--data-dir: every refused event is a dead letter under the override",
                f"rc {rc}, {len(dead)} of {len(lines)}; {err.strip()[-300:]}")
        stray = os.listdir(os.path.join(wd.root, "cwd"))
        c.check(stray == [], "nothing is written relative to the working directory",
                str(stray))
        c.check(not os.path.exists(os.path.join(wd.data, "dead_letters")),
                "the config's own data_dir gets no dead letters")
        dl_dir = os.path.join(other, "dead_letters")
        mode = stat.S_IMODE(os.stat(dl_dir).st_mode) if os.path.isdir(dl_dir) else None
        c.check(mode == 0o700, "the dead-letter directory is 0700", oct(mode or 0))

        # A symlink where the dead-letter file goes: refused, its target untouched, the
        # events not acknowledged (the daemon retries them).
        os.makedirs(os.path.join(wd.data, "dead_letters"), mode=0o700)
        target = os.path.join(wd.root, "target")
        with open(target, "wb") as f:
            f.write(b"precious\n")
        os.symlink(target, os.path.join(wd.data, "dead_letters", "collector.ndjson.zst"))
        agent = tt.Agent(cfg, wd, "symlink")
        said = tt.wait_for(lambda: "symlink" in agent.stderr(), 20)
        with open(target, "rb") as f:
            kept = f.read()
        c.check(kept == b"precious\n", "the symlink's target is left untouched",
                f"{len(kept)} bytes")
        err = agent.stderr()
        c.check(said and "collector.ndjson.zst: a symlink: refused" in err,
                "the error names the file and says it is a symlink", err.strip()[-400:])
        agent.stop()
        offset = tt.registry_offset(wd.data, wd.path("a.log"))
        c.check(not offset, "the refused events are not acknowledged", f"offset {offset}")
    finally:
        rx.stop()
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
