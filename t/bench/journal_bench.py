#!/usr/bin/env python3
"""Journal reading benchmark: `logferry --once` with a journald input over generated journal
files, side by side with `journalctl` reading the same files in the same run.

    t/bench/journal_bench.py [--entries N] [--rounds N] [--alloc-entries N] [--dir DIR]
                             [--builddir BUILD]

Makes the journal once per run: N entries (default 1,000,000) of a host's usual fields
(MESSAGE of 60-200 bytes, PRIORITY, SYSLOG_FACILITY, SYSLOG_IDENTIFIER, _PID, _UID, _GID,
_COMM, _EXE, _CMDLINE, _SYSTEMD_UNIT, _SYSTEMD_CGROUP, _HOSTNAME, _BOOT_ID, _MACHINE_ID,
_TRANSPORT; kernel entries without the process fields; a dozen units and processes, two
boots) written in systemd's export format and turned into journal files by
systemd-journal-remote, in a temporary directory under /dev/shm when it has room (else
$TMPDIR; --dir chooses).

Then, --rounds times (default 5), alternating and rotating the order each round:
  logferry, file output: `logferry --once`, journald input (`files:` the journal files),
      file output, compression none (NDJSON on the same file system as the journal);
  logferry, console json: the same input, console output format json, stdout /dev/null;
  journalctl -o json: `journalctl -o json --file 'DIR/*.journal' > /dev/null`;
  journalctl -o export: the same with `-o export`.
Each under t/bench/runstat (fork, exec, wait4): wall, user and system CPU, peak RSS. The
table holds the medians: entries/s (over wall time), CPU seconds per million entries, CPU ns
per entry, peak RSS, and the ratio of each row's entries/s to `journalctl -o json`'s.
logferry's deliveries are checked: every line of the file output is parsed and its message
and offset compared with the entry written (a sha256 of the messages in order), and the
console run's summary line must say every entry was delivered; the script exits 1 if not.

Allocations per entry in steady state: t/bench/logferry_alloc (logferry linked with
t/bench/alloc_count.c, which counts every malloc, calloc and realloc of the process) reads
journals of --alloc-entries N (default: half of --entries) and of 2N entries (the timed
runs' journal by default) into the file output; (allocs(2N) - allocs(N)) / N is the cost of
one more entry, start-up, shutdown and the buffers' growth to their working size cancelled
out. Under AddressSanitizer nothing is counted ("n/a")."""
import argparse
import hashlib
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

JOURNAL_REMOTE = "/lib/systemd/systemd-journal-remote"
BOOTS = ["3f1c6a9e0b2d4c8e9a7f5b1d2e3c4a6b", "b07e5d1c9a8f4e2d8c6b4a2f0e1d3c5b"]
MACHINE_ID = "9d2b7c4e1f0a4b6c8d3e5f7a9b1c2d4e"
HOSTNAME = "web-1"
START_US = 1764547200000000  # 2025-12-01T00:00:00Z

