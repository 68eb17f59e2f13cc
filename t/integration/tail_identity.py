#!/usr/bin/env python3
"""File identity in the tailing daemon (device + inode + fingerprint of the first bytes):
small files, empty files that later get content, files with identical first lines, a file
renamed within the glob, a small file that grows past the fingerprint while the agent is
stopped, and files whose content is replaced in place (same inode, other bytes, longer than
what was read) while it is stopped, under 1 KiB and past it. Each file must be read fully,
once; a replaced one again from 0. The registry must name each file by its own device and
inode. Inode reuse is tail_inode_reuse.py: the file system decides whether it can be
provoked."""
import os

import tailtest as tt


def write_lines(path, lines, mode="a"):
    with open(path, mode) as f:
        for ln in lines:
            f.write(ln + "\n")


def check_exact(c, name, got, expected):
    """got: messages received for a file; expected: what was written, in order."""
    missing, dups, order = tt.compare_streams(expected, got)
    extra = len([m for m in got if m not in set(expected)])
    ok = not missing and dups == 0 and order == 0 and extra == 0
    c.check(ok, name, f"{len(expected)} written, {len(got)} received, missing {len(missing)}, "
            f"duplicates {dups}, out of order {order}, foreign {extra}"
            + (f", first missing {missing[0]!r}" if missing else ""))


def acknowledged(c, wd, paths, what):
    """Waits until the registry holds each path at its size: everything read, delivered and
    acknowledged, so any duplicate would already be in the output."""
    late = []
    for p in paths:
        size = os.path.getsize(p)
        off = tt.wait_registry_offset(wd.data, p, size, 30)
        if off != size:
            late.append(f"{os.path.basename(p)} at {off} of {size}")
    c.check(not late, f"{what}: the registry reaches the end of each file", ", ".join(late))


def registry_names_files(c, wd, what):
    """Each registry entry holds the device and inode its path has now."""
    recs = tt.read_registry(wd.data) or []
    wrong = []
    for r in recs:
        st = os.stat(r["path"])
        if (r["dev"], r["ino"]) != (st.st_dev, st.st_ino):
            wrong.append(f"{os.path.basename(r['path'])}: {r['dev']}/{r['ino']}, "
                         f"file {st.st_dev}/{st.st_ino}")
    c.check(recs and not wrong, f"{what}: each registry entry holds its file's device and inode",
            f"{len(recs)} entries" + (f"; {', '.join(wrong[:3])}" if wrong else ""))


def replace_in_place(path, lines):
    """Other content on the same inode (truncate, then write): what a copytruncate or a
    program rewriting its log does, and what a reused inode looks like."""
    ino = os.stat(path).st_ino
    with open(path, "r+") as f:
        f.truncate(0)
        f.write("".join(ln + "\n" for ln in lines))
    assert os.stat(path).st_ino == ino


