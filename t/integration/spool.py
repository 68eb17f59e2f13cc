"""The disk spool (queue.spool) with the http output and the test collector (http_receiver.py,
started and stopped by PID).

kill9:   the collector is down; the agent spools (the registry advances: the spool write is an
         acknowledgement), is SIGKILLed, restarted, SIGKILLed again, more lines are written;
         the collector comes up: every line arrives once, in order, byte-identical, and the
         spool empties (segments removed, logferry_spool_bytes 0).
full:    the collector is down and the spool small: the spool stops at max_bytes (never above
         max_bytes + one record), the readers pause (the registry stops short of the file's
         end); the collector comes up: nothing is lost.
corrupt: a byte flipped in one record's payload and a torn record at a segment's end: both
         are logged, counted (logferry_spool_corrupt_records_total) and skipped; the other
         records are delivered and the agent keeps running.
reload:  a SIGHUP that changes the output replaces the delivery behind the spool: lines before
         and after it all arrive once, and the output's counters go on.
changed: records spooled as NDJSON for the http output, then the output named in them
         becomes a file output writing messages as text: they are not sent there with the
         messages missing; an error says so, and new lines go out whole.
once:    --once with the collector down exits 1 with everything in the spool (the registry
         at the end); the next --once with it up delivers all of it and exits 0."""
import os
import re
import signal
import stat
import struct
import sys
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import tailtest as tt  # noqa: E402

QUEUE = "queue: {batch: {flush_interval: 100ms, max_events: 500}}"
HEADER = 16


def config(wd, rx, spool="{enabled: true, max_bytes: 64MiB}", batch="max_events: 500"):
    # One request in flight: the collector accepts batches in the order they are sent.
    path = ht.write_config(wd, [f"url: {rx.url()}", "compression: zstd", "timeout: 2s",
                                "backoff: {initial: 100ms, max: 500ms}", "max_in_flight: 1"],
                           metrics=True)
    tt.edit_config(path, QUEUE,
                   f"queue: {{batch: {{flush_interval: 100ms, {batch}}}, spool: {spool}}}")
    return path


def spool_dir(wd):
    return os.path.join(wd.data, "spool")


def segments(wd):
    d = spool_dir(wd)
    return sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(".spool"))


def records(path):
    """(offset, payload length) of each well-formed record of a segment file."""
    with open(path, "rb") as f:
        data = f.read()
    out, at = [], 0
    while at + HEADER <= len(data):
        magic, length, crc, hcrc = struct.unpack_from("<IIII", data, at)
        if magic != 0x3153464C or hcrc != zlib.crc32(data[at:at + 12]):
            break
        out.append((at, length))
        at += HEADER + length
    return out


def scrape_value(agent, name):
    port = tt.metrics_port(agent)
    _, body = tt.scrape(port)
    return tt.metric(body, name)


class Rig:
    """A work directory and a collector (down from the start when down), and the agents
    started in them: stopped and removed at the end, whatever happened."""

    def __init__(self, name, down=True):
        self.name, self.down, self.agents = name, down, []

    def __enter__(self):
        self.wd = tt.Workdir(self.name)
        self.rx = ht.Receiver(os.path.join(self.wd.root, "rx"))
        if self.down:
            self.rx.stop()  # it comes back on the same port
        return self

    def agent(self, cfg, tag):
        a = tt.Agent(cfg, self.wd, tag)
        self.agents.append(a)
        return a

    def __exit__(self, *exc):
        for a in self.agents:
            if a.alive():
                a.stop()
        self.rx.stop()
        self.wd.cleanup()
        return False


def lines_for(tag, n):
    # Quotes, backslashes, tabs and non-ASCII: what arrives must be byte-identical.
    return [f"{tag} {i:06d} caf\u00e9 \"q\" back\\slash\ttab {'x' * (i % 40)}" for i in range(n)]