# (weight, comm, exe, cmdline, unit, uid, gid, identifier, facility, transport, pids,
#  messages): the processes of a small web host. pids: how many distinct _PID values the
# process has over the run (a new sshd or CRON per session, a few nginx workers).
PROCS = [
    (14, "sshd", "/usr/sbin/sshd", "sshd: deploy [priv]", "ssh.service", 0, 0, "sshd", 10,
     "syslog", 5000,
     ["Accepted publickey for deploy from 198.51.100.{a} port {p} ssh2: ED25519 SHA256:{h}",
      "pam_unix(sshd:session): session opened for user deploy(uid=1000) by (uid=0)",
      "Received disconnect from 203.0.113.{a} port {p}:11: disconnected by user",
      "Connection closed by authenticating user root 192.0.2.{a} port {p} [preauth]"]),
    (10, "CRON", "/usr/sbin/cron", "/usr/sbin/CRON -f -P", "cron.service", 0, 0, "CRON", 9,
     "syslog", 8000,
     ["(root) CMD (command -v debian-sa1 > /dev/null && debian-sa1 1 1)",
      "pam_unix(cron:session): session opened for user root(uid=0) by (uid=0)",
      "(www-data) CMD (php /var/www/app/artisan schedule:run --no-interaction >> /dev/null "
      "2>&1) job {n}"]),
    (12, "systemd", "/usr/lib/systemd/systemd", "/sbin/init", "init.scope", 0, 0, "systemd",
     3, "journal", 1,
     ["Started session-{n}.scope - Session {n} of User deploy.",
      "Starting apt-daily.service - Daily apt download activities...",
      "logrotate.service: Deactivated successfully.",
      "Finished phpsessionclean.service - Clean php session files; consumed {n}ms CPU time."]),
    (22, "nginx", "/usr/sbin/nginx", "nginx: worker process", "nginx.service", 33, 33,
     "nginx", 3, "stdout", 4,
     ["198.51.100.{a} - - [01/Dec/2025:00:{m}:{s} +0000] \"GET /api/v1/items/{n}?page={p} "
      "HTTP/1.1\" 200 {b} \"-\" \"Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101\"",
      "203.0.113.{a} - - [01/Dec/2025:00:{m}:{s} +0000] \"POST /login HTTP/2.0\" 302 0 "
      "\"https://example.com/\" \"curl/7.88.1\"",
      "{n}#{n}: *{p} upstream timed out (110: Connection timed out) while reading response "
      "header from upstream, client: 192.0.2.{a}"]),
    (12, "postgres", "/usr/lib/postgresql/15/bin/postgres", "postgres: 15/main: checkpointer",
     "postgresql@15-main.service", 112, 118, "postgres", 3, "stdout", 6,
     ["checkpoint starting: time",
      "checkpoint complete: wrote {n} buffers ({a}.{s}%); 0 WAL file(s) added, 0 removed, "
      "{a} recycled; write={m}.{b} s, sync=0.00{s} s, total={m}.{p} s",
      "automatic vacuum of table \"app.public.sessions\": index scans: 1 pages: 0 removed, "
      "{n} remain, {p} scanned"]),
    (8, "dockerd", "/usr/bin/dockerd", "/usr/bin/dockerd -H fd:// "
     "--containerd=/run/containerd/containerd.sock", "docker.service", 0, 0, "dockerd", 3,
     "stdout", 2,
     ["time=\"2025-12-01T00:{m}:{s}.{b}Z\" level=info msg=\"ignoring event\" "
      "container={h} module=libcontainerd namespace=moby topic=/tasks/delete "
      "type=\"*events.TaskDelete\""]),
    (6, "NetworkManager", "/usr/sbin/NetworkManager", "/usr/sbin/NetworkManager --no-daemon",
     "NetworkManager.service", 0, 0, "NetworkManager", 3, "journal", 1,
     ["<info>  [{n}.{b}] dhcp4 (eth0): state changed new lease, address=10.0.{a}.{s}",
      "<info>  [{n}.{b}] device (veth{h}): carrier: link connected"]),
    (6, "systemd-logind", "/usr/lib/systemd/systemd-logind", "/lib/systemd/systemd-logind",
     "systemd-logind.service", 0, 0, "systemd-logind", 4, "journal", 1,
     ["New session {n} of user deploy.", "Session {n} logged out. Waiting for processes to "
      "exit.", "Removed session {n}."]),
    (10, None, None, None, None, None, None, "kernel", 0, "kernel", 0,
     ["[UFW BLOCK] IN=eth0 OUT= MAC=52:54:00:12:34:56:52:54:00:65:43:21:08:00 "
      "SRC=192.0.2.{a} DST=10.0.0.5 LEN=44 TOS=0x00 PREC=0x00 TTL={s} ID={n} PROTO=TCP "
      "SPT={p} DPT=23 WINDOW=1024 RES=0x00 SYN URGP=0",
      "docker0: port {a}(veth{h}) entered forwarding state"]),
]
FILLER = " request_id={h}{h} trace=" + "0123456789abcdef" * 8


