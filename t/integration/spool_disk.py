"""The disk spool (queue.spool) on a disk that fails: the daemon runs with
t/integration/spool_shim.so preloaded, which fails writes and fdatasyncs of spool segments
when told to and logs every good fdatasync with the segment's size then (what a power loss
would leave of it). The collector is http_receiver.py, started and stopped by PID.

sync:  every fdatasync of the spool fails for a few seconds: the registry does not move and
       nothing is delivered (nothing is durable, so nothing is acknowledged), the failure is
       logged and tried again every second; once fdatasyncs succeed, every line arrives
       once, in order: the records the failed fdatasyncs covered are appended again, never
       kept beside their copies.
power: the collector is down; a write fails after a batch was appended and the fdatasync
       after it fails too. Once the registry is at the file's end the agent is SIGKILLed and
       a power loss played: each segment cut to the size its last good fdatasync made
       durable. Restarted, the agent delivers every line: nothing was acknowledged that the
       disk did not hold.
stop:  a SIGTERM while every fdatasync fails: the agent ends within shutdown_timeout with
       nothing acknowledged; restarted on a good disk, it delivers every line once.
hang:  a spool write that hangs for 6 s (a disk that stopped answering): with
       metrics.stuck_after 2s, /healthz answers 503 "spool writer thread stuck for N s"
       while it hangs, and 200 "ok" once the write returns; every line arrives once."""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import spool as sp  # noqa: E402
import tailtest as tt  # noqa: E402

SHIM = os.path.join(os.environ.get("LF_BUILDDIR", "."), "t", "integration", "spool_shim.so")


class Disk:
    """The shim's control file and log in a work directory."""

    def __init__(self, wd):
        self.control = os.path.join(wd.root, "shim.control")
        self.log = os.path.join(wd.root, "shim.log")
        self.generation = 0

    def arm(self, pass_writes=0, fail_writes=0, fail_syncs=0, delay_ms=0):
        """Of the segment writes from now, pass_writes succeed and fail_writes fail;
        fail_syncs fdatasyncs fail (after the first failed write, if any)."""
        self.generation += 1
        tmp = self.control + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{self.generation} {pass_writes} {fail_writes} {fail_syncs} {delay_ms}\n")
        os.rename(tmp, self.control)

    def events(self, kind):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [line.split() for line in f if line.startswith(kind + " ")]

    def durable_sizes(self):
        """Each segment's size at its last good fdatasync."""
        return {path: int(size) for _, path, size in self.events("synced")}

    def agent(self, rig, cfg, tag):
        # A sanitized daemon wants its runtime first in the list of libraries: the shim
        # comes first here, and needs nothing from it.
        asan = os.environ.get("ASAN_OPTIONS", "")
        prefix = ["env", f"LD_PRELOAD={SHIM}", f"LF_SHIM_CONTROL={self.control}",
                  f"LF_SHIM_LOG={self.log}",
                  f"ASAN_OPTIONS={asan}{':' if asan else ''}verify_asan_link_order=0"]
        a = tt.Agent(cfg, rig.wd, tag, argv_prefix=prefix)
        rig.agents.append(a)
        return a


def delivered(rx, n, timeout=20):
    """What the collector accepted once it has n events (or at the timeout), and a second
    later: anything sent twice has come by then."""
    tt.wait_for(lambda: len(rx.accepted()) >= n, timeout, step=0.2)
    time.sleep(1)
    return [e["message"] for e in rx.accepted()]


def compare(want, got):
    return (f"{len(got)} received of {len(want)}, {len(got) - len(set(got))} duplicates, "
            f"{len(set(want) - set(got))} missing")


def sync(c):
    with sp.Rig("spool-sync", down=False) as r:
        wd, rx = r.wd, r.rx
        disk = Disk(wd)
        disk.arm(fail_syncs=4)
        log = wd.path("a.log")
        lines = sp.lines_for("sync", 2000)
        agent = disk.agent(r, sp.config(wd, rx), "agent")
        ht.write_lines(log, lines)
        tt.wait_stderr(agent, "Input/output error", timeout=20)
        time.sleep(1.5)
        failed, good = len(disk.events("failed-sync")), len(disk.events("synced"))
        off = tt.registry_offset(wd.data, log) or 0
        c.check(failed >= 2 and good == 0 and off == 0 and rx.accepted() == [],
                "while fdatasyncs fail, nothing is acknowledged or delivered",
                f"{failed} failed, {good} good fdatasyncs; registry offset {off}; "
                f"{len(rx.accepted())} delivered")
        got = delivered(rx, len(lines))
        c.check(got == lines, "once fdatasyncs succeed, every line arrives once, in order",
                compare(lines, got))
        off = tt.wait_registry_offset(wd.data, log, os.path.getsize(log), timeout=20)
        c.check(off == os.path.getsize(log), "and the registry reaches the end", f"offset {off}")
        err = agent.stderr()
        c.check("trying again every second" in err and "takes writes again" in err,
                "the failure and the recovery are logged",
                [line for line in err.splitlines() if "spool:" in line][:2])
        rc = agent.stop()
        c.check(rc == 0, "the daemon stops cleanly", f"rc {rc}")


