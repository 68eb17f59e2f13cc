#!/usr/bin/env python3
"""config_watch: true (docs/operating.md "Reload"): the daemon reloads, as on SIGHUP, when
the bytes of its config file change, through real inotify events on real files:
- an in-place edit written in pieces: one reload, the new input's lines read;
- an editor's save (a temp file renamed over it): one reload;
- a touch, and the same bytes written again: no reload;
- a broken file: the error logged, the old config keeps running, the error counted; then
  fixed: applied;
- a ConfigMap mount updated as the kubelet does it (`..data` swapped, old dir removed),
  twice: one reload each;
- config_watch: false: a change reloads nothing until SIGHUP; a SIGHUP that turns it on
  makes the next change reload;
- no inotify at all: the stat every 10 s finds the change."""
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import configmap  # noqa: E402
import reloadtest as rt  # noqa: E402
import tailtest as tt  # noqa: E402

QUIET = 1.5  # longer than the 500 ms debounce: a second reload would have come by then


def wait_reloads(rig, want, timeout=15):
    """Waits for the reload counts (ok, error) to be want, then QUIET seconds more; returns
    the counts then. rig.took: the seconds the counts took to get there."""
    got = [None]

    def there():
        got[0] = rig.reloads()
        return got[0] == want
    t0 = time.monotonic()
    tt.wait_for(there, timeout, step=0.05)
    rig.took = time.monotonic() - t0
    time.sleep(QUIET)
    got[0] = rig.reloads()
    return got[0]


def prompt(rig):
    """Within 3 s: the inotify event did it, not the 10 s stat."""
    return f"{rig.took:.2f} s" if rig.took < 3 else None


def arrived(wd, lines, timeout=15):
    want = set(lines)
    return tt.wait_for(lambda: want <= set(rt.messages(wd.out)), timeout, step=0.1)


def setup(name, ids):
    """A workdir with a 10-line file per id; returns it, a Writer and an input per id, and
    the file output."""
    wd = tt.Workdir(name)
    ws = tuple(rt.Writer(wd.path(f"{i}.log"), i) for i in ids)
    for w in ws:
        w.write(10)
    ins = tuple((i, [w.path], {}) for i, w in zip(ids, ws))
    return wd, ws, ins, ("local", rt.file_output(wd.out))


def add_input(c, rig, wd, inputs, iid, want, what):
    """Writes (rig.write) a config of inputs plus a new one, iid, on a file of 10 lines, with
    config_watch on; checks the reload counts become want within 3 s and its lines arrive.
    Returns the inputs the config now has."""
    w = rt.Writer(wd.path(f"{iid}.log"), iid)
    w.write(10)
    inputs = inputs + [(iid, [w.path], {})]
    rig.write(rt.config_text(wd, inputs, [("local", rt.file_output(wd.out))],
                             "config_watch: true"))
    got = wait_reloads(rig, want)
    c.check(prompt(rig) is not None and got == want, what, f"{got} after {prompt(rig)}")
    c.check(arrived(wd, w.lines), f"{what}: the input it added is read")
    return inputs


class CmRig(rt.Rig):
    """The daemon on DIR/logferry.yml, a ConfigMap-style mount."""

    def __init__(self, wd, text):
        self.wd = wd
        self.mount = os.path.join(wd.root, "cm")
        self.config = os.path.join(self.mount, "logferry.yml")
        self.write(text)
        self.sock = None
        self.agent = tt.Agent(self.config, wd, "cm")
        self.port = None
        if not tt.wait_for(self._find_port, 20):
            raise RuntimeError("no metrics port in the log:\n" + self.agent.stderr())

    def write(self, text):
        configmap.write(self.mount, {"logferry.yml": text})