class Generator:
    """Entries in export format, the same sequence for the same seed. message(i) is kept
    nowhere: feed() hashes the messages in order for the check."""

    def __init__(self, entries, seed=22):
        self.rng = random.Random(seed)
        self.entries = entries
        self.weights = []
        for k, p in enumerate(PROCS):
            self.weights += [k] * p[0]
        # Each process's entries, pre-rendered up to the fields that vary.
        self.fixed = []
        for p in PROCS:
            _, comm, exe, cmd, unit, uid, gid, ident, fac, transport, _, _ = p
            head = f"SYSLOG_FACILITY={fac}\nSYSLOG_IDENTIFIER={ident}\n"
            proc = ""
            if comm is not None:
                proc = (f"_UID={uid}\n_GID={gid}\n_COMM={comm}\n_EXE={exe}\n_CMDLINE={cmd}\n"
                        f"_SYSTEMD_UNIT={unit}\n_SYSTEMD_CGROUP=/system.slice/{unit}\n")
            tail = f"_HOSTNAME={HOSTNAME}\n_MACHINE_ID={MACHINE_ID}\n_TRANSPORT={transport}\n"
            self.fixed.append((head, proc, tail))

    def message(self, proc, i):
        r = self.rng
        tmpl = r.choice(proc[11])
        msg = tmpl.format(a=r.randrange(256), p=r.randrange(1024, 65536), n=i % 99991,
                          m=f"{r.randrange(60):02d}", s=f"{r.randrange(60):02d}",
                          b=r.randrange(100000), h=f"{r.getrandbits(48):012x}")
        want = r.randrange(60, 201)
        if len(msg) < want:
            msg += FILLER.format(h=f"{r.getrandbits(32):08x}")[:want - len(msg)]
        return msg[:200]

    def write(self, outs):
        """Writes the entries; outs: [(file, count)]: the first count entries go to file.
        Returns the sha256 of the first count messages for each, in order."""
        sums = [hashlib.sha256() for _ in outs]
        realtime = START_US
        boot_at = self.entries * 7 // 10  # a reboot 70% of the way
        monotonic = 4_000_000
        pid_base = 300
        chunk = [[] for _ in outs]
        for i in range(self.entries):
            if i == boot_at:
                monotonic = 4_000_000
            step = self.rng.randrange(50, 2000)
            realtime += step
            monotonic += step
            k = self.rng.choice(self.weights)
            proc = PROCS[k]
            head, pfields, tail = self.fixed[k]
            msg = self.message(proc, i)
            prio = 6 if self.rng.random() < 0.85 else self.rng.choice((3, 4, 5, 7))
            pid = ""
            if pfields:
                npids = proc[10]
                pid = f"_PID={1 if proc[1] == 'systemd' else pid_base + k * 10000 + (i * npids // self.entries)}\n"
            boot = BOOTS[i >= boot_at]
            e = (f"__REALTIME_TIMESTAMP={realtime}\n__MONOTONIC_TIMESTAMP={monotonic}\n"
                 f"_BOOT_ID={boot}\nMESSAGE={msg}\nPRIORITY={prio}\n{head}{pid}{pfields}{tail}\n")
            mb = msg.encode()
            for j, (f, count) in enumerate(outs):
                if i < count:
                    chunk[j].append(e)
                    sums[j].update(mb + b"\n")
                    if len(chunk[j]) == 10000:
                        f.write("".join(chunk[j]))
                        chunk[j] = []
        for j, (f, _) in enumerate(outs):
            f.write("".join(chunk[j]))
        return [s.hexdigest() for s in sums]


def make_journals(root, specs):
    """specs: [(name, entries)], every count at most the first's. Writes ROOT/NAME/*.journal
    for each; returns {name: sha256 of its messages}."""
    gen = Generator(max(n for _, n in specs))
    files = []
    try:
        for name, n in specs:
            files.append((open(os.path.join(root, f"{name}.export"), "w"), n))
        sums = gen.write(files)
    finally:
        for f, _ in files:
            f.close()
    out = {}
    for (name, n), digest in zip(specs, sums):
        os.makedirs(os.path.join(root, name))
        export = os.path.join(root, f"{name}.export")
        r = subprocess.run([JOURNAL_REMOTE, "-o", os.path.join(root, name, "bench.journal"),
                            export], capture_output=True, text=True)
        os.unlink(export)
        if r.returncode != 0 or f"after writing {n} entries" not in r.stderr:
            sys.exit(f"{JOURNAL_REMOTE}: exit {r.returncode}: {r.stderr[-500:]}")
        out[name] = digest
    return out


def config(root, name, journal_dir, output):
    path = os.path.join(root, f"{name}.yml")
    with open(path, "w") as f:
        f.write(f"""data_dir: {root}/data
metrics:
  listen: ""
inputs:
  - id: journal
    type: journald
    files: ["{journal_dir}/*.journal"]
outputs:
  - name: out
{output}""")
    return path


def file_output(root):
    return f"""    type: file
    path: {root}/out
    compression: none
    rotate_bytes: 8GiB
"""


CONSOLE_OUTPUT = """    type: console
    format: json
"""


