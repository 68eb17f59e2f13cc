"""Shared helpers of the journald input's integration tests (t/integration/journald_*.py):
real journal files written by systemd's own tool, and the events the agent must make of
them (docs/journald.md). Python standard library only; the agent runs through tailtest.py.

Writing journals. systemd-journal-remote (Debian package systemd-journal-remote, installed
by `./bootstrap.sh check`) reads the journal export format (entries separated by an empty
line; `FIELD=value\\n` for text, `FIELD\\n<uint64 LE length><bytes>\\n` for any bytes) from a
file and writes a journal file: `systemd-journal-remote -o DIR/NAME.journal FILE.export`.
What systemd 252 (Debian 12) does, found by trying it:
- `__REALTIME_TIMESTAMP`, `__MONOTONIC_TIMESTAMP` and `_BOOT_ID` given in the export set the
  entry's place, so the tests choose every entry's time and boot; `_BOOT_ID` also stays a
  field of the entry. Nothing else is added (no _MACHINE_ID, no _HOSTNAME).
- The output must be a file name ending in `.journal`, in a directory that exists; with an
  export file as the source only `--split-mode=none` is allowed ("For active sources, only
  --split-mode=none is allowed"), so there is one output file per run: --split-mode=host
  cannot make several files.
- A second run with the same `-o` file appends to it in place (same inode; the entries
  after the first batch's, the header's tail moves on): that is how a journal grows while
  the agent follows it.
- Rotation is what journald does: the active NAME.journal is renamed to
  `NAME@<seqnum id>-<head seqnum>-<head realtime>.journal` (hex, as journald names its
  archived files) and the next run creates a new NAME.journal. sd-journal reads the files
  of a directory as one journal, ordered by time, so a rotated set reads as one stream.
  Journal.rotate() does exactly that.
- Each file is at least 8 MiB on disk (its preallocated arena); 100,000 short entries take
  32 MiB and under a second to write.
- sd-journal merges the files of a directory by time and, following them, moves on from
  the last entry it gave: an entry appended later that sorts before it (another file's,
  with an older timestamp) is never given, by journalctl -f either. Journald never writes
  such entries; the tests that append while the agent follows write every batch later in
  time than all before it (Boot.skip_to()).
- Corrupt bytes in the middle of a file's entries are skipped without a word by journalctl
  and sd_journal_next() (systemd 252 logs them at debug level only): the entries that
  survive are read, the others vanish.
- `journalctl --file ... -o export` reads them back (binary values in the binary form), in
  the order sd-journal gives them. Within an entry, the items come in the order of their
  data objects in the file, which is not always the export's order: "the first of two
  values" is decided on what was read back (readback()). The export's _BOOT_ID is the
  entry header's, not its item's (they differ only where corruption hit the item).

The expected event of an entry (expected_event()) follows docs/journald.md: message = MESSAGE
as lossy UTF-8 (each byte that is not part of a valid character is one U+FFFD, as for file
lines), cut at max_line_bytes at a character boundary (log.flags ["truncated"]); @timestamp
= __REALTIME_TIMESTAMP in milliseconds; "journald" = the mapped fields in the table's order,
then "custom". check_events() compares the agent's events with them member by member."""
import datetime
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import time

import tailtest as tt

JOURNAL_REMOTE = "/lib/systemd/systemd-journal-remote"
JOURNALCTL = "journalctl"

# (journal field, event member, number?) in the contract's order; PRIORITY and
# SYSLOG_FACILITY also get a name member.
MAPPED = [
    ("PRIORITY", "priority", True),
    ("SYSLOG_FACILITY", "facility", True),
    ("_SYSTEMD_UNIT", "unit", False),
    ("_SYSTEMD_USER_UNIT", "user_unit", False),
    ("_PID", "pid", True),
    ("_UID", "uid", True),
    ("_GID", "gid", True),
    ("_COMM", "comm", False),
    ("_EXE", "exe", False),
    ("_CMDLINE", "cmdline", False),
    ("_HOSTNAME", "hostname", False),
    ("_BOOT_ID", "boot_id", False),
    ("_MACHINE_ID", "machine_id", False),
    ("_TRANSPORT", "transport", False),
    ("SYSLOG_IDENTIFIER", "syslog_identifier", False),
]
MAPPED_NAMES = {f for f, _, _ in MAPPED}
PRIORITY_NAMES = ["emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"]
FACILITY_NAMES = ["kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp",
                  "cron", "authpriv", "ftp", "ntp", "security", "console", "solaris-cron",
                  "local0", "local1", "local2", "local3", "local4", "local5", "local6",
                  "local7"]