def kill9(c):
    with Rig("spool-kill9") as r:
        wd, rx = r.wd, r.rx
        log = wd.path("a.log")
        first, second, third = lines_for("one", 20000), lines_for("two", 5000), lines_for("three", 3000)
        ht.write_lines(log, first)
        cfg = config(wd, rx)
        agent = r.agent(cfg, "run1")
        off = tt.wait_registry_offset(wd.data, log, os.path.getsize(log), timeout=20)
        c.check(off == os.path.getsize(log),
                "with the collector down, the registry reaches the end once the spool has it",
                f"offset {off} of {os.path.getsize(log)}")
        st = os.stat(spool_dir(wd))
        modes = {stat.S_IMODE(os.stat(p).st_mode) for p in segments(wd)}
        c.check(stat.S_IMODE(st.st_mode) == 0o700 and modes == {0o600},
                "the spool directory is 0700, its segments 0600",
                f"{oct(stat.S_IMODE(st.st_mode))} {sorted(oct(m) for m in modes)}")
        sb = scrape_value(agent, "logferry_spool_bytes")
        c.check(sb is not None and sb > 0, "logferry_spool_bytes shows the spooled bytes", str(sb))
        agent.kill9()

        ht.write_lines(log, second)  # written while the agent is dead
        agent = r.agent(cfg, "run2")
        off = tt.wait_registry_offset(wd.data, log, os.path.getsize(log), timeout=20)
        c.check(off == os.path.getsize(log), "after a SIGKILL, the restarted agent spools the rest",
                f"offset {off}")
        ht.write_lines(log, third)
        time.sleep(0.3)  # SIGKILL again, perhaps mid-write
        agent.kill9()

        rx.start()
        agent = r.agent(cfg, "run3")
        want = first + second + third
        tt.wait_for(lambda: len(rx.accepted()) >= len(want), 40, step=0.2)
        got = [e["message"] for e in rx.accepted()]
        c.check(got == want, "every line arrives once, in order, byte-identical",
                f"{len(got)} received of {len(want)}, {len(got) - len(set(got))} duplicates, "
                f"{len(set(want) - set(got))} missing")
        sb = tt.wait_metric(tt.metrics_port(agent), "logferry_spool_bytes", "", lambda v: v == 0,
                            timeout=10)
        c.check(sb == 0 and segments(wd) == [], "the spool empties once delivered",
                f"spool_bytes {sb}, segments {segments(wd)}")
        rc = agent.stop()
        c.check(rc == 0, "the daemon stops cleanly", f"rc {rc}")


def full(c):
    with Rig("spool-full") as r:
        wd, rx = r.wd, r.rx
        max_bytes, batch_bytes = 256 * 1024, 32 * 1024
        log = wd.path("a.log")
        # Random hex compresses to about half: the spool fills after some 500 KiB of input.
        lines = [f"full {i:06d} " + os.urandom(64).hex() for i in range(30000)]
        ht.write_lines(log, lines)
        cfg = config(wd, rx, spool=f"{{enabled: true, max_bytes: {max_bytes}}}",
                     batch="max_bytes: 32KiB")
        agent = r.agent(cfg, "agent")
        port = tt.metrics_port(agent)
        peak = 0
        t0 = time.monotonic()
        while time.monotonic() - t0 < 4:
            _, body = tt.scrape(port)
            v = tt.metric(body, "logferry_spool_bytes")
            peak = max(peak, v or 0)
            time.sleep(0.05)
        off = tt.registry_offset(wd.data, log) or 0
        size = os.path.getsize(log)
        c.check(off < size / 2, "at max_bytes the readers pause (the registry stops short)",
                f"offset {off} of {size}")
        # One record: the batch's compressed bytes plus its events' metadata (40 bytes each).
        bound = max_bytes + batch_bytes + 16 * 1024
        c.check(max_bytes * 0.75 <= peak <= bound,
                "the spool fills up to max_bytes and never passes it by more than one record",
                f"peak {peak:.0f}, max_bytes {max_bytes}, bound {bound}")
        rx.start()
        deadline = time.monotonic() + 40
        while len(rx.accepted()) < len(lines) and time.monotonic() < deadline:
            _, body = tt.scrape(port)
            peak = max(peak, tt.metric(body, "logferry_spool_bytes") or 0)
            time.sleep(0.1)
        got = [e["message"] for e in rx.accepted()]
        c.check(got == lines, "nothing is lost: every line arrives once, in order",
                f"{len(got)} of {len(lines)}")
        c.check(peak <= bound, "the bound held while the spool drained", f"peak {peak:.0f}")
        rc = agent.stop()
        c.check(rc == 0, "the daemon stops cleanly", f"rc {rc}")


