"""Shared helpers of the tailing daemon's integration tests (t/integration/tail_*.py).

Each test starts the real binary ($LOGFERRY) without --once on real files in a temporary
directory, writes, rotates and signals, then reads the file output (compression: none) and
compares what arrived with what was written. Python standard library only."""
import glob
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zlib

LOGFERRY = os.environ.get("LOGFERRY", "./logferry")
SOAK = os.environ.get("LF_SOAK", "") not in ("", "0")


class Checks:
    """Counts named checks and prints each outcome; finish() prints the summary line."""

    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, name, detail=""):
        if ok:
            self.passed += 1
            print(f"ok: {name}" + (f" ({detail})" if detail else ""))
        else:
            self.failed += 1
            print(f"FAIL: {name}" + (f": {detail}" if detail else ""))
        sys.stdout.flush()
        return ok

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed")
        sys.exit(0 if self.failed == 0 and self.passed > 0 else 1)


class Workdir:
    """A temporary directory with logs/, data/ and out/; removed unless LF_KEEP is set."""

    def __init__(self, name, base=None):
        self.root = tempfile.mkdtemp(prefix=f"lf-{name}-", dir=base)
        self.logs = os.path.join(self.root, "logs")
        self.data = os.path.join(self.root, "data")
        self.out = os.path.join(self.root, "out")
        os.makedirs(self.logs)

    def path(self, *parts):
        return os.path.join(self.logs, *parts)

    def cleanup(self):
        if os.environ.get("LF_KEEP"):
            print(f"kept {self.root}")
        else:
            shutil.rmtree(self.root, ignore_errors=True)


def yaml_str(s):
    return json.dumps(s)  # a JSON string is a valid YAML double-quoted scalar


def write_config(wd, inputs, batch_flush="100ms", registry_flush="200ms",
                 shutdown_timeout="10s", extra=""):
    """inputs: list of dicts with id, paths and optional input keys (written as given)."""
    lines = [f"data_dir: {yaml_str(wd.data)}", f"shutdown_timeout: {shutdown_timeout}",
             "inputs:"]
    for inp in inputs:
        lines.append(f"  - id: {inp['id']}")
        lines.append("    paths: [" + ", ".join(yaml_str(p) for p in inp["paths"]) + "]")
        opts = {"scan_interval": "1s", "close_inactive": "5s"}
        opts.update({k: v for k, v in inp.items() if k not in ("id", "paths")})
        for k, v in opts.items():
            lines.append(f"    {k}: {v}")
    lines += ["outputs:", "  - name: local", "    type: file", f"    path: {yaml_str(wd.out)}",
              "    compression: none",
              f"queue: {{batch: {{flush_interval: {batch_flush}}}}}",
              f"registry: {{flush_interval: {registry_flush}}}",
              "metrics: {listen: \"\"}"]
    if extra:
        lines.append(extra)
    path = os.path.join(wd.root, "logferry.yml")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


class Agent:
    """One run of `logferry -c CONFIG` with stderr captured to a file."""

    def __init__(self, config, wd, tag="agent", preexec=None, argv_prefix=None,
                 stdin=subprocess.DEVNULL):
        self.stderr_path = os.path.join(wd.root, f"{tag}.stderr")
        self.errf = open(self.stderr_path, "ab")
        argv = list(argv_prefix or []) + [LOGFERRY, "-c", config]
        self.proc = subprocess.Popen(argv, stdin=stdin, stdout=self.errf,
                                     stderr=self.errf, preexec_fn=preexec)
        self.pid = self.proc.pid
        self.rc = None
        self.stop_seconds = None

    def alive(self):
        return self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Sends sig and waits; returns the exit code (None if it did not exit)."""
        t0 = time.monotonic()
        if self.alive():
            self.proc.send_signal(sig)
        try:
            self.rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self.rc = None
        self.stop_seconds = time.monotonic() - t0
        self.errf.close()
        return self.rc

    def kill9(self):
        self.proc.kill()
        self.rc = self.proc.wait()
        self.errf.close()
        return self.rc

    def stderr(self):
        with open(self.stderr_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def rss_peak_kib(self):
        return proc_status_kib(self.pid, "VmHWM")

    def cpu_ticks(self):
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime (fields 14, 15)


def sanitized():
    """True for a binary built with a sanitizer, whose memory figures are its runtime's."""
    r = subprocess.run(["ldd", LOGFERRY], capture_output=True, text=True)
    return any(lib in r.stdout for lib in ("libasan", "libubsan", "libtsan"))