PRIORITY_LEVELS = {n: i for i, n in enumerate(PRIORITY_NAMES)}
PRIORITY_LEVELS.update({"error": 3, "warn": 4})


def missing_tools():
    """What the tests need and this machine lacks (a message), or None."""
    if not os.access(JOURNAL_REMOTE, os.X_OK):
        return (f"{JOURNAL_REMOTE} is missing: ./bootstrap.sh deps --all installs Debian "
                "package systemd-journal-remote")
    return None


def begin(name):
    """A test's start: exits 1 (FAIL) when a tool is missing; else (Checks, Workdir, rng),
    rng seeded from LF_SEED or the clock (printed, so a run can be repeated)."""
    problem = missing_tools()
    if problem:
        print(f"FAIL: {problem}")
        sys.exit(1)
    seed = int(os.environ.get("LF_SEED", str(int(time.time()))))
    print(f"seed {seed}")
    return tt.Checks(), tt.Workdir(name), random.Random(seed)


def end(c, wd):
    """A test's end: the work directory removed when every check passed, else kept (and
    named); the summary line and the exit status."""
    if c.failed == 0:
        wd.cleanup()
    else:
        print(f"kept {wd.root}")
    return c.finish()


# ---- entries and the export format ----

def _bytes(v):
    if isinstance(v, bytes):
        return v
    return str(v).encode()


class Entry:
    """One journal entry: its place (realtime and monotonic µs, boot id) and its items, a
    list of (FIELD, value bytes, binary) in the order written. binary: written in the
    export's binary form (forced for a value holding a newline)."""

    def __init__(self, realtime, monotonic, boot_id, items):
        self.realtime = realtime
        self.monotonic = monotonic
        self.boot_id = boot_id
        self.items = [(f, _bytes(v), b) for f, v, b in items]

    def key(self):
        return (self.boot_id, self.monotonic, self.realtime)

    def first(self, field):
        """The first value of field (bytes), or None. _BOOT_ID is the entry's boot id."""
        if field == "_BOOT_ID":
            return self.boot_id.encode() if self.boot_id else None
        for f, v, _ in self.items:
            if f == field:
                return v
        return None

    def values(self, field):
        return [v for f, v, _ in self.items if f == field]

    def all_items(self):
        """Every item as the journal stores it, _BOOT_ID included (a multiset, sorted)."""
        items = [("_BOOT_ID", self.boot_id.encode())] if self.boot_id else []
        items += [(f, v) for f, v, _ in self.items]
        return sorted(items)

    def export(self):
        out = [b"__REALTIME_TIMESTAMP=%d\n" % self.realtime,
               b"__MONOTONIC_TIMESTAMP=%d\n" % self.monotonic,
               b"_BOOT_ID=" + self.boot_id.encode() + b"\n"]
        for f, v, binary in self.items:
            if binary or b"\n" in v:
                out.append(f.encode() + b"\n" + struct.pack("<Q", len(v)) + v + b"\n")
            else:
                out.append(f.encode() + b"=" + v + b"\n")
        return b"".join(out) + b"\n"

    def __repr__(self):
        return f"Entry(t={self.realtime}, b={self.boot_id[:8]}, {self.first('MESSAGE')!r})"


class Boot:
    """Entries of one boot: each entry() is step_us after the last, on both clocks."""

    def __init__(self, boot_id, realtime_us, monotonic_us=5_000_000):
        self.boot_id = boot_id
        self.realtime = realtime_us
        self.monotonic = monotonic_us

    def skip_to(self, realtime_us):
        """Moves both clocks on so that the next entry comes after realtime_us."""
        if realtime_us > self.realtime:
            self.monotonic += realtime_us - self.realtime
            self.realtime = realtime_us

    def entry(self, message=None, binary=(), extra=(), step_us=1000, **fields):
        """An entry with MESSAGE=message (unless None), the fields given as keywords (in
        that order; str, bytes or int values) and extra (a list of (FIELD, value) pairs,
        for repeated fields). binary: the field names written in the binary form."""
        self.realtime += step_us
        self.monotonic += step_us
        items = []
        if message is not None:
            items.append(("MESSAGE", message, "MESSAGE" in binary))
        for f, v in list(fields.items()) + list(extra):
            items.append((f, v, f in binary))
        return Entry(self.realtime, self.monotonic, self.boot_id, items)