def power_loss(wd, disk):
    """Cuts every segment to what its last good fdatasync made durable (a segment never
    synced goes); returns the bytes cut."""
    sizes, cut = disk.durable_sizes(), 0
    for path in sp.segments(wd):
        size = os.path.getsize(path)
        keep = sizes.get(path, 0)
        cut += size - keep
        if keep == 0:
            os.unlink(path)
        else:
            os.truncate(path, keep)
    return cut


def power(c):
    with sp.Rig("spool-power") as r:
        wd, rx = r.wd, r.rx
        disk = Disk(wd)
        log = wd.path("a.log")
        first, second = sp.lines_for("first", 1000), sp.lines_for("second", 3000)
        cfg = sp.config(wd, rx)
        agent = disk.agent(r, cfg, "run1")
        ht.write_lines(log, first)
        tt.wait_registry_offset(wd.data, log, os.path.getsize(log), timeout=20)
        # The first segment write waits 300 ms while the batches of `second` queue behind
        # it; the next record's first write fails, and so does the fdatasync after it.
        disk.arm(pass_writes=2, fail_writes=1, fail_syncs=1, delay_ms=300)
        ht.write_lines(log, second)
        off = tt.wait_registry_offset(wd.data, log, os.path.getsize(log), timeout=20)
        c.check(off == os.path.getsize(log), "the spool takes every line in the end",
                f"offset {off} of {os.path.getsize(log)}")
        c.check(len(disk.events("failed-write")) == 1 and len(disk.events("failed-sync")) == 1,
                "a write and an fdatasync failed",
                f"{disk.events('failed-write')} {disk.events('failed-sync')}")
        agent.kill9()
        cut = power_loss(wd, disk)
        rx.start()
        agent = r.agent(cfg, "run2")
        want = first + second
        got = delivered(rx, len(want))
        c.check(got == want,
                "after a power loss, every line the registry acknowledged is delivered",
                compare(want, got) + f"; {cut} spool bytes were not durable")
        rc = agent.stop()
        c.check(rc == 0, "the daemon stops cleanly", f"rc {rc}")


def stop(c):
    with sp.Rig("spool-stop", down=False) as r:
        wd, rx = r.wd, r.rx
        disk = Disk(wd)
        disk.arm(fail_syncs=10 ** 9)
        log = wd.path("a.log")
        lines = sp.lines_for("stop", 1000)
        cfg = sp.config(wd, rx)
        agent = disk.agent(r, cfg, "run1")
        ht.write_lines(log, lines)
        tt.wait_stderr(agent, "Input/output error", timeout=20)
        rc = agent.stop()
        off = tt.registry_offset(wd.data, log) or 0
        c.check(rc is not None and agent.stop_seconds < 5 + 3 and off == 0,
                "a SIGTERM while every fdatasync fails ends within shutdown_timeout, "
                "acknowledging nothing", f"rc {rc} after {agent.stop_seconds:.1f} s, "
                f"registry offset {off}")
        agent = r.agent(cfg, "run2")
        got = delivered(rx, len(lines))
        c.check(got == lines, "restarted on a good disk, every line arrives once, in order",
                compare(lines, got))
        rc = agent.stop()
        c.check(rc == 0, "the daemon stops cleanly", f"rc {rc}")


def hang(c):
    with sp.Rig("spool-hang", down=False) as r:
        wd, rx = r.wd, r.rx
        disk = Disk(wd)
        disk.arm(delay_ms=6000)
        log = wd.path("a.log")
        lines = sp.lines_for("hang", 1000)
        cfg = sp.config(wd, rx)
        tt.edit_config(cfg, 'metrics: {listen: "127.0.0.1:0"}',
                       'metrics: {listen: "127.0.0.1:0", stuck_after: 2s}')
        agent = disk.agent(r, cfg, "agent")
        port = tt.metrics_port(agent)
        ht.write_lines(log, lines)
        got = [None, ""]

        def stuck():
            got[0], got[1] = tt.scrape(port, "/healthz")
            return got[0] == 503
        c.check(port is not None and tt.wait_for(stuck, 15, step=0.2) and
                re.fullmatch(r"spool writer thread stuck for \d+ s\n", got[1]) is not None,
                "while a spool write hangs, /healthz is 503 naming the spool writer",
                f"{got[0]} {got[1]!r}")
        ok = tt.wait_for(lambda: tt.scrape(port, "/healthz") == (200, "ok\n"), 20, step=0.2)
        c.check(ok, "and 200 ok once the write returned")
        got = delivered(rx, len(lines))
        c.check(got == lines, "every line arrives once, in order", compare(lines, got))
        rc = agent.stop()
        c.check(rc == 0, "the daemon stops cleanly", f"rc {rc}")


def main():
    sp.run_cases({"sync": sync, "power": power, "stop": stop, "hang": hang})


if __name__ == "__main__":
    main()