def runstat(args, argv, stderr_path):
    """(wall, user, sys, peak RSS KiB) of argv under t/bench/runstat, stdout to /dev/null;
    exits if argv failed."""
    with tempfile.NamedTemporaryFile("r", prefix="lf-runstat-") as st, \
            open(stderr_path, "wb") as err:
        subprocess.run([os.path.join(args.builddir, "t", "bench", "runstat"), st.name] + argv,
                       check=True, stdout=subprocess.DEVNULL, stderr=err)
        f = st.read().split()
    if int(f[3]) != 0:
        with open(stderr_path, "rb") as err:
            tail = err.read()[-1500:].decode("utf-8", "replace")
        sys.exit(f"{' '.join(argv)} exited {f[3]}:\n{tail}")
    return float(f[1]), float(f[4]), float(f[5]), int(f[2])


def fresh(root):
    for d in ("data", "out"):
        shutil.rmtree(os.path.join(root, d), ignore_errors=True)


def delivered(stderr_path):
    """The entries the --once summary says were delivered, or -1."""
    with open(stderr_path, errors="replace") as f:
        m = re.search(r"output out: (\d+) delivered", f.read())
    return int(m.group(1)) if m else -1


def check_file_output(root, entries, digest):
    """(ok, lines): every event of the file output, in order: offsets 0.. and the messages
    written (their sha256)."""
    out = os.path.join(root, "out")
    h = hashlib.sha256()
    n = 0
    ok = True
    for name in sorted(os.listdir(out)):
        with open(os.path.join(out, name), "rb") as f:
            for line in f:
                ev = json.loads(line)
                ok &= ev["log"]["offset"] == n
                h.update(ev["message"].encode() + b"\n")
                n += 1
    return ok and n == entries and h.hexdigest() == digest, n


def alloc_count(args, root, name, entries):
    """(calls, bytes) that t/bench/logferry_alloc allocated reading ROOT/NAME, or None."""
    fresh(root)
    report = os.path.join(root, "alloc.txt")
    cfg = config(root, "alloc", os.path.join(root, name), file_output(root))
    env = dict(os.environ, LF_ALLOC_REPORT=report)
    with open(os.path.join(root, "alloc.err"), "wb") as err:
        r = subprocess.run([os.path.join(args.builddir, "t", "bench", "logferry_alloc"), "-c",
                            cfg, "--once"], env=env, stdout=subprocess.DEVNULL, stderr=err)
    if r.returncode != 0:
        sys.exit(f"logferry_alloc exited {r.returncode} (see {root}/alloc.err)")
    if delivered(os.path.join(root, "alloc.err")) != entries:
        sys.exit(f"logferry_alloc did not deliver {entries} entries")
    with open(report) as f:
        words = f.read().split()
    if words[0] == "n/a":
        return None
    return int(words[0]), int(words[1])


def machine():
    model = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    jctl = subprocess.run(["journalctl", "--version"], capture_output=True, text=True)
    return (f"{os.cpu_count()} cores ({model}), kernel {platform.release()}, "
            f"{jctl.stdout.splitlines()[0] if jctl.stdout else 'journalctl ?'}")