def proc_status_kib(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def read_events(out_dir, torn=None):
    """Every event in the output files, in file-name (write) order. A trailing partial line
    (an output file being written) is left out. With torn (a list), lines that are not JSON
    (a write cut by SIGKILL) are appended to it instead of raising."""
    events = []
    for name in sorted(glob.glob(os.path.join(out_dir, "logferry-*.ndjson"))):
        with open(name, "rb") as f:
            data = f.read()
        end = data.rfind(b"\n")
        for raw in data[:end + 1].splitlines():
            if not raw:
                continue
            try:
                events.append(json.loads(raw))
            except ValueError:
                if torn is None:
                    raise
                torn.append((name, raw[:120]))
    return events


def count_lines(out_dir):
    n = 0
    for name in glob.glob(os.path.join(out_dir, "logferry-*.ndjson")):
        with open(name, "rb") as f:
            n += f.read().count(b"\n")
    return n


def free_port():
    """A port on 127.0.0.1 nothing listens on (yet): connections to it are refused."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for(pred, timeout, step=0.05):
    """Polls pred() until true or timeout; returns the last value."""
    end = time.monotonic() + timeout
    v = pred()
    while not v and time.monotonic() < end:
        time.sleep(step)
        v = pred()
    return v


def wait_events(out_dir, n, timeout):
    """Waits until at least n events are in the output; returns the count seen."""
    got = [0]

    def enough():
        got[0] = count_lines(out_dir)
        return got[0] >= n
    wait_for(enough, timeout)
    return got[0]


def registry_offset(data_dir, path=None):
    """The registry's offset for path (the largest one when path is None), or None when the
    registry or the entry does not exist."""
    recs = read_registry(data_dir)
    offs = [r["offset"] for r in recs or [] if path is None or r["path"] == path]
    return max(offs) if offs else None


def wait_registry_offset(data_dir, path, offset, timeout=30):
    """Waits until the registry holds offset for path (None: for any entry); returns the
    offset last seen (None when there was no entry)."""
    seen = [None]

    def there():
        seen[0] = registry_offset(data_dir, path)
        return seen[0] == offset
    wait_for(there, timeout, step=0.1)
    return seen[0]


def wait_stderr(agent, needle, timeout=30, count=1):
    """Waits until agent's log holds needle (count times); returns whether it did."""
    return bool(wait_for(lambda: agent.stderr().count(needle) >= count, timeout, step=0.1))


def fd_position(pid, path):
    """The file position of pid's descriptor open on path (/proc/PID/fdinfo), or None when
    it holds none."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != path:
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                for line in f:
                    if line.startswith("pos:"):
                        return int(line.split()[1])
        except (OSError, ValueError):
            continue
    return None


def metrics_port(agent, timeout=30):
    """The port the agent's log says /metrics is served on (listen 127.0.0.1:0), or None."""
    import re
    port = [None]

    def found():
        m = re.search(r"metrics on http://127\.0\.0\.1:(\d+)/metrics", agent.stderr())
        port[0] = int(m.group(1)) if m else None
        return port[0]
    wait_for(found, timeout, step=0.1)
    return port[0]


def scrape(port, path="/metrics"):
    """(status, body) of GET http://127.0.0.1:PORT/PATH; (None, error text) on failure."""
    import urllib.error
    import urllib.request
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return None, str(e)


def metric(body, name, labels=""):
    """The value of sample name{labels} in a Prometheus text body, or None."""
    prefix = name + labels + " "
    for line in (body or "").splitlines():
        if line.startswith(prefix):
            try:
                return float(line[len(prefix):].split()[0])
            except (ValueError, IndexError):
                return None
    return None


def wait_metric(port, name, labels, pred, timeout=30):
    """Waits until pred(value of name{labels}) is true; returns the value last seen."""
    seen = [None]

    def ok():
        _, body = scrape(port)
        seen[0] = metric(body, name, labels)
        return seen[0] is not None and pred(seen[0])
    wait_for(ok, timeout, step=0.1)
    return seen[0]


def check_no_error_logged(c, err):
    """A check that the agent's log (err) holds no error line."""
    c.check("ERROR" not in err.upper().replace("ERRORS", ""), "no error logged",
            "\n".join(ln for ln in err.splitlines() if "error" in ln.lower())[:500])


def messages_by_path(events):
    by = {}
    for ev in events:
        by.setdefault(ev["log"]["file"]["path"], []).append(ev["message"])
    return by


def _registry_record(p):
    """A registry record's fields (version 1: 8, no stream id; version 2: 9)."""
    return {"input": p[0], "dev": int(p[1]), "ino": int(p[2]), "fp_len": int(p[3]),
            "fp_hash": p[4], "offset": int(p[5]), "stream": p[7] if len(p) == 9 else None,
            "path": p[-1]}


def read_registry(data_dir):
    """Registry records as dicts (input, dev, ino, fp_len, fp_hash, offset, stream, path), or
    None: the registry file with its journal, registry.log, applied as the agent applies it
    at a start (docs/registry.md): only when the journal's header names the file's
    checksum, record by record up to the first torn or damaged one."""
    try:
        with open(os.path.join(data_dir, "registry"), "rb") as f:
            data = f.read()
    except OSError:
        return None
    text = data.decode("utf-8", "replace")
    recs = {}
    for line in text.splitlines()[1:]:
        if line.startswith("end "):
            break
        p = line.split("\t")
        if len(p) >= 8:
            recs[(p[0], p[1], p[2])] = _registry_record(p)
    try:
        with open(os.path.join(data_dir, "registry.log"), "rb") as f:
            journal = f.read()
    except OSError:
        journal = b""
    end = data.rfind(b"end ", 0, len(data))
    base = data[end + 4:end + 12] if end >= 0 else b"?"
    lines = journal.split(b"\n")
    if lines and lines[0] in (b"logferry-registry-log 1 " + base,
                              b"logferry-registry-log 2 " + base):
        for raw in lines[1:-1]:  # the last piece follows the last newline: torn or empty
            body, _, crc = raw.rpartition(b"\t")
            if not body or crc != b"%08x" % zlib.crc32(body):
                break
            p = body.decode("utf-8", "replace").split("\t")
            if p[0] == "s" and len(p) in (9, 10):
                recs[(p[1], p[2], p[3])] = _registry_record(p[1:])
            elif p[0] == "r" and len(p) == 4:
                recs.pop((p[1], p[2], p[3]), None)
            else:
                break
    return list(recs.values())


def compare_streams(expected, got_messages):
    """expected: list of unique lines in write order; got_messages: messages received (any
    order, maybe duplicated, maybe of other streams). Returns (missing, dups, out_of_order)
    where out_of_order counts received lines whose first arrival came before an earlier
    written line's first arrival."""
    pos = {m: i for i, m in enumerate(expected)}
    seen = {}
    dups = 0
    order_breaks = 0
    last = -1
    for m in got_messages:
        i = pos.get(m)
        if i is None:
            continue
        if i in seen:
            dups += 1
            continue
        seen[i] = True
        if i < last:
            order_breaks += 1
        last = i
    missing = [expected[i] for i in range(len(expected)) if i not in seen]
    return missing, dups, order_breaks


# ---- helpers of the fault and promise tests (tail_promises.py, tail_faults.py, ...) ----

SKIP = 77  # automake's exit status for a test the machine rules out


class PipedAgent:
    """`logferry -c CONFIG ARGS...` with stderr read through a pipe by a thread (so that a
    lowered RLIMIT_FSIZE on the agent does not stop its log) and copied to WD/TAG.stderr.
    prefix: argv words before the binary (e.g. unshare ...)."""

    def __init__(self, config, wd, tag="agent", args=(), prefix=(), env=None, stdout=None):
        import threading
        self.stderr_path = os.path.join(wd.root, f"{tag}.stderr")
        self.lines = []
        self._lock = threading.Lock()
        argv = list(prefix) + [LOGFERRY, "-c", config] + list(args)
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                     stdout=stdout if stdout is not None else subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=env)
        self.pid = self.proc.pid
        self.rc = None
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self):
        with open(self.stderr_path, "ab") as copy:
            for raw in self.proc.stderr:
                copy.write(raw)
                copy.flush()
                with self._lock:
                    self.lines.append(raw.decode("utf-8", "replace"))

    def alive(self):
        return self.proc.poll() is None

    def stderr(self):
        with self._lock:
            return "".join(self.lines)

    def log_count(self, needle):
        with self._lock:
            return sum(needle in line for line in self.lines)

    def wait_log(self, needle, timeout):
        """Waits until a log line contains needle; returns that line or None."""
        found = [None]

        def seen():
            with self._lock:
                for line in self.lines:
                    if needle in line:
                        found[0] = line
                        return True
            return False
        wait_for(seen, timeout, 0.1)
        return found[0]

    def wait(self, timeout):
        try:
            self.rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self.rc = None
        self._thread.join(5)
        return self.rc

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.alive():
            self.proc.send_signal(sig)
        return self.wait(timeout)

    def kill9(self):
        self.proc.kill()
        return self.wait(10)