def numbered(boot, prefix, start, count, step_us=1000, **fields):
    """count entries of boot with MESSAGE "PREFIX NNNNNNN" (start, start + 1, ...) and the
    fields given, step_us apart."""
    return [boot.entry(f"{prefix} {i:07d}", step_us=step_us, **fields)
            for i in range(start, start + count)]


def export_bytes(entries):
    return b"".join(e.export() for e in entries)


def write_journal(path, entries):
    """Writes entries (in order) into the journal file path through systemd-journal-remote:
    a new file, or appended to an existing one. Raises RuntimeError with its output when it
    fails or writes another count."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tempfile.NamedTemporaryFile(prefix="lf-journal-", suffix=".export") as f:
        f.write(export_bytes(entries))
        f.flush()
        r = subprocess.run([JOURNAL_REMOTE, "-o", path, f.name], capture_output=True)
    err = r.stderr.decode("utf-8", "replace")
    if r.returncode != 0 or f"after writing {len(entries)} entries" not in err:
        raise RuntimeError(f"{JOURNAL_REMOTE} -o {path}: exit {r.returncode}: {err}")


def header(path):
    """journalctl --header of one file as {key: value text}."""
    r = subprocess.run([JOURNALCTL, "--header", "--file", path], capture_output=True,
                       text=True)
    out = {}
    for line in r.stdout.splitlines():
        k, sep, v = line.partition(": ")
        if sep:
            out[k.strip()] = v.strip()
    return out


class Journal:
    """A journal directory that grows like journald's: NAME.journal is appended to by
    append(), rotate() archives it under journald's name for archived files. entries: every
    entry written, in order."""

    def __init__(self, directory, name="system"):
        self.dir = directory
        self.name = name
        self.entries = []
        self.archived = []

    @property
    def path(self):
        return os.path.join(self.dir, f"{self.name}.journal")

    def append(self, entries):
        write_journal(self.path, entries)
        self.entries += entries
        return entries

    def rotate(self):
        """Renames NAME.journal to NAME@SEQNUMID-HEADSEQNUM-HEADREALTIME.journal; the next
        append() starts a new file. Returns the archived path."""
        h = header(self.path)
        seqid = h["Sequential number ID"].replace("-", "")
        head_seq = int(h["Head sequential number"].split()[0])
        head_rt = int(h["Head realtime timestamp"].rsplit("(", 1)[1].rstrip(")"), 16)
        dest = os.path.join(self.dir, f"{self.name}@{seqid}-{head_seq:016x}-{head_rt:016x}.journal")
        os.rename(self.path, dest)
        self.archived.append(dest)
        return dest


def readback(paths=None, directory=None):
    """The entries sd-journal reads from journal files (or a directory), in its order, each
    an Entry with the items in the order sd_journal_enumerate_data() gives them (via
    journalctl -o export). _BOOT_ID and the address fields are left out of the items."""
    argv = [JOURNALCTL, "-o", "export", "--no-pager"]
    if directory is not None:
        argv += ["--directory", directory]
    for p in paths or []:
        argv += ["--file", p]
    data = subprocess.run(argv, capture_output=True, check=True).stdout
    entries = []
    i, n = 0, len(data)
    cur = {}
    items = []
    while i < n:
        if data[i:i + 1] == b"\n":  # the empty line after an entry
            entries.append(Entry(int(cur["__REALTIME_TIMESTAMP"]),
                                 int(cur["__MONOTONIC_TIMESTAMP"]), cur.get("_BOOT_ID"),
                                 items))
            cur, items = {}, []
            i += 1
            continue
        nl = data.index(b"\n", i)
        line = data[i:nl]
        if b"=" in line:
            f, _, v = line.partition(b"=")
            i = nl + 1
        else:  # binary: FIELD\n<u64 le length><bytes>\n
            f = line
            (ln,) = struct.unpack("<Q", data[nl + 1:nl + 9])
            v = data[nl + 9:nl + 9 + ln]
            i = nl + 9 + ln + 1
        f = f.decode()
        if f.startswith("__") or f == "_BOOT_ID":
            cur[f] = v.decode()
        else:
            items.append((f, v, False))
    return entries


def same_entries(written, read):
    """None when read (readback()) holds exactly the written entries in the same order
    with the same items; else what differs first."""
    if len(written) != len(read):
        return f"{len(written)} entries written, {len(read)} read back"
    for i, (w, r) in enumerate(zip(written, read)):
        if w.key() != r.key() or w.all_items() != r.all_items():
            return f"entry {i}: written {w.all_items()!r}, read back {r.all_items()!r}"
    return None


# ---- the events the agent must make ----

def lossy(data):
    """data as UTF-8 with each byte outside a valid character as U+FFFD (the agent's rule:
    one U+FFFD per invalid byte, not per maximal subpart as Python's "replace")."""
    out = []
    i, n = 0, len(data)
    while i < n:
        b = data[i]
        ln = (1 if b < 0x80 else 2 if 0xC2 <= b <= 0xDF else 3 if 0xE0 <= b <= 0xEF
              else 4 if 0xF0 <= b <= 0xF4 else 0)
        if ln:
            try:
                out.append(data[i:i + ln].decode("utf-8"))
                i += ln
                continue
            except UnicodeDecodeError:
                pass
        out.append("\ufffd")
        i += 1
    return "".join(out)


def cut(text, max_bytes):
    """text cut to at most max_bytes of UTF-8 at a character boundary; (text, cut?)."""
    raw = text.encode()
    if len(raw) <= max_bytes:
        return text, False
    return raw[:max_bytes].decode("utf-8", "ignore"), True


def timestamp(realtime_us):
    """@timestamp of an entry: its realtime in milliseconds, UTC, as the agent renders it."""
    ms = realtime_us // 1000
    t = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _number_or_string(v):
    if 1 <= len(v) <= 19 and v.isdigit() and v.isascii():
        return int(v)
    return lossy(v)


def custom_name(field):
    return field.lstrip("_").lower()


def journald_member(entry, include=(), exclude=()):
    """The expected "journald" object (a dict in the contract's member order), or None when
    it would be empty."""
    exclude = set(exclude)
    out = {}
    for field, member, number in MAPPED:
        v = entry.first(field)
        if v is None or field in exclude:
            continue
        out[member] = _number_or_string(v) if number else lossy(v)
        if field == "PRIORITY" and isinstance(out[member], int) and out[member] <= 7:
            out["priority_name"] = PRIORITY_NAMES[out[member]]
        if field == "SYSLOG_FACILITY" and isinstance(out[member], int) and out[member] <= 23:
            out["facility_name"] = FACILITY_NAMES[out[member]]
    custom = {}
    star = "*" in include
    for field, v, _ in entry.items:
        if field == "MESSAGE" or field.startswith("__") or field in MAPPED_NAMES:
            continue
        if field in exclude or not (star or field in include):
            continue
        custom.setdefault(custom_name(field), lossy(v))
    if custom:
        out["custom"] = custom
    return out or None


def expected_event(entry, input_id="journal", include=(), exclude=(), max_line_bytes=1 << 20,
                   line_overflow="truncate", skip_empty_lines=False):
    """What entry must become: a dict with @timestamp, message, truncated, journald (None:
    no member) and input; None when the entry is dropped (too long with line_overflow skip,
    empty with skip_empty_lines)."""
    raw = entry.first("MESSAGE")
    text = lossy(raw) if raw is not None else ""
    if skip_empty_lines and text == "":
        return None
    text, truncated = cut(text, max_line_bytes)
    if truncated and line_overflow == "skip":
        return None
    return {"@timestamp": timestamp(entry.realtime), "message": text, "truncated": truncated,
            "journald": journald_member(entry, include, exclude), "input": input_id}


def expected_events(entries, **conv):
    return [e for e in (expected_event(x, **conv) for x in entries) if e is not None]


def event_diff(ev, exp):
    """None when the agent's event ev matches exp (expected_event()); else the differences.
    The "journald" members are compared value by value and in order (custom: as a set of
    members)."""
    problems = []
    if ev.get("@timestamp") != exp["@timestamp"]:
        problems.append(f"@timestamp {ev.get('@timestamp')!r} != {exp['@timestamp']!r}")
    if ev.get("message") != exp["message"]:
        problems.append(f"message {ev.get('message')!r} != {exp['message']!r}")
    flags = (ev.get("log") or {}).get("flags")
    want_flags = ["truncated"] if exp["truncated"] else None
    if flags != want_flags:
        problems.append(f"log.flags {flags!r} != {want_flags!r}")
    if (ev.get("input") or {}).get("id") != exp["input"]:
        problems.append(f"input {ev.get('input')!r} != {exp['input']!r}")
    got, want = ev.get("journald"), exp["journald"]
    if got != want:
        problems.append(f"journald {json.dumps(got, ensure_ascii=False)} != "
                        f"{json.dumps(want, ensure_ascii=False)}")
    elif want is not None and list(got) != list(want):
        problems.append(f"journald member order {list(got)} != {list(want)}")
    return "; ".join(problems) or None


def check_events(c, events, expected, what, offsets=True):
    """Checks (on tailtest.Checks c) that events are exactly expected, in order: the count,
    each event member by member (the first few differences are printed), and with offsets
    log.offset 0, 1, 2, ... Returns whether all held."""
    ok = c.check(len(events) == len(expected), f"{what}: {len(expected)} events",
                 f"got {len(events)}")
    bad = []
    for i, (ev, exp) in enumerate(zip(events, expected)):
        d = event_diff(ev, exp)
        if d:
            bad.append(f"event {i}: {d}")
    ok &= c.check(not bad, f"{what}: every event equals its entry", "\n  ".join(bad[:5]))
    if offsets:
        offs = [(ev.get("log") or {}).get("offset") for ev in events]
        ok &= c.check(offs == list(range(len(events))), f"{what}: log.offset 0, 1, 2, ...",
                      f"{offs[:10]}...")
    return ok


def of_input(events, input_id):
    return [e for e in events if (e.get("input") or {}).get("id") == input_id]


# ---- configs and runs ----

def _yaml(v):
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(json.dumps(x) for x in v) + "]"
    return str(v)


def input_lines(inp):
    """The YAML lines of one journald input: a dict with id and journald keys (directory
    and files quoted; lists as flow sequences of strings; other values as written)."""
    lines = [f"  - id: {inp['id']}", "    type: journald"]
    for k, v in inp.items():
        if k == "id":
            continue
        lines.append(f"    {k}: {tt.yaml_str(v) if k == 'directory' else _yaml(v)}")
    return lines


def config_text(data_dir, inputs, outputs=None, metrics=False, batch="flush_interval: 100ms",
                registry_flush="200ms", shutdown_timeout="10s", extra=""):
    """A config of journald inputs (dicts for input_lines()) into outputs (YAML lines of
    the outputs: list; default none: give them), metrics on 127.0.0.1:0 when asked."""
    lines = [f"data_dir: {tt.yaml_str(data_dir)}", f"shutdown_timeout: {shutdown_timeout}",
             "inputs:"]
    for inp in inputs:
        lines += input_lines(inp)
    lines += ["outputs:"] + list(outputs or [])
    lines += [f"queue: {{batch: {{{batch}}}}}", f"registry: {{flush_interval: {registry_flush}}}",
              'metrics: {listen: "127.0.0.1:0"}' if metrics else 'metrics: {listen: ""}']
    if extra:
        lines.append(extra)
    return "\n".join(lines) + "\n"


def file_output(out_dir, name="local"):
    return [f"  - name: {name}", "    type: file", f"    path: {tt.yaml_str(out_dir)}",
            "    compression: none"]


def write_config(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def run_once(config, timeout=120):
    """`logferry -c config --once`: (exit code, stderr text)."""
    r = subprocess.run([tt.LOGFERRY, "-c", config, "--once"], capture_output=True,
                       timeout=timeout)
    return r.returncode, r.stderr.decode("utf-8", "replace")


def preview(config, input_id, path=None, timeout=60):
    """`logferry -c config --preview ID [PATH]`: (exit code, events, stderr text)."""
    argv = [tt.LOGFERRY, "-c", config, "--preview", input_id] + ([path] if path else [])
    r = subprocess.run(argv, capture_output=True, timeout=timeout)
    events = []
    for raw in r.stdout.splitlines():
        try:
            events.append(json.loads(raw))
        except ValueError:
            events.append({"unparsable": raw[:200].decode("utf-8", "replace")})
    return r.returncode, events, r.stderr.decode("utf-8", "replace")


def journal_registry(data_dir, input_id):
    """The registry records of input_id with device and inode 0 (its journal position)."""
    return [r for r in tt.read_registry(data_dir) or []
            if r["input"] == input_id and r["dev"] == 0 and r["ino"] == 0]


def log_lines(text, level):
    """The agent's log lines of one level ("warn", "error", ...)."""
    return [ln for ln in text.splitlines() if f"Z {level} " in ln]
