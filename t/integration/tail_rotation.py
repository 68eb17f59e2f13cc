#!/usr/bin/env python3
"""Rotation under load: a writer appends 1,000 numbered lines/s spread over 20 files for
30 s (LF_SOAK: 5 min) while each file is rotated every 2-4 s, by rename (file.log ->
file.log.K, a line or two more through the old descriptor, then a new file.log) or by
copytruncate (copy to file.log.K, then truncate in place). Files s00-s09 live in a/, whose
glob a/*.log does NOT match the rotated names; s10-s19 in b/, whose glob b/*.log* DOES.
Even streams rotate by rename, odd ones by copytruncate.

Then, the agent stopped, every file is rotated once more (logrotate while the agent is down)
and written past the size it had, and the agent started again: each renamed file goes on
from its saved offset under its new name, and a file copytruncated while the agent was
stopped is read again from 0 although it grew past its saved offset (only its fingerprint
tells: same inode, larger size).

Asserted after the second SIGTERM: every line arrived at least once; in order within each
physical file; renamed files, matched by the glob or not, are not read twice (no duplicates
for the rename streams). Printed: duplicates per kind.

The copytruncate race: lines written after the copy and before the truncate are in neither
file once the truncate is done (they are in the original only, and only for that moment).
Every agent loses them unless it happened to read them in between; they are counted
separately ("race lines"), computed exactly by the writer, and never fail the test. Likewise
the last lines before a copy that the agent had not read yet when the truncate came exist
only in the copy: where the glob does not match copies (a/) they are lost by design too,
counted as "copy tail lost": a lost suffix of one file generation, written within the last
second before its copy (the agent follows writes within a second; a lost line followed by a
delivered one in the same generation, or written longer before the copy, is a real loss). The
copies themselves are new inodes: where the glob matches them (b/) they are read as new
files, so their lines come twice; those duplicates are reported, not failed."""
import os
import random
import shutil
import time

import tailtest as tt

STREAMS = 20
RATE = 1000  # lines/s over all streams
DURATION = 300 if tt.SOAK else 30


class Stream:
    def __init__(self, idx, directory):
        self.idx = idx
        self.path = os.path.join(directory, f"s{idx:02d}.log")
        self.kind = "rename" if idx % 2 == 0 else "copytruncate"
        self.matched = idx >= STREAMS // 2  # the glob matches rotated names
        self.f = open(self.path, "ab", buffering=0)
        self.gen = 0
        self.offset = 0
        self.seq = 0
        self.lines = []  # (text, gen, monotonic time written)
        self.copied_at = {}  # gen -> monotonic time its copy started
        self.race = set()  # texts in neither file after a copytruncate
        self.copies = []  # paths of copytruncate copies
        self.rotated = 0
        self.size_at_stop = None  # bytes in the file when the agent stopped

    def write(self, rng, f=None):
        text = f"s{self.idx:02d} {self.seq:08d} " + "r" * rng.randrange(0, 60)
        (f or self.f).write(text.encode() + b"\n")
        self.lines.append((text, self.gen, time.monotonic()))
        self.seq += 1
        return text

    def rotate(self, rng):
        self.rotated += 1
        dest = f"{self.path}.{self.rotated}"
        if self.kind == "rename":
            os.rename(self.path, dest)
            for _ in range(rng.randrange(0, 3)):
                self.write(rng)  # still through the old descriptor: the renamed file
            self.f.close()
            self.f = open(self.path, "ab", buffering=0)
        else:
            self.copied_at[self.gen] = time.monotonic()
            shutil.copyfile(self.path, dest)
            self.copies.append(dest)
            for _ in range(rng.randrange(0, 3)):
                self.race.add(self.write(rng))  # between copy and truncate
            os.truncate(self.path, 0)
        self.gen += 1


