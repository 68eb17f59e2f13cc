"""A real rsyslogd for the syslog output's tests (t/integration/syslog_*.py).

Each test starts rsyslogd itself, never as a service: `rsyslogd -n -f CONF -i PIDFILE` with
its own work directory, listening on 127.0.0.1 (imtcp, optionally over the gtls driver,
and imudp) on free ports, and writing every message it receives to one file, one line per
message: `HOSTNAME APP-NAME PRI TIMESTAMP MSG`. Stopped by the PID in its pid file.

When rsyslogd is not installed or cannot start here for a reason outside logferry, the
test exits 77 (skipped) saying why: it never passes without a receiver."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

RSYSLOGD = shutil.which("rsyslogd") or "/usr/sbin/rsyslogd"
OPENSSL = shutil.which("openssl")


def skip(why):
    print(f"SKIP: {why}")
    sys.stdout.flush()
    sys.exit(77)


def require_rsyslogd():
    if not os.access(RSYSLOGD, os.X_OK):
        skip("rsyslogd is not installed (Debian package rsyslog; ./bootstrap.sh deps --all installs it)")


def free_port(kind=socket.SOCK_STREAM):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def make_certs(d, server_names=("IP:127.0.0.1", "DNS:localhost")):
    """A CA and a server certificate for server_names, signed by it, in directory d.
    Returns dict(ca=, cert=, key=) paths."""
    if OPENSSL is None:
        skip("openssl is not installed")
    os.makedirs(d, exist_ok=True)
    p = {k: os.path.join(d, f) for k, f in
         (("ca", "ca.pem"), ("ca_key", "ca.key"), ("cert", "server.pem"),
          ("key", "server.key"), ("csr", "server.csr"), ("ext", "server.ext"))}

    def run(*args):
        r = subprocess.run([OPENSSL, *args], capture_output=True, text=True)
        if r.returncode != 0:
            skip(f"openssl {args[0]} failed: {r.stderr.strip()[:200]}")
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
        "/CN=logferry test CA", "-keyout", p["ca_key"], "-out", p["ca"])
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=syslog test server",
        "-keyout", p["key"], "-out", p["csr"])
    with open(p["ext"], "w") as f:
        f.write("subjectAltName=" + ",".join(server_names) + "\n"
                "extendedKeyUsage=serverAuth\n")
    run("x509", "-req", "-in", p["csr"], "-CA", p["ca"], "-CAkey", p["ca_key"],
        "-CAcreateserial", "-days", "2", "-extfile", p["ext"], "-out", p["cert"])
    return p


class Rsyslog:
    """One rsyslogd with imtcp on tcp_port (TLS when tls is a make_certs() dict) and, if
    udp_port is set, imudp; every received message becomes one line of self.out."""

    def __init__(self, root, tcp_port=None, udp_port=None, tls=None):
        self.dir = os.path.join(root, "rsyslog")
        self.work = os.path.join(self.dir, "work")
        os.makedirs(self.work, exist_ok=True)
        self.conf = os.path.join(self.dir, "rsyslog.conf")
        self.pidfile = os.path.join(self.dir, "rsyslogd.pid")
        self.out = os.path.join(self.dir, "received.log")
        self.log = os.path.join(self.dir, "rsyslogd.stderr")
        self.tcp_port = tcp_port
        self.udp_port = udp_port
        self.proc = None
        lines = [
            f'global(workDirectory="{self.work}" maxMessageSize="64k"',
            '       parser.escapeControlCharactersOnReceive="off")',
            # Messages already taken in are written before rsyslogd exits.
            'main_queue(queue.timeoutShutdown="20000" queue.timeoutActionCompletion="20000")',
        ]
        if tls is not None:
            lines += [
                f'global(defaultNetstreamDriverCAFile="{tls["ca"]}"',
                f'       defaultNetstreamDriverCertFile="{tls["cert"]}"',
                f'       defaultNetstreamDriverKeyFile="{tls["key"]}")',
                'module(load="imtcp" streamDriver.name="gtls" streamDriver.mode="1"',
                '       streamDriver.authMode="anon")',
            ]
        elif tcp_port is not None:
            lines.append('module(load="imtcp")')
        if tcp_port is not None:
            lines.append(f'input(type="imtcp" address="127.0.0.1" port="{tcp_port}" '
                         'ruleset="received")')
        if udp_port is not None:
            lines += ['module(load="imudp")',
                      f'input(type="imudp" address="127.0.0.1" port="{udp_port}" '
                      'ruleset="received")']
        lines += [
            'template(name="fields" type="list") {',
            '  property(name="hostname") constant(value=" ")',
            '  property(name="app-name") constant(value=" ")',
            '  property(name="pri") constant(value=" ")',
            '  property(name="timestamp" dateFormat="rfc3339") constant(value=" ")',
            '  property(name="msg") constant(value="\\n")',
            '}',
            'ruleset(name="received") {',
            f'  action(type="omfile" file="{self.out}" template="fields")',
            '}',
        ]
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")

    def start(self, timeout=15):
        """Starts rsyslogd and waits until its inputs listen; exits 77 if it cannot run."""
        if os.path.exists(self.pidfile):
            os.unlink(self.pidfile)
        errf = open(self.log, "ab")
        self.proc = subprocess.Popen([RSYSLOGD, "-n", "-f", self.conf, "-i", self.pidfile],
                                     stdin=subprocess.DEVNULL, stdout=errf, stderr=errf)
        errf.close()
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                skip(f"rsyslogd exited at start ({self.proc.returncode}): {self.stderr()[-400:]}")
            if os.path.exists(self.pidfile) and self.listening():
                return
            time.sleep(0.05)
        self.stop()
        skip(f"rsyslogd did not listen within {timeout} s: {self.stderr()[-400:]}")

    def listening(self):
        if self.udp_port is not None and not udp_bound(self.udp_port):
            return False
        if self.tcp_port is None:
            return True
        return tcp_listening(self.tcp_port)

    def pid(self):
        try:
            with open(self.pidfile) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def stop(self, timeout=30):
        """Stops rsyslogd by the PID in its pid file (SIGTERM) and waits for it."""
        pid = self.pid()
        if pid is not None:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        if self.proc is not None:
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def stderr(self):
        try:
            with open(self.log, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def lines(self):
        """Received messages as (hostname, app_name, pri, timestamp, msg) tuples, in arrival
        order."""
        try:
            with open(self.out, "rb") as f:
                data = f.read()
        except OSError:
            return []
        end = data.rfind(b"\n")
        recs = []
        for raw in data[:end + 1].split(b"\n")[:-1]:
            parts = raw.decode("utf-8", "replace").split(" ", 4)
            while len(parts) < 5:
                parts.append("")
            recs.append(tuple(parts))
        return recs

    def count(self):
        try:
            with open(self.out, "rb") as f:
                return f.read().count(b"\n")
        except OSError:
            return 0


def write_config(wd, log, outputs, input_extra="", top_extra="", max_events=4096):
    """Writes an agent config reading log (input app) into outputs (the YAML list items,
    indented by two); returns its path."""
    path = os.path.join(wd.root, "logferry.yml")
    with open(path, "w") as f:
        f.write(f"""data_dir: {json.dumps(wd.data)}
{top_extra}inputs:
  - id: app
    paths: [{json.dumps(log)}]
{input_extra}outputs:
{outputs}queue: {{batch: {{max_events: {max_events}, flush_interval: 100ms}}}}
registry: {{flush_interval: 200ms}}
metrics: {{listen: ""}}
""")
    return path


def first_difference(want, got):
    """Where two lists of messages (or tuples) first differ, for a check's detail."""
    for i, (a, b) in enumerate(zip(want, got)):
        if a != b:
            return f"item {i}: want {str(a)[:100]!r}, got {str(b)[:100]!r}"
    if len(want) != len(got):
        return f"want {len(want)} items, got {len(got)}"
    return ""


def finish(checks, wd, agents, rs):
    """Shows the agents' and rsyslogd's logs if a check failed, cleans up, exits."""
    if checks.failed:
        for agent in agents:
            print(agent.stderr()[-2000:])
        print(rs.stderr()[-2000:])
    wd.cleanup()
    checks.finish()


def tcp_listening(port):
    """True if something listens on 127.0.0.1:port (from /proc, so rsyslogd sees no probe
    connection)."""
    want = f"0100007F:{port:04X}"
    try:
        with open("/proc/net/tcp") as f:
            return any(line.split()[1] == want and line.split()[3] == "0A"
                       for line in f.readlines()[1:])
    except OSError:
        return False


def udp_bound(port):
    want = f"0100007F:{port:04X}"
    try:
        with open("/proc/net/udp") as f:
            return any(line.split()[1] == want for line in f.readlines()[1:])
    except OSError:
        return False