def main():
    c = tt.Checks()
    wd = tt.Workdir("identity")
    config = tt.write_config(wd, [{"id": "id", "paths": [wd.path("*.log")]}])
    agent = tt.Agent(config, wd, "identity")
    started = tt.wait_stderr(agent, "following 1 inputs")  # after the first scan
    c.check(started and agent.alive(), "the agent survives a first scan that finds no file",
            agent.stderr().strip()[-300:])
    expected = {}

    # Small files (under 1 KiB) and files whose first 2 KiB are identical.
    for i in range(5):
        p = wd.path(f"small{i}.log")
        expected[p] = [f"small file {i} line {k}" for k in range(3)]
    same_head = [f"identical head line {k:03d} " + "x" * 40 for k in range(40)]  # ~2.6 KiB
    for i in range(4):
        p = wd.path(f"twin{i}.log")
        expected[p] = same_head + [f"twin {i} own line {k}" for k in range(5)]
    for p, lines in expected.items():
        write_lines(p, lines)
    # Empty files that get content after the agent found them.
    empties = [wd.path(f"empty{i}.log") for i in range(3)]
    for p in empties:
        open(p, "w").close()
    # The empty files are known once the agent holds them open.
    opened = tt.wait_for(lambda: all(tt.fd_position(agent.pid, p) is not None
                                     for p in empties), 30, step=0.1)
    c.check(opened, "the empty files are found and opened",
            repr([tt.fd_position(agent.pid, p) for p in empties]))
    for i, p in enumerate(empties):
        expected[p] = [f"empty file {i} got line {k}" for k in range(4)]
        write_lines(p, expected[p])
    total = sum(len(v) for v in expected.values())
    tt.wait_events(wd.out, total, 60)
    acknowledged(c, wd, sorted(expected), "small, twin and empty files")
    registry_names_files(c, wd, "small, twin and empty files")
    by = tt.messages_by_path(tt.read_events(wd.out))
    for p in sorted(expected):
        check_exact(c, f"{os.path.basename(p)} is read fully and separately",
                    by.get(p, []), expected[p])

    # A file renamed within the glob is continued under its new name.
    mv_old, mv_new = wd.path("moving.log"), wd.path("moved.log")
    mv_lines = [f"moving line {k:04d}" for k in range(150)]
    write_lines(mv_old, mv_lines[:100])
    total += 100
    tt.wait_events(wd.out, total, 60)
    os.rename(mv_old, mv_new)
    # A scan sees the new name: the registry entry moves to it.
    moved = tt.wait_for(lambda: any(r["path"] == mv_new for r in tt.read_registry(wd.data)
                                    or []), 30, step=0.1)
    c.check(moved, "the registry follows the rename", mv_new)
    write_lines(mv_new, mv_lines[100:])
    total += 50
    tt.wait_events(wd.out, total, 60)
    acknowledged(c, wd, [mv_new], "the renamed file")
    by = tt.messages_by_path(tt.read_events(wd.out))
    check_exact(c, "a file renamed within the glob is continued, no line twice",
                by.get(mv_old, []) + by.get(mv_new, []), mv_lines)
    c.check(set(by.get(mv_new, [])) == set(mv_lines[100:]),
            "lines written after the rename carry the new path",
            f"{len(by.get(mv_new, []))} under {os.path.basename(mv_new)}")

    # A small file grows past the fingerprint size while the agent is stopped.
    grow = wd.path("small0.log")
    c.check(agent.stop() == 0, "SIGTERM exits 0 before the growth")
    more = [f"small file 0 later line {k:03d} " + "y" * 30 for k in range(60)]  # ~3.5 KiB
    write_lines(grow, more)
    expected[grow] = expected[grow] + more
    total += len(more)
    # Content replaced in place while stopped, longer than what was read: the size says
    # "grown", only the fingerprint says "other content". Under 1 KiB the stored fingerprint
    # is a prefix to re-hash; past it, the two 1 KiB hashes differ.
    replaced = {wd.path("small1.log"): [f"small file 1 replaced, line {k:03d}" for k in range(20)],
                wd.path("twin1.log"): [f"twin 1 replaced, line {k:03d} " + "z" * 40
                                       for k in range(70)]}
    for p, lines in replaced.items():
        replace_in_place(p, lines)
        expected[p] = expected[p] + lines
        total += len(lines)
    agent = tt.Agent(config, wd, "identity")
    tt.wait_events(wd.out, total, 60)
    acknowledged(c, wd, [grow] + sorted(replaced), "the grown and the replaced files")
    by = tt.messages_by_path(tt.read_events(wd.out))
    check_exact(c, "a small file grown past 1 KiB while stopped continues from its offset",
                by.get(grow, []), expected[grow])
    for p in sorted(replaced):
        check_exact(c, f"{os.path.basename(p)}, replaced in place while stopped, is read again "
                    "from 0", by.get(p, []), expected[p])
    said = agent.stderr().count("with other content; reading it as a new file")
    c.check(said == len(replaced), "the log says each replaced file is read as a new one",
            f"{said} times")
    registry_names_files(c, wd, "after the restart")

    rc = agent.stop()
    c.check(rc == 0, "SIGTERM exits 0 at the end", f"rc={rc}")
    tt.check_no_error_logged(c, agent.stderr())
    wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