def run_writer(streams, rng, duration):
    start = time.monotonic()
    next_rot = [start + rng.uniform(1.0, 4.0) for _ in streams]
    tick = 0.01
    per_tick = RATE * tick
    due = 0.0
    k = 0
    while True:
        now = time.monotonic()
        if now - start >= duration:
            break
        due += per_tick
        while due >= 1:
            streams[k % len(streams)].write(rng)
            k += 1
            due -= 1
        for i, s in enumerate(streams):
            if now >= next_rot[i]:
                s.rotate(rng)
                next_rot[i] = now + rng.uniform(2.0, 4.0)
        sleep = start + (k / RATE) - time.monotonic()
        time.sleep(max(sleep, 0.001))
    for s in streams:
        s.f.close()
    return k


def rotate_while_stopped(streams, rng):
    """Each stream rotated once more, then written past the size its file had before. No
    line goes to a renamed file after its rename: one the glob does not match would never be
    seen by an agent that was not running."""
    for s in streams:
        before = os.path.getsize(s.path)
        s.size_at_stop = before
        if s.kind == "rename":
            s.rotated += 1
            os.rename(s.path, f"{s.path}.{s.rotated}")
            s.gen += 1
            s.f = open(s.path, "ab", buffering=0)
        else:
            s.f = open(s.path, "ab", buffering=0)
            s.rotate(rng)
        while os.path.getsize(s.path) <= before + 100:
            s.write(rng)
        s.f.close()


def drain(wd):
    """Waits until the output stops growing for 3 s (at most 60 s)."""
    last, still = -1, time.monotonic()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        cur = tt.count_lines(wd.out)
        if cur != last:
            last, still = cur, time.monotonic()
        elif time.monotonic() - still >= 3:
            break
        time.sleep(0.2)


def analyse(c, streams, events):
    copy_paths = {p for s in streams for p in s.copies}
    by_text = {}
    order = {}
    for ev in events:
        m = ev["message"]
        by_text[m] = by_text.get(m, 0) + 1
    stats = {}
    order_breaks = 0
    lost_unexpected = []
    for s in streams:
        key = (s.kind, "matched" if s.matched else "unmatched")
        st = stats.setdefault(key, {"lines": 0, "dups": 0, "race": 0, "race_lost": 0,
                                    "tail_lost": 0, "lost": 0, "rotations": 0})
        st["lines"] += len(s.lines)
        st["rotations"] += s.rotated
        st["race"] += len(s.race)
        gens = {}
        for text, gen, when in s.lines:
            gens.setdefault(gen, []).append((text, when))
            n = by_text.get(text, 0)
            if n > 0:
                st["dups"] += n - 1
        for gen, texts in gens.items():
            lost = [i for i, (t, _) in enumerate(texts) if by_text.get(t, 0) == 0]
            copied = s.kind == "copytruncate" and gen < s.gen
            # Unread when the truncate came and only in a copy the glob does not match:
            # a suffix of the generation, written in the last second before the copy, lost
            # by design. Older lines had a second to be read.
            suffix = bool(lost) and lost == list(range(lost[0], len(texts)))
            recent = s.copied_at.get(gen, float("inf")) - 1.0
            for i in lost:
                text, when = texts[i]
                if text in s.race:
                    st["race_lost"] += 1
                elif copied and not s.matched and suffix and when >= recent:
                    st["tail_lost"] += 1
                else:
                    st["lost"] += 1
                    lost_unexpected.append(text)
    # Order: within one physical file (stream, generation), first arrivals in write order.
    gen_of = {text: (s.idx, gen) for s in streams for text, gen, _ in s.lines}
    seen = set()
    for ev in events:
        m = ev["message"]
        if m in seen or ev["log"]["file"]["path"] in copy_paths or m not in gen_of:
            continue
        seen.add(m)
        key = gen_of[m]
        seq = int(m.split()[1])
        if order.get(key, -1) > seq:
            order_breaks += 1
        order[key] = seq
    print(f"{'rotation':<13} {'glob':<10} {'rotations':>9} {'lines':>8} {'lost':>5} "
          f"{'race':>5} {'race lost':>9} {'copy tail lost':>14} {'duplicates':>10}")
    for (kind, glob_), st in sorted(stats.items()):
        print(f"{kind:<13} {glob_:<10} {st['rotations']:>9} {st['lines']:>8} {st['lost']:>5} "
              f"{st['race']:>5} {st['race_lost']:>9} {st['tail_lost']:>14} {st['dups']:>10}")
    return stats, lost_unexpected, order_breaks


