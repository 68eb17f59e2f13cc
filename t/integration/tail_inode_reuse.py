#!/usr/bin/env python3
"""Inode reuse in the tailing daemon: a file read and acknowledged is deleted, and files are
created until one gets its inode back, once while the agent runs and once while it is
stopped. The new file has another head (fingerprint), so it must be read from 0, fully, once.

Whether an inode comes back is up to the file system: ext4 and xfs hand a freed inode out
again, tmpfs never does. When reuse cannot be provoked here the cases cannot be tested, and
the script exits 77 (skipped), not 0."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402

SKIP = 77


def write_lines(path, lines):
    with open(path, "a") as f:
        f.write("".join(ln + "\n" for ln in lines))


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


def start(config, wd):
    """Starts the agent and waits until it is up (its log is appended to across runs)."""
    path = os.path.join(wd.root, "reuse.stderr")
    before = open(path).read().count("following 1 inputs") if os.path.exists(path) else 0
    agent = tt.Agent(config, wd, "reuse")
    tt.wait_stderr(agent, "following 1 inputs", count=before + 1)
    return agent


def reuse_case(c, wd, config, agent, running, n_before):
    """Old file A read and acknowledged, deleted; new file B on the same inode (different
    head, longer) must be read from 0. Returns (agent, provoked, events expected)."""
    tag = "running" if running else "stopped"
    a_path = wd.path(f"reuse-{tag}.log")
    a_lines = [f"{tag} old file A line {i:04d}" for i in range(40)]
    write_lines(a_path, a_lines)
    want = n_before + len(a_lines)
    got = tt.wait_events(wd.out, want, 60)
    c.check(got >= want, f"inode reuse ({tag}): the old file is read", f"{got}/{want}")
    size = os.path.getsize(a_path)
    off = tt.wait_registry_offset(wd.data, a_path, size, 30)
    c.check(off == size, f"inode reuse ({tag}): the old file is acknowledged in the registry",
            f"offset {off} of {size}")
    old_ino = os.stat(a_path).st_ino
    if not running:
        c.check(agent.stop() == 0, "inode reuse (stopped): SIGTERM exits 0")
    os.unlink(a_path)
    if running:
        # The agent must let go of the deleted file before its inode can be reused.
        let_go = tt.wait_for(lambda: not held_deleted(agent.pid, a_path), 30, step=0.1)
        c.check(let_go, "inode reuse (running): the agent closes the deleted file",
                f"{a_path} still open 30 s after its deletion")
        if not let_go:
            return agent, True, want
    b_name = f"reuse-{tag}-new.log"
    b_path = provoke_reuse(wd.logs, old_ino, b_name)
    if b_path is None:
        print(f"inode reuse ({tag}): could not provoke reuse of inode {old_ino}")
        if not running:
            agent = start(config, wd)
        return agent, False, want
    print(f"inode reuse ({tag}): {b_path} got the old inode {old_ino}")
    b_lines = [f"{tag} NEW file B, another head, line {i:04d}" for i in range(80)]
    write_lines(b_path, b_lines)
    if not running:
        agent = start(config, wd)
    want += len(b_lines)
    tt.wait_events(wd.out, want, 60)
    size = os.path.getsize(b_path)
    off = tt.wait_registry_offset(wd.data, b_path, size, 30)
    c.check(off == size, f"inode reuse ({tag}): the new file is acknowledged to its end",
            f"offset {off} of {size}")
    by = tt.messages_by_path(tt.read_events(wd.out))
    got = by.get(b_path, [])
    missing, dups, order = tt.compare_streams(b_lines, got)
    c.check(not missing and dups == 0 and order == 0 and len(got) == len(b_lines),
            f"inode reuse ({tag}): the new file on the old inode is read from 0, once",
            f"{len(b_lines)} written, {len(got)} received, missing {len(missing)}, "
            f"duplicates {dups}, out of order {order}")
    return agent, True, want


def main():
    c = tt.Checks()
    wd = tt.Workdir("reuse")
    config = tt.write_config(wd, [{"id": "id", "paths": [wd.path("*.log")]}])
    agent = start(config, wd)
    c.check(agent.alive(), "the agent starts", agent.stderr()[-300:])
    provoked = 0
    total = 0
    agent, ok, total = reuse_case(c, wd, config, agent, True, total)
    provoked += ok
    agent, ok, total = reuse_case(c, wd, config, agent, False, total)
    provoked += ok
    print(f"inode reuse provoked in {provoked} of 2 cases")
    rc = agent.stop()
    c.check(rc == 0, "SIGTERM exits 0 at the end", f"rc={rc}")
    tt.check_no_error_logged(c, agent.stderr())
    wd.cleanup()
    if c.failed == 0 and provoked < 2:
        print(f"SKIP: this file system did not reuse a freed inode in {2 - provoked} of 2 "
              "cases (tmpfs never does)")
        sys.exit(SKIP)
    c.finish()


if __name__ == "__main__":
    main()