def fd_targets(pid):
    """What /proc/PID/fd links to (paths, with " (deleted)" for unlinked files)."""
    out = []
    base = f"/proc/{pid}/fd"
    try:
        names = os.listdir(base)
    except OSError:
        return out
    for n in names:
        try:
            out.append(os.readlink(os.path.join(base, n)))
        except OSError:
            pass
    return out


def open_under(pid, directory):
    """How many descriptors of pid refer to files under directory."""
    prefix = directory.rstrip("/") + "/"
    return sum(1 for t in fd_targets(pid) if t.startswith(prefix))


def set_rlimit_fsize(pid, limit):
    """Lowers (or, with None, lifts) a running process's RLIMIT_FSIZE with prlimit(1)."""
    val = "unlimited" if limit is None else str(limit)
    return subprocess.run(["prlimit", f"--pid={pid}", f"--fsize={val}:unlimited"]).returncode


def limit_fsize_4k():
    """A preexec_fn: RLIMIT_FSIZE of 4 KiB, and SIGXFSZ ignored so writes fail with EFBIG."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


def write_once_config(wd, max_events):
    """A backfill config: wd's *.log into an uncompressed file output in wd.out, batches of
    max_events, shutdown_timeout 1s (so the retry budget is its floor, 30 s). Returns its
    path."""
    path = os.path.join(wd.root, "once.yml")
    with open(path, "w") as f:
        f.write(f"""data_dir: {json.dumps(wd.data)}
