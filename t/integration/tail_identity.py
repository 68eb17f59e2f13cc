#!/usr/bin/env python3
"""File identity in the tailing daemon (device + inode + fingerprint of the first bytes):
small files, empty files that later get content, files with identical first lines, a file
renamed within the glob, a small file that grows past the fingerprint while the agent is
stopped, and inode reuse (delete, then create until the new file gets the old inode) both
while the agent runs and while it is stopped. Each file must be read fully, once."""
import os
import signal
import time

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


def held_deleted(pid, path):
    """Whether the agent still holds path open after its deletion."""
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(path + " (deleted)"):
                    return True
            except OSError:
                pass
    except OSError:
        pass
    return False


def provoke_reuse(directory, old_ino, name, tries=200):
    """Creates files in directory until one gets old_ino; returns its path or None. Files
    that did not get it are removed afterwards (they are not in the glob: .tmp)."""
    junk = []
    found = None
    for i in range(tries):
        tmp = os.path.join(directory, f"probe{i}.tmp")
        fd = os.open(tmp, os.O_CREAT | os.O_WRONLY, 0o644)
        os.close(fd)
        if os.stat(tmp).st_ino == old_ino:
            found = os.path.join(directory, name)
            os.rename(tmp, found)
            break
        junk.append(tmp)
    for j in junk:
        os.unlink(j)
    return found


def reuse_case(c, wd, config, agent, running, n_before):
    """Old file A read and acknowledged, deleted; new file B on the same inode (different
    head, longer) must be read from 0. Returns (agent, provoked)."""
    tag = "running" if running else "stopped"
    a_path = wd.path(f"reuse-{tag}.log")
    a_lines = [f"{tag} old file A line {i:04d}" for i in range(40)]
    write_lines(a_path, a_lines)
    want = n_before + len(a_lines)
    got = tt.wait_events(wd.out, want, 20)
    c.check(got >= want, f"inode reuse ({tag}): the old file is read", f"{got}/{want}")
    time.sleep(1.0)  # acknowledged and in the registry
    old_ino = os.stat(a_path).st_ino
    if not running:
        c.check(agent.stop() == 0, "inode reuse (stopped): SIGTERM exits 0")
    os.unlink(a_path)
    if running:
        # The agent must let go of the deleted file before its inode can be reused.
        tt.wait_for(lambda: not held_deleted(agent.pid, a_path), 10)
    b_name = f"reuse-{tag}-new.log"
    b_path = provoke_reuse(wd.logs, old_ino, b_name)
    if b_path is None:
        print(f"inode reuse ({tag}): could not provoke reuse of inode {old_ino}; not tested")
        if not running:
            agent = tt.Agent(config, wd, "identity")
        return agent, False, want
    print(f"inode reuse ({tag}): {b_path} got the old inode {old_ino}")
    b_lines = [f"{tag} NEW file B, another head, line {i:04d}" for i in range(80)]
    write_lines(b_path, b_lines)
    if not running:
        agent = tt.Agent(config, wd, "identity")
    want += len(b_lines)
    tt.wait_events(wd.out, want, 20)
    time.sleep(0.5)
    by = tt.messages_by_path(tt.read_events(wd.out))
    check_exact(c, f"inode reuse ({tag}): the new file on the old inode is read from 0",
                by.get(b_path, []), b_lines)
    return agent, True, want


def main():
    c = tt.Checks()
    wd = tt.Workdir("identity")
    config = tt.write_config(wd, [{"id": "id", "paths": [wd.path("*.log")]}])
    agent = tt.Agent(config, wd, "identity")
    time.sleep(1.5)  # the first scan finds an empty directory
    c.check(agent.alive(), "the agent survives a first scan that finds no file",
            agent.stderr().strip().splitlines()[-1] if not agent.alive() else "")
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
    time.sleep(2.5)  # more than one scan_interval: the empty files are known
    for i, p in enumerate(empties):
        expected[p] = [f"empty file {i} got line {k}" for k in range(4)]
        write_lines(p, expected[p])
    total = sum(len(v) for v in expected.values())
    tt.wait_events(wd.out, total, 20)
    time.sleep(0.5)
    by = tt.messages_by_path(tt.read_events(wd.out))
    for p in sorted(expected):
        check_exact(c, f"{os.path.basename(p)} is read fully and separately",
                    by.get(p, []), expected[p])

    # A file renamed within the glob is continued under its new name.
    mv_old, mv_new = wd.path("moving.log"), wd.path("moved.log")
    mv_lines = [f"moving line {k:04d}" for k in range(150)]
    write_lines(mv_old, mv_lines[:100])
    total += 100
    tt.wait_events(wd.out, total, 20)
    os.rename(mv_old, mv_new)
    time.sleep(1.5)  # a scan sees the new name
    write_lines(mv_new, mv_lines[100:])
    total += 50
    tt.wait_events(wd.out, total, 20)
    time.sleep(0.5)
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
    agent = tt.Agent(config, wd, "identity")
    tt.wait_events(wd.out, total, 20)
    time.sleep(0.5)
    by = tt.messages_by_path(tt.read_events(wd.out))
    check_exact(c, "a small file grown past 1 KiB while stopped continues from its offset",
                by.get(grow, []), expected[grow])

    provoked = 0
    agent, ok, total = reuse_case(c, wd, config, agent, True, total)
    provoked += ok
    agent, ok, total = reuse_case(c, wd, config, agent, False, total)
    provoked += ok
    print(f"inode reuse provoked in {provoked} of 2 cases")

    rc = agent.stop()
    c.check(rc == 0, "SIGTERM exits 0 at the end", f"rc={rc}")
    err = agent.stderr()
    c.check("ERROR" not in err.upper().replace("ERRORS", ""), "no error logged",
            "\n".join(ln for ln in err.splitlines() if "error" in ln.lower())[:500])
    wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