def pick_dir(entries, alloc_entries):
    # journal ~600 bytes an entry, NDJSON output ~700, the export ~550 while it is made
    need = (entries + 3 * alloc_entries) * 2000
    if os.path.isdir("/dev/shm") and shutil.disk_usage("/dev/shm").free > 2 * need:
        return "/dev/shm"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entries", type=int, default=1000000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--alloc-entries", type=int, default=None,
                    help="N of allocs(2N) - allocs(N) (default: half of --entries, so that "
                    "the journal of the timed runs is the 2N one); 0 leaves the count out")
    ap.add_argument("--dir", default=None, help="where the journal goes (default /dev/shm "
                    "when it has room, else $TMPDIR)")
    ap.add_argument("--builddir", default=os.environ.get("LF_BUILDDIR", "."))
    args = ap.parse_args()
    args.builddir = os.path.abspath(args.builddir)
    if args.alloc_entries is None:
        args.alloc_entries = args.entries // 2
    logferry = os.path.join(args.builddir, "logferry")
    for tool in (JOURNAL_REMOTE, logferry):
        if not os.access(tool, os.X_OK):
            sys.exit(f"{tool} is missing (Debian package systemd-journal-remote; make)")

    print(f"# {machine()}; load average at start {os.getloadavg()[0]:.2f}")
    root = tempfile.mkdtemp(prefix="lf-journal-bench-",
                            dir=args.dir or pick_dir(args.entries, args.alloc_entries))
    try:
        specs = [("journal", args.entries)]
        # allocs(2N) - allocs(N): the journal read above serves as 2N when it is
        alloc2 = "journal" if 2 * args.alloc_entries == args.entries else "alloc2"
        if args.alloc_entries > 0:
            specs.append(("alloc1", args.alloc_entries))
            if alloc2 != "journal":
                specs.append(("alloc2", 2 * args.alloc_entries))
        specs.sort(key=lambda s: -s[1])
        digests = make_journals(root, specs)
        jdir = os.path.join(root, "journal")
        size = sum(os.path.getsize(os.path.join(jdir, f)) for f in os.listdir(jdir))
        glob = os.path.join(jdir, "*.journal")
        subprocess.run(["cat"] + [os.path.join(jdir, f) for f in os.listdir(jdir)],
                       stdout=subprocess.DEVNULL, check=True)
        cases = [
            ("logferry, file output", "file",
             [logferry, "-c", config(root, "file", jdir, file_output(root)), "--once"]),
            ("logferry, console json > /dev/null", "console",
             [logferry, "-c", config(root, "console", jdir, CONSOLE_OUTPUT), "--once"]),
            ("journalctl -o json > /dev/null", None,
             ["journalctl", "-o", "json", "--file", glob]),
            ("journalctl -o export > /dev/null", None,
             ["journalctl", "-o", "export", "--file", glob]),
        ]
        samples = {name: [] for name, _, _ in cases}
        checks = {}
        err = os.path.join(root, "stderr.txt")
        for r in range(args.rounds):
            order = cases[r % len(cases):] + cases[:r % len(cases)]
            for name, kind, argv in order:
                if kind is not None:
                    fresh(root)
                samples[name].append(runstat(args, argv, err))
                if kind == "console":
                    n = delivered(err)
                    checks[name] = (n == args.entries, n)
                elif kind == "file" and name not in checks:
                    checks[name] = check_file_output(root, args.entries, digests["journal"])
        fresh(root)
        allocs = None
        if args.alloc_entries > 0:
            a1 = alloc_count(args, root, "alloc1", args.alloc_entries)
            a2 = alloc_count(args, root, alloc2, 2 * args.alloc_entries)
            allocs = None if a1 is None or a2 is None else (a1, a2)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    n = args.entries
    med = {name: [statistics.median(s[k] for s in samples[name]) for k in range(4)]
           for name in samples}
    ref = n / med["journalctl -o json > /dev/null"][0]
    per_entry = "n/a"
    if allocs is not None:
        (c1, b1), (c2, b2) = allocs
        per_entry = f"{(c2 - c1) / args.alloc_entries:.4f}"
    print(f"# {n} entries ({size / 1e6:.0f} MB of journal files), medians of {args.rounds} "
          f"rounds in alternation")
    print()
    print("| run | wall s | user s | sys s | entries/s | CPU s per million | CPU ns/entry "
          "| peak RSS MiB | allocs/entry | entries/s vs journalctl -o json | delivered |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, kind, _ in cases:
        wall, user, sys_s, rss = med[name]
        cpu = user + sys_s
        ok = checks.get(name)
        ok_s = "-" if ok is None else (f"yes ({ok[1]})" if ok[0] else f"NO ({ok[1]})")
        a = per_entry if kind == "file" else "-"
        print(f"| {name} | {wall:.3f} | {user:.3f} | {sys_s:.3f} | {n / wall:,.0f} | "
              f"{cpu * 1e6 / n:.2f} | {cpu * 1e9 / n:.0f} | {rss / 1024:.1f} | {a} | "
              f"{n / wall / ref:.2f}x | {ok_s} |")
    if allocs is not None:
        (c1, b1), (c2, b2) = allocs
        na = args.alloc_entries
        print()
        print(f"allocations (t/bench/logferry_alloc, file output): {na} entries: {c1} calls, "
              f"{b1} bytes; {2 * na} entries: {c2} calls, {b2} bytes; per entry in steady "
              f"state: {(c2 - c1) / na:.4f} calls, {(b2 - b1) / na:.1f} bytes")
    print(f"# load average at the end {os.getloadavg()[0]:.2f}")
    if not all(ok for ok, _ in checks.values()):
        print("ERROR: logferry did not deliver every entry intact")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