shutdown_timeout: 1s
inputs:
  - id: app
    paths: [{json.dumps(wd.path("*.log"))}]
outputs:
  - {{name: local, type: file, path: {json.dumps(wd.out)}, compression: none}}
queue: {{batch: {{max_events: {max_events}}}}}
metrics: {{listen: ""}}
""")
    return path


def edit_config(path, old, new):
    with open(path) as f:
        text = f.read()
    if old not in text:
        raise AssertionError(f"{old!r} not in {path}")
    with open(path, "w") as f:
        f.write(text.replace(old, new, 1))


def http_get(url, timeout=5):
    """(status, body) of a GET; status None when nothing answered."""
    import urllib.error
    import urllib.request
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")
    except OSError:
        return None, ""


def metric_value(text, name, labels=""):
    """The value of `logferry_NAME{LABELS}` in a Prometheus text page, or None."""
    key = f"logferry_{name}" + (f"{{{labels}}}" if labels else "")
    for line in text.splitlines():
        if line.startswith(key + " "):
            return float(line.split()[-1])
    return None


def skip_without_tmpfs():
    """Exits with SKIP (77) when the machine does not allow mounting a tmpfs (Tmpfs)."""
    probe = os.path.join(Workdir("tmpfs-probe").root, "m")
    try:
        Tmpfs(probe, "64k").umount()
    except OSError as e:
        print(f"SKIP: cannot mount a tmpfs here ({e})")
        sys.exit(SKIP)
    finally:
        subprocess.run(["rm", "-rf", os.path.dirname(probe)])


class Tmpfs:
    """A small tmpfs mounted at a new directory; umount() is safe to call twice. Raises
    OSError when the machine does not allow mounting."""

    def __init__(self, where, size):
        os.makedirs(where, exist_ok=True)
        self.where = where
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs",
                            where], stderr=subprocess.PIPE)
        if r.returncode != 0:
            raise OSError(r.stderr.decode(errors="replace").strip())
        self.mounted = True

    def umount(self):
        if self.mounted:
            r = subprocess.run(["umount", self.where])
            if r.returncode != 0:
                subprocess.run(["umount", "-l", self.where])
            self.mounted = False


def read_events_file(name):
    """The whole events of one output file (a trailing partial or torn line is left out)."""
    events = []
    try:
        with open(name, "rb") as f:
            data = f.read()
    except OSError:
        return events
    end = data.rfind(b"\n")
    for raw in data[:end + 1].splitlines():
        try:
            events.append(json.loads(raw))
        except ValueError:
            pass
    return events