def edits(c):
    wd, (a, new), (ia, inew), local = setup("cfgwatch", ["a", "new"])
    cfg1 = rt.config_text(wd, [ia], [local], "config_watch: true")
    rig = rt.Rig(wd, cfg1)
    c.check(arrived(wd, a.lines), "the first config runs")
    c.check("config_watch: reloading when" in rig.agent.stderr(), "the watch is announced")

    # (a) In place, same inode, in three writes 100 ms apart: one reload.
    cfg2 = rt.config_text(wd, [ia, inew], [local], "config_watch: true")
    ino = os.stat(rig.config).st_ino
    with open(rig.config, "r+") as f:
        f.truncate(0)
        for k in range(3):
            f.write(cfg2[k * len(cfg2) // 3:(k + 1) * len(cfg2) // 3])
            f.flush()
            time.sleep(0.1)
    c.check(os.stat(rig.config).st_ino == ino, "the edit kept the inode")
    got = wait_reloads(rig, (1, 0))
    c.check(prompt(rig) is not None and got == (1, 0),
            "an in-place edit in three writes: one reload", f"{got} after {prompt(rig)}")
    c.check("config file changed: reload 1 of" in rig.agent.stderr(),
            "the reload says why it ran")
    c.check(arrived(wd, new.lines), "the added input's file is read",
            f"{len(new.lines)} lines")

    # An editor's save: a temp file renamed over the config.
    inputs = add_input(c, rig, wd, [ia, inew], "new2", (2, 0),
                       "a temp file renamed over it: one reload")
    cfg3 = open(rig.config).read()

    # (d) A touch, then the same bytes renamed over it: nothing reloads.
    n_same = rig.agent.stderr().count("its content did not: no reload")
    os.utime(rig.config)
    ok = tt.wait_stderr(rig.agent, "its content did not: no reload", 10, n_same + 1)
    rig.write(cfg3)
    ok = ok and tt.wait_stderr(rig.agent, "its content did not: no reload", 10, n_same + 2)
    got = wait_reloads(rig, (2, 0))
    c.check(ok and got == (2, 0), "a touch and the same bytes again: looked at, no reload",
            f"{got}")

    # (c) Broken: logged, counted, the old config runs on; then fixed: applied.
    rig.write(cfg3 + "inputs: [oops\n")
    got = wait_reloads(rig, (2, 1))
    err = rig.agent.stderr()
    c.check(got == (2, 1), "a broken file: one failed reload, counted as error", f"{got}")
    c.check(re.search(r"reload 3: .*logferry\.yml:\d+:\d+", err) is not None and
            "reload 3 of" in err and "the running configuration stays" in err,
            "the error is logged with FILE:LINE:COL and the old config stays")
    c.check(arrived(wd, a.write(10)), "the old config keeps shipping")
    c.check(rig.healthz() == 200, "/healthz is 200 after the broken file")
    add_input(c, rig, wd, inputs, "new3", (3, 1), "the fixed file: reloaded")
    msgs = rt.messages(wd.out)
    c.check(len(msgs) == len(set(msgs)), "no event delivered twice", f"{len(msgs)} events")
    rc = rig.stop()
    c.check(rc == 0, "SIGTERM exits 0", f"rc={rc}")
    return wd


def configmap_mount(c):
    wd, (a,), (ia,), local = setup("cfgwatch-cm", ["a"])
    rig = CmRig(wd, rt.config_text(wd, [ia], [local], "config_watch: true"))
    c.check(os.path.islink(rig.config) and
            os.readlink(rig.config) == os.path.join("..data", "logferry.yml"),
            "the config path is logferry.yml -> ..data/logferry.yml")
    c.check(arrived(wd, a.lines), "the ConfigMap's first config runs")
    first = os.readlink(os.path.join(rig.mount, "..data"))
    inputs = add_input(c, rig, wd, [ia], "b", (1, 0),
                       "a ConfigMap update (..data swapped): one reload")
    c.check(not os.path.exists(os.path.join(rig.mount, first)),
            "the old timestamped directory is gone")
    add_input(c, rig, wd, inputs, "d", (2, 0), "a second ConfigMap update: one more reload")
    rc = rig.stop()
    c.check(rc == 0, "SIGTERM exits 0", f"rc={rc}")
    return wd


def off(c):
    wd, (a, b), (ia, ib), local = setup("cfgwatch-off", ["a", "b"])
    rig = rt.Rig(wd, rt.config_text(wd, [ia], [local]))
    c.check(arrived(wd, a.lines), "without config_watch: the first config runs")
    rig.write(rt.config_text(wd, [ia, ib], [local], "config_watch: false"))
    time.sleep(2)
    got = rig.reloads()
    c.check(got == (0, 0) and not set(b.lines) & set(rt.messages(wd.out)),
            "config_watch: false: a change reloads nothing", f"{got}")
    c.check("config_watch" not in rig.agent.stderr(), "nothing is watched")
    rig.write(rt.config_text(wd, [ia, ib], [local], "config_watch: true"))
    os.kill(rig.agent.pid, signal.SIGHUP)
    got = wait_reloads(rig, (1, 0))
    c.check(got == (1, 0) and arrived(wd, b.lines), "SIGHUP applies it", f"{got}")
    c.check(tt.wait_stderr(rig.agent, "config_watch: reloading when", 5),
            "a reload that turns config_watch on starts the watch")
    rig.write(rt.config_text(wd, [ia], [local], "config_watch: true"))
    got = wait_reloads(rig, (2, 0))
    c.check(got == (2, 0), "then a change reloads", f"{got}")
    rig.write(rt.config_text(wd, [ia, ib], [local], "config_watch: false"))
    got = wait_reloads(rig, (3, 0))
    c.check(got == (3, 0), "the change that turns it off is applied", f"{got}")
    rig.write(rt.config_text(wd, [ia], [local], "config_watch: false"))
    time.sleep(2)
    got = rig.reloads()
    c.check(got == (3, 0), "and the next change is not", f"{got}")
    rc = rig.stop()
    c.check(rc == 0, "SIGTERM exits 0", f"rc={rc}")
    return wd


def fallback(c):
    """No inotify at all (a user namespace whose max_inotify_instances is 0, as in
    tail_inotify.py): the 10 s stat finds the change."""
    wd, (a, b), (ia, ib), local = setup("cfgwatch-poll", ["a", "b"])
    script = 'echo 0 > /proc/sys/user/max_inotify_instances && exec "$0" "$@"'
    rig = rt.Rig(wd, rt.config_text(wd, [ia], [local], "config_watch: true"), tag="poll",
                 argv_prefix=["unshare", "-U", "-r", "sh", "-c", script])
    c.check(tt.wait_stderr(rig.agent, "config_watch: cannot watch", 10),
            "without inotify: the fallback is logged")
    c.check(arrived(wd, a.lines), "without inotify: the first config runs")
    rig.write(rt.config_text(wd, [ia, ib], [local], "config_watch: true"))
    got = wait_reloads(rig, (1, 0), timeout=15)
    c.check(got == (1, 0) and 0.5 < rig.took < 12, "the 10 s stat reloads the change once",
            f"{got} after {rig.took:.1f} s")
    c.check(arrived(wd, b.lines), "the input it added is read")
    rc = rig.stop()
    c.check(rc == 0, "SIGTERM exits 0", f"rc={rc}")
    return wd


def main():
    c = tt.Checks()
    dirs = [edits(c), configmap_mount(c), off(c), fallback(c)]
    if c.failed == 0:
        for wd in dirs:
            wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
