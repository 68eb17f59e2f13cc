#!/usr/bin/env python3
"""The journald input over real journal files (systemd-journal-remote, journaltest.py), read
by `--once` and `--preview`: every event compared member by member with the export input.

The journal: three boots in three files of one directory (an archived system@...journal
and system.journal, user-1000.journal interleaved with it in time), with sshd, cron, the
kernel, systemd's own messages about units (UNIT= with _PID=1), a user unit, a MESSAGE in
binary form (newline, NUL), invalid UTF-8 in MESSAGE and in a mapped field, a 3-byte
character across max_line_bytes, entries without MESSAGE or PRIORITY, odd values (PRIORITY
9, leading zeros, a 20-digit _UID, a _PID that is no number), a custom field of digits
(a string: only the mapped numbers are JSON numbers), repeated fields, two fields of one
custom name, JSON escapes.

directory       --once: every entry, in order, log.offset 0..n-1, exit 0; the registry holds
                the journal's position (device 0, inode 0, offset n, the last entry's cursor)
files           a glob of journal files: the entries of those files only
preview         --preview ID and --preview ID DIR print what --once wrote; --preview ID FILE
                that file's entries
filters         units (with systemd's UNIT= messages), matches (same field ORed, different
                ANDed), priority (by name and number; entries without PRIORITY left out),
                units and priority together
fields          include_fields "*" and by name; exclude_fields of mapped and custom fields
drops           line_overflow skip, skip_empty_lines and an exclude_lines stage drop their
                entries; log.offset stays each entry's place
stages          multiline, exclude_lines and ndjson give the events of the same lines read
                from a file
start_at end    --once reads nothing; after more entries are written a second run reads
                exactly those; the directory input read before resumes after its last entry"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import journaltest as jt  # noqa: E402
import tailtest as tt  # noqa: E402

MAXB = 64
BOOT_A = "a1" * 16
BOOT_B = "b2" * 16
BOOT_C = "c3" * 16
MACHINE = "0f" * 16
SSHD = dict(_SYSTEMD_UNIT="ssh.service", _PID=812, _UID=0, _GID=0, _COMM="sshd",
            _EXE="/usr/sbin/sshd", _CMDLINE="sshd: /usr/sbin/sshd -D [listener] 0 of 10-100",
            _HOSTNAME="h1", _MACHINE_ID=MACHINE, _TRANSPORT="syslog", SYSLOG_IDENTIFIER="sshd",
            SYSLOG_FACILITY=4, _SYSTEMD_CGROUP="/system.slice/ssh.service")


def systemd_about(boot, unit, text):
    return boot.entry(text, PRIORITY=6, SYSLOG_FACILITY=3, _SYSTEMD_UNIT="init.scope", _PID=1,
                      _UID=0, _GID=0, _COMM="systemd", _EXE="/usr/lib/systemd/systemd",
                      _HOSTNAME="h1", _TRANSPORT="journal", SYSLOG_IDENTIFIER="systemd",
                      UNIT=unit, CODE_FUNC="unit_log_success", INVOCATION_ID="7e" * 16)


def boot_a():
    b = jt.Boot(BOOT_A, 1_700_000_000_000_000)
    return [
        systemd_about(b, "ssh.service", "Started ssh.service - OpenBSD Secure Shell server."),
        b.entry("Server listening on 0.0.0.0 port 22.", PRIORITY=6, **SSHD),
        b.entry("usb 1-1: new high-speed USB device number 2 using xhci_hcd", PRIORITY=6,
                SYSLOG_FACILITY=0, _TRANSPORT="kernel", SYSLOG_IDENTIFIER="kernel",
                _HOSTNAME="h1", _MACHINE_ID=MACHINE),
        b.entry("(root) CMD (cd / && run-parts --report /etc/cron.hourly)", PRIORITY=6,
                SYSLOG_FACILITY=9, _SYSTEMD_UNIT="cron.service", _PID=903, _UID=0, _GID=0,
                _COMM="cron", _TRANSPORT="syslog", SYSLOG_IDENTIFIER="CRON", _HOSTNAME="h1"),
        b.entry(b"line one\nline two\x00after a NUL", binary=("MESSAGE",), PRIORITY=3,
                _SYSTEMD_UNIT="app.service", _PID=2001, _TRANSPORT="stdout", _HOSTNAME="h2"),
        b.entry(b"bad \xff\xfe bytes \xc3( and \xed\xa0\x80 end \xe2\x82", PRIORITY=4,
                _SYSTEMD_UNIT="app.service", _PID=2001, _TRANSPORT="stdout", _HOSTNAME="h2"),
        b.entry(None, PRIORITY=5, _SYSTEMD_UNIT="app.service", CONTAINER_NAME="web",
                _TRANSPORT="journal", _HOSTNAME="h2"),
        b.entry("x" * (MAXB - 1) + "\u20ac and more after the cut", PRIORITY=6,
                _SYSTEMD_UNIT="app.service", _TRANSPORT="stdout", _HOSTNAME="h2"),
        b.entry("not systemd: UNIT= from another process", PRIORITY=6, UNIT="ssh.service",
                _PID=4242, _SYSTEMD_UNIT="other.service", _TRANSPORT="journal",
                _HOSTNAME="h1"),
        systemd_about(b, "cron.service", "Stopping cron.service - Regular background program "
                      "processing daemon..."),
    ]


def boot_b(b):
    return [
        b.entry("Accepted publickey for root from 10.0.0.7 port 50122 ssh2: ED25519",
                PRIORITY=6, **SSHD),
        b.entry("pipewire: no bluetooth", PRIORITY=7, _SYSTEMD_UNIT="user@1000.service",
                _SYSTEMD_USER_UNIT="pipewire.service", _UID=1000, _GID=1000,
                _COMM="pipewire", _TRANSPORT="journal", _HOSTNAME="h1"),
        b.entry("custom fields", PRIORITY="06", _PID="007", ERRNO=2, CONTAINER_NAME="web",
                CONTAINER_ID="4f1c2e",
                FOO_BAR="first", _FOO_BAR="second", extra=[("DUP", "one"), ("DUP", "two")],
                _TRANSPORT="journal", _HOSTNAME="h3"),
        b.entry("odd values", PRIORITY=9, SYSLOG_FACILITY=23, _PID="abc",
                _UID="12345678901234567890", _GID="0x10", _COMM=b"c\xffm",
                _TRANSPORT="journal", _HOSTNAME="h3"),
        b.entry("no priority at all", **SSHD),
        b.entry("", PRIORITY=6, _SYSTEMD_UNIT="app.service", _TRANSPORT="stdout"),
        b.entry("quote \" backslash \\ tab \t bell \x07 del \x7f é 漢字 😀", PRIORITY=2,
                _SYSTEMD_UNIT="app.service", SYSLOG_IDENTIFIER="app\"x", _TRANSPORT="stdout",
                _HOSTNAME="h2"),
        systemd_about(b, "ssh.service", "Stopping ssh.service - OpenBSD Secure Shell server..."),
        b.entry("Disconnected from user root 10.0.0.7 port 50122", PRIORITY=6, **SSHD),
        b.entry("the kernel again: oom", PRIORITY=0, SYSLOG_FACILITY=0, _TRANSPORT="kernel",
                SYSLOG_IDENTIFIER="kernel", _HOSTNAME="h3"),
    ]


def boot_c(c):
    out = []
    for i in range(6):
        out.append(c.entry(f"user session line {i}", PRIORITY=[6, 4, 3, 7, 6, 1][i],
                           _SYSTEMD_UNIT="user@1000.service",
                           _SYSTEMD_USER_UNIT=f"app{i % 2}.service", _UID=1000, _GID=1000,
                           _TRANSPORT="journal" if i % 3 else "syslog", _HOSTNAME="h1",
                           SYSLOG_IDENTIFIER=f"app{i % 2}", step_us=1_500_000))
    return out


def build(jdir):
    """Writes the journal; returns (entries in journal order, per-file entries)."""
    sysj = jt.Journal(jdir, "system")
    a = sysj.append(boot_a())
    archived = sysj.rotate()
    b_boot = jt.Boot(BOOT_B, 1_700_000_500_000_000)
    c_boot = jt.Boot(BOOT_C, 1_700_000_501_000_000)
    b = sysj.append(boot_b(b_boot))
    user = jt.Journal(jdir, "user-1000")
    c = user.append(boot_c(c_boot))
    written = a + sorted(b + c, key=lambda e: e.realtime)
    return written, {"archived": (archived, a), "system": (sysj.path, b),
                     "user": (user.path, c)}, sysj, b_boot


def once(c, wd, name, inputs, expect, what, offsets=True, summary=True):
    """A --once run of its own (data dir, output, config): checks exit 0, the summary's count
    (unless summary is false) and every event; returns the events, the config, the data
    directory and the log."""
    data = os.path.join(wd.root, f"data-{name}")
    out = os.path.join(wd.root, f"out-{name}")
    cfg = jt.write_config(os.path.join(wd.root, f"{name}.yml"),
                          jt.config_text(data, inputs, jt.file_output(out)))
    rc, err = jt.run_once(cfg)
    c.check(rc == 0, f"{what}: --once exits 0", f"rc={rc}: {err[-800:]}")
    if summary:
        n_journals = len(inputs)  # every input here is a journald one
        want = (f"0 files (0 unreadable) and {n_journals} journal"
                f"{'' if n_journals == 1 else 's'}, {len(expect)} events read")
        c.check(want in err, f"{what}: the summary says {want}",
                err.strip().splitlines()[-1] if err.strip() else "(no log)")
    events = tt.read_events(out)
    jt.check_events(c, events, expect, what, offsets=offsets)
    return events, cfg, data, err


def check_cursor(c, data, input_id, count, last, what):
    recs = jt.journal_registry(data, input_id)
    ok = c.check(len(recs) == 1, f"{what}: one registry entry, device 0 inode 0",
                 f"{tt.read_registry(data)}")
    if not ok:
        return
    r = recs[0]
    c.check(r["offset"] == count, f"{what}: registry offset {count}", f"{r}")
    parts = dict(p.split("=", 1) for p in r["path"].split(";") if "=" in p)
    try:
        got = (parts.get("b"), int(parts.get("m", "x"), 16), int(parts.get("t", "x"), 16))
    except ValueError:
        got = None
    c.check(got == (last.boot_id, last.monotonic, last.realtime),
            f"{what}: the registry's cursor names the last entry (b=;m=;t=)",
            f"path {r['path']!r}, want b={last.boot_id};m={last.monotonic:x};t={last.realtime:x}")
    c.check(r["stream"] not in (None, "0" * 16), f"{what}: the entry has a stream id",
            f"{r['stream']}")


STAGE_LINES = [
    "2026-01-02 10:00:00 first record",
    "Traceback (most recent call last):",
    '  File "app.py", line 3, in <module>',
    "ValueError: bad",
    '2026-01-02 10:00:01 {"level":"info","msg":"json in a record"}',
    '{"level":"warn","msg":"a JSON line","n":3}',
    "2026-01-02 10:00:02 DBG left out",
    "2026-01-02 10:00:03 last record",
    "  with a continuation",
]
PARSERS = ("[{multiline: {type: pattern, pattern: '^\\d{4}-|^{', negate: true, match: after}}, "
           "{exclude_lines: ['DBG']}, {ndjson: {target: \"\", add_error_key: true}}]")


def strip_source(ev):
    return {k: v for k, v in ev.items() if k not in ("@timestamp", "log", "journald", "input")}


def stages(c, wd):
    jdir = os.path.join(wd.root, "journal-stages")
    boot = jt.Boot("d1" * 16, 1_700_000_900_000_000)
    jt.Journal(jdir).append([boot.entry(line, PRIORITY=6) for line in STAGE_LINES])
    logf = os.path.join(wd.root, "stages.log")
    with open(logf, "w") as f:
        f.write("".join(line + "\n" for line in STAGE_LINES))
    data, out = os.path.join(wd.root, "data-stages"), os.path.join(wd.root, "out-stages")
    text = jt.config_text(data, [{"id": "jst", "directory": jdir, "parsers": PARSERS}],
                          jt.file_output(out))
    text = text.replace("outputs:\n", f"  - id: fst\n    paths: [{tt.yaml_str(logf)}]\n"
                        f"    parsers: {PARSERS}\noutputs:\n", 1)
    cfg = jt.write_config(os.path.join(wd.root, "stages.yml"), text)
    rc, err = jt.run_once(cfg)
    c.check(rc == 0, "stages: --once exits 0", err[-500:])
    events = tt.read_events(out)
    from_journal = [strip_source(e) for e in jt.of_input(events, "jst")]
    from_file = [strip_source(e) for e in jt.of_input(events, "fst")]
    c.check(len(from_file) == 4, "stages: the file gives 4 events (5 records, 1 left out)",
            f"{len(from_file)}: {from_file}")
    c.check(from_journal == from_file, "stages: the journal entries give the file's events",
            f"{from_journal} != {from_file}")


def main():
    c, wd, _ = jt.begin("jread")
    jdir = os.path.join(wd.root, "journal")
    written, files, sysj, b_boot = build(jdir)
    read = jt.readback(directory=jdir)
    diff = jt.same_entries(written, read)
    if not c.check(diff is None, f"the {len(written)} entries read back as written", diff):
        return c.finish()
    exp = jt.expected_events(read, max_line_bytes=MAXB)
    base = {"id": "journal", "directory": jdir, "max_line_bytes": MAXB}

    # every entry, by directory
    events, dir_cfg, dir_data, _ = once(c, wd, "dir", [base], exp, "directory")
    c.check(any(e["log"].get("flags") == ["truncated"] for e in events),
            "directory: the 3-byte character across max_line_bytes is cut before it")
    check_cursor(c, dir_data, "journal", len(exp), read[-1], "directory")

    # files: a glob of the system journal's files only
    sys_entries = [e for e in read if e.boot_id in (BOOT_A, BOOT_B)]
    once(c, wd, "files", [{"id": "jfiles", "files": [os.path.join(jdir, "system*.journal")],
                           "max_line_bytes": MAXB}],
         jt.expected_events(sys_entries, input_id="jfiles", max_line_bytes=MAXB), "files glob")

    # --preview: the input's own journal, the directory, one file
    for args, want, what in ((None, events, "--preview journal"),
                             (jdir, events, "--preview journal DIR")):
        rc, got, err = jt.preview(dir_cfg, "journal", args)
        c.check(rc == 0, f"{what} exits 0", f"rc={rc}: {err[-500:]}")
        c.check(got == want, f"{what} prints the --once events ({len(want)})",
                f"{len(got)} events; first difference: " +
                next((f"{g} != {w}" for g, w in zip(got, want) if g != w), "(count)"))
        c.check(not jt.log_lines(err, "warn") and not jt.log_lines(err, "error"),
                f"{what} logs no warning or error", err[-300:])
    arch_path, arch_entries = files["archived"]
    rc, got, err = jt.preview(dir_cfg, "journal", arch_path)
    c.check(rc == 0, "--preview journal FILE exits 0", f"rc={rc}: {err[-500:]}")
    jt.check_events(c, got, jt.expected_events(arch_entries, max_line_bytes=MAXB),
                    "--preview journal FILE (the archived file)")
    c.check(not os.path.exists(os.path.join(wd.root, "data-preview")) and
            len(jt.journal_registry(dir_data, "journal")) == 1,
            "--preview writes no registry entry of its own")

    # filters
    def unit_of(e, units):
        return (e.first("_SYSTEMD_UNIT") in units or
                (e.first("UNIT") in units and e.first("_PID") == b"1"))

    def prio_at_most(e, n):  # journalctl -p: matches PRIORITY=0 ... PRIORITY=n, as written
        return e.first("PRIORITY") in [b"%d" % i for i in range(n + 1)]

    ssh = [b"ssh.service"]
    cases = [
        ("units", {"units": ["ssh.service"]}, lambda e: unit_of(e, ssh)),
        ("units2", {"units": ["ssh.service", "cron.service"]},
         lambda e: unit_of(e, ssh + [b"cron.service"])),
        ("matches", {"matches": ["_TRANSPORT=kernel", "_TRANSPORT=syslog", "_HOSTNAME=h1"]},
         lambda e: e.first("_TRANSPORT") in (b"kernel", b"syslog") and
         e.first("_HOSTNAME") == b"h1"),
        ("prio", {"priority": "warning"}, lambda e: prio_at_most(e, 4)),
        ("prio3", {"priority": "3"}, lambda e: prio_at_most(e, 3)),
        ("unitprio", {"units": ["ssh.service", "app.service"], "priority": "err"},
         lambda e: unit_of(e, ssh + [b"app.service"]) and prio_at_most(e, 3)),
    ]
    for name, keys, pred in cases:
        sel = [e for e in read if pred(e)]
        if not c.check(0 < len(sel) < len(read), f"filter {name}: the journal has entries "
                       f"in and out ({len(sel)} of {len(read)})"):
            continue
        inp = dict(base, id=f"f{name}", **keys)
        once(c, wd, name, [inp], jt.expected_events(sel, input_id=f"f{name}",
                                                       max_line_bytes=MAXB),
             f"filter {name} {keys}")

    # fields
    for name, keys in (("star", {"include_fields": ["*"]}),
                       ("named", {"include_fields": ["CONTAINER_NAME", "_SYSTEMD_CGROUP", "DUP"]}),
                       ("exclude", {"include_fields": ["*"],
                                    "exclude_fields": ["_CMDLINE", "PRIORITY", "CONTAINER_NAME",
                                                       "_BOOT_ID", "INVOCATION_ID"]})):
        inp = dict(base, id=f"x{name}", **keys)
        conv = {"include": keys.get("include_fields", ()),
                "exclude": keys.get("exclude_fields", ())}
        want = jt.expected_events(read, input_id=f"x{name}", max_line_bytes=MAXB, **conv)
        c.check(any("custom" in (e["journald"] or {}) for e in want),
                f"fields {name}: some entries have custom members")
        once(c, wd, name, [inp], want, f"fields {keys}")

    # what the input and its stages drop: too long (line_overflow skip), empty
    # (skip_empty_lines; an entry without MESSAGE is empty), exclude_lines; each dropped
    # entry keeps its number, so log.offset is the entry's place in the journal
    drop = dict(base, id="drop", line_overflow="skip", skip_empty_lines="true",
                parsers="[{exclude_lines: ['^not systemd']}]")
    kept = [(i, x) for i, x in enumerate(jt.expected_event(e, input_id="drop", max_line_bytes=MAXB,
                                                           line_overflow="skip",
                                                           skip_empty_lines=True)
                                         for e in read)
            if x is not None and not x["message"].startswith("not systemd")]
    c.check(len(read) - len(kept) == 6, "drop: 6 entries to drop (3 too long, 2 empty, 1 "
            "excluded)", f"{len(read) - len(kept)}")
    got, _, _, err = once(c, wd, "drop", [drop], [x for _, x in kept],
                     "dropped: too long, empty, exclude_lines", offsets=False, summary=False)
    c.check("0 truncated, 3 dropped as too long" in err, "dropped: the summary counts the "
            "3 entries too long as dropped, not as truncated (as for files)",
            err.strip().splitlines()[-1] if err.strip() else "(no log)")
    offs = [e["log"]["offset"] for e in got]
    c.check(offs == [i for i, _ in kept], "dropped: log.offset is each entry's place",
            f"{offs} != {[i for i, _ in kept]}")

    # the stages: the same lines as journal entries and as a file, through the same
    # parsers, give the same events (but for @timestamp, log, journald and input)
    stages(c, wd)

    # start_at end, then more entries; the directory input resumes after its last entry
    end_inp = dict(base, id="jend", start_at="end")
    once(c, wd, "end", [end_inp], [], "start_at end, first run")
    more = sysj.append([b_boot.entry(f"written after the first runs {i}", PRIORITY=6,
                                     _SYSTEMD_UNIT="late.service", step_us=15_000_000)
                        for i in range(7)])
    read2 = jt.readback(directory=jdir)
    c.check(jt.same_entries(written + more, read2) is None, "the later entries read back",
            jt.same_entries(written + more, read2))
    new = read2[len(read):]
    _, _, end_data, _ = once(c, wd, "end", [end_inp],
                                   jt.expected_events(new, input_id="jend", max_line_bytes=MAXB),
                                   "start_at end, second run: only the new entries")
    check_cursor(c, end_data, "jend", len(new), read2[-1], "start_at end")
    out_dir = os.path.join(wd.root, "out-dir")
    before = len(tt.read_events(out_dir))
    rc, err = jt.run_once(dir_cfg)
    c.check(rc == 0, "directory, second --once exits 0", err[-500:])
    again = tt.read_events(out_dir)[before:]
    jt.check_events(c, again, jt.expected_events(new, max_line_bytes=MAXB),
                    "directory, second --once: only the new entries", offsets=False)
    offs = [e["log"]["offset"] for e in again]
    c.check(offs == list(range(len(read), len(read2))),
            "directory, second --once: log.offset goes on from the first run", f"{offs}")
    check_cursor(c, dir_data, "journal", len(read2), read2[-1], "directory, second run")

    return jt.end(c, wd)


if __name__ == "__main__":
    sys.exit(main())