def corrupt(c):
    with Rig("spool-corrupt") as r:
        wd, rx = r.wd, r.rx
        log = wd.path("a.log")
        cfg = config(wd, rx)
        agent = r.agent(cfg, "run1")
        parts = [lines_for(f"part{k}", 100) for k in range(3)]
        for part in parts:  # a batch (a record) or more each: a busy reader may split one
            ht.write_lines(log, part)
            tt.wait_registry_offset(wd.data, log, os.path.getsize(log), timeout=20)
        rc = agent.stop()
        c.check(rc == 0, "the agent stops with its batches spooled", f"rc {rc}")
        segs = segments(wd)
        recs = [(p, r) for p in segs for r in records(p)]
        c.check(len(recs) >= 3, "at least three records on disk", str(recs))
        path, (at, length) = recs[len(recs) // 2]
        with open(path, "r+b") as f:  # flip a byte in the middle of a middle record's payload
            f.seek(at + HEADER + length // 2)
            b = f.read(1)
            f.seek(at + HEADER + length // 2)
            f.write(bytes([b[0] ^ 0xFF]))
        with open(recs[-1][0], "ab") as f:  # a torn write: a header and a few bytes
            f.write(struct.pack("<IIII", 0x3153464C, 5000, 0, 0)[:12] + b"\0\0\0\0abc")

        rx.start()
        agent = r.agent(cfg, "run2")
        n = tt.wait_metric(tt.metrics_port(agent), "logferry_spool_corrupt_records_total", "",
                           lambda v: v >= 2, timeout=20)
        c.check(n == 2, "both are counted in logferry_spool_corrupt_records_total", str(n))
        settled = [len(rx.accepted()), time.monotonic()]

        def quiet():  # nothing new for 1.5 s
            k = len(rx.accepted())
            if k != settled[0]:
                settled[:] = [k, time.monotonic()]
            return time.monotonic() - settled[1] >= 1.5
        tt.wait_for(quiet, 20, step=0.2)
        every = parts[0] + parts[1] + parts[2]
        got = [e["message"] for e in rx.accepted()]
        # what arrived is every line but one run: the corrupt record's batch
        i = next((k for k, (a, b) in enumerate(zip(got, every)) if a != b), len(got))
        j = i + len(every) - len(got)
        c.check(0 < i < j < len(every) and got == every[:i] + every[j:],
                "the records around the corrupt one are delivered, in order, once",
                f"{len(got)} received of {len(every)}; first difference at {i}")
        err = agent.stderr()
        c.check(len(re.findall(r"corrupt or torn record at offset \d+", err)) == 2,
                "each is reported in the log", [l for l in err.splitlines() if "corrupt" in l])
        want = got
        more = lines_for("after", 50)
        ht.write_lines(log, more)
        tt.wait_for(lambda: len(rx.accepted()) >= len(want) + len(more), 20, step=0.2)
        got = [e["message"] for e in rx.accepted()]
        c.check(agent.alive() and got == want + more, "the agent keeps running and delivering",
                f"{len(got)} received")
        rc = agent.stop()
        c.check(rc == 0, "the daemon stops cleanly", f"rc {rc}")


def reload(c):
    with Rig("spool-reload", down=False) as r:
        wd, rx = r.wd, r.rx
        log = wd.path("a.log")
        before, after = lines_for("before", 2000), lines_for("after", 2000)
        cfg = config(wd, rx)
        agent = r.agent(cfg, "agent")
        ht.write_lines(log, before)
        tt.wait_for(lambda: len(rx.accepted()) >= len(before), 20, step=0.1)
        tt.edit_config(cfg, "timeout: 2s", "timeout: 3s")  # a changed output: replaced
        os.kill(agent.pid, signal.SIGHUP)
        ok = tt.wait_stderr(agent, "reload 1", timeout=20)
        ht.write_lines(log, after)
        tt.wait_for(lambda: len(rx.accepted()) >= len(before) + len(after), 20, step=0.1)
        got = [e["message"] for e in rx.accepted()]
        c.check(ok and got == before + after, "lines before and after the reload arrive once",
                f"{len(got)} of {len(before) + len(after)}")
        acked = ht.metric(tt.metrics_port(agent), "logferry_events_acked_total")
        c.check(acked == len(before) + len(after), "the output's counter goes on across it",
                str(acked))
        rc = agent.stop()
        c.check(rc == 0, "the daemon stops cleanly", f"rc {rc}")


def changed(c):
    with Rig("spool-changed") as r:
        wd, rx = r.wd, r.rx
        log = wd.path("a.log")
        early = lines_for("early", 100)
        ht.write_lines(log, early)
        cfg = config(wd, rx)
        agent = r.agent(cfg, "run1")
        tt.wait_registry_offset(wd.data, log, os.path.getsize(log), timeout=20)
        agent.stop()
        out = os.path.join(wd.root, "text.out")
        with open(cfg) as f:
            text = f.read()
        text = re.sub(r"    type: http\n(    .*\n)*?(?=queue:)",
                      f"    type: file\n    path: {out}\n    format: text\n    compression: none\n",
                      text)
        with open(cfg, "w") as f:
            f.write(text)
        agent = r.agent(cfg, "run2")
        ok = tt.wait_stderr(agent, "has no messages for output collector", timeout=20)
        late = lines_for("late", 50)
        ht.write_lines(log, late)
        def written():
            if not os.path.isdir(out):
                return []
            lines = []
            for name in sorted(os.listdir(out)):
                with open(os.path.join(out, name), encoding="utf-8") as f:
                    lines += f.read().splitlines()
            return lines
        tt.wait_for(lambda: len(written()) >= len(late), 20, step=0.1)
        got = written()
        c.check(ok and got == late,
                "records without messages are not sent to an output that now reads them",
                f"logged: {ok}, {len(got)} lines written")
        c.check(agent.alive(), "the agent keeps running")
        agent.stop()


def once(c):
    with Rig("spool-once") as r:
        wd, rx = r.wd, r.rx
        log = wd.path("a.log")
        lines = lines_for("once", 3000)
        ht.write_lines(log, lines)
        cfg = config(wd, rx)
        rc, err = ht.run_once(cfg, timeout=90)
        c.check(rc == 1 and "the spool keeps what was not delivered" in err,
                "--once with the collector down exits 1, saying the spool keeps the batches",
                f"rc {rc}: {[l for l in err.splitlines() if 'incomplete' in l][:1]}")
        c.check(tt.registry_offset(wd.data, log) == os.path.getsize(log),
                "the registry is at the end: the spool has every line")
        rx.start()
        rc, err = ht.run_once(cfg)
        got = [e["message"] for e in rx.accepted()]
        c.check(rc == 0 and got == lines,
                "the next --once delivers the spool and exits 0", f"rc {rc}, {len(got)} lines")
        c.check(segments(wd) == [], "and leaves the spool empty", str(segments(wd)))


def run_cases(cases):
    """Runs the cases named on the command line, or every one of cases (name: function of a
    Checks) in order, timing each; exits with the outcome."""
    c = tt.Checks()
    for name in sys.argv[1:] or list(cases):
        t0 = time.monotonic()
        cases[name](c)
        print(f"# {name}: {time.monotonic() - t0:.1f} s", flush=True)
    c.finish()


def main():
    run_cases({"kill9": kill9, "full": full, "corrupt": corrupt, "reload": reload,
               "changed": changed, "once": once})


if __name__ == "__main__":
    main()