def main():
    c = tt.Checks()
    rng = random.Random(int(os.environ.get("LF_SEED", "20261130")))
    wd = tt.Workdir("rotation")
    a, b = wd.path("a"), wd.path("b")
    os.makedirs(a)
    os.makedirs(b)
    config = tt.write_config(wd, [
        {"id": "unmatched", "paths": [os.path.join(a, "*.log")]},
        {"id": "matched", "paths": [os.path.join(b, "*.log*")]},
    ])
    streams = [Stream(i, a if i < STREAMS // 2 else b) for i in range(STREAMS)]
    agent = tt.Agent(config, wd, "rotation")
    t0 = time.monotonic()
    n = run_writer(streams, rng, DURATION)
    took = time.monotonic() - t0
    print(f"wrote {n} lines in {took:.1f} s ({n / took:.0f}/s) to {STREAMS} files, "
          f"{sum(s.rotated for s in streams)} rotations")
    drain(wd)
    rc = agent.stop()
    c.check(rc == 0, "SIGTERM exits 0", f"rc={rc}, {agent.stop_seconds:.2f} s")
    err = agent.stderr()
    rotate_while_stopped(streams, rng)
    agent = tt.Agent(config, wd, "rotation2")
    drain(wd)
    rc = agent.stop()
    c.check(rc == 0, "after a rotation while stopped, the second run exits 0",
            f"rc={rc}, {agent.stop_seconds:.2f} s")
    said = agent.stderr().count("with other content; reading it as a new file")
    # A file the agent last saw empty (copytruncated in the last moment of the writer, with no
    # line since) has no fingerprint to tell it by: it is read from its saved offset, 0, with
    # nothing to say; the loss check below covers it.
    copytruncated = sum(s.kind == "copytruncate" and s.size_at_stop > 0 for s in streams)
    empty = sum(s.kind == "copytruncate" and s.size_at_stop == 0 for s in streams)
    c.check(said == copytruncated,
            "each file copytruncated while stopped is read again from 0, the log says",
            f"{said} of {copytruncated} ({empty} more were empty when the agent stopped)")
    err += agent.stderr()
    events = tt.read_events(wd.out)
    print(f"{len(events)} events received")
    stats, lost, order_breaks = analyse(c, streams, events)
    c.check(not lost, "every line arrived at least once (race lines aside)",
            f"{len(lost)} lost" + (f", e.g. {lost[:3]}" if lost else ""))
    c.check(order_breaks == 0, "lines arrive in order within each physical file",
            f"{order_breaks} out of order")
    for glob_ in ("unmatched", "matched"):
        st = stats[("rename", glob_)]
        c.check(st["dups"] == 0, f"renamed files ({glob_} by the glob) are not read twice",
                f"{st['dups']} duplicates")
    race = sum(st["race"] for st in stats.values())
    race_lost = sum(st["race_lost"] for st in stats.values())
    tail = sum(st["tail_lost"] for st in stats.values())
    print(f"copytruncate race: {race} lines written between copy and truncate, "
          f"{race_lost} lost (by design), {race - race_lost} read before the truncate; "
          f"{tail} lines at the end of a copy the glob does not match were not read before "
          f"the truncate (lost by design)")
    c.check("error" not in err.lower(), "no error logged",
            "\n".join(ln for ln in err.splitlines() if "error" in ln.lower())[:400])
    wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
