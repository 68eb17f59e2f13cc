#!/usr/bin/env python3
"""The network libraries are loaded only by the outputs that need them.

The binary links none of libcurl, librdkafka and libssl (`ldd`). A running agent whose
output is a file maps none of them, and (outside the sanitizers, whose shadow memory is not
the agent's) stays small; an http output maps libcurl and delivers, a kafka output maps
librdkafka, a syslog output over TLS maps libssl and nothing of the other two. The sonames
are the ones `logferry --version` names."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import tailtest as tt  # noqa: E402

LINES = 200
# The agent on one small file keeps 4 MiB resident here; with the libraries linked it
# kept 10.3 MiB.
IDLE_RSS_KIB = 8 * 1024
GNUTLS_RSS_KIB = 800


def sonames():
    out = subprocess.run([tt.LOGFERRY, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"loads on demand: (\S+) \(http, elasticsearch, loki[^)]*\), (\S+) \(kafka\), "
                  r"(\S+) \(syslog tls\)", out)
    return (m.group(1), m.group(2), m.group(3)) if m else None


def mapped(pid, sonames):
    """Which of sonames the process maps (by file name: libcurl.so.4 is libcurl.so.4.8.0)."""
    with open(f"/proc/{pid}/maps") as f:
        files = {os.path.basename(line.split()[-1]) for line in f if "/" in line}
    return {n for n in sonames if any(x == n or x.startswith(n + ".") for x in files)}



def resident_kib(pid, prefix):
    """Resident KiB of the mappings of the shared objects whose file name starts with prefix,
    and whether there is one."""
    total, seen, cur = 0, False, False
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            first = line.split(None, 1)[0]
            if "-" in first and not first.endswith(":"):
                parts = line.split()
                cur = len(parts) > 5 and os.path.basename(parts[5]).startswith(prefix)
                seen |= cur
            elif cur and first == "Rss:":
                total += int(line.split()[1])
    return total, seen


def start(wd, tag, output_yaml):
    config = os.path.join(wd.root, f"{tag}.yml")
    with open(config, "w") as f:
        f.write(f"""data_dir: {json.dumps(os.path.join(wd.root, tag))}
shutdown_timeout: 2s
inputs:
  - id: app
    paths: [{json.dumps(wd.path("*.log"))}]
    start_at: beginning
outputs:
{output_yaml}
queue: {{batch: {{flush_interval: 50ms}}}}
metrics: {{listen: ""}}
""")
    agent = tt.Agent(config, wd, tag=tag)
    tt.wait_stderr(agent, "following 1 inputs")
    return agent


def main():
    c = tt.Checks()
    names = sonames()
    if not c.check(names is not None, "--version names the libraries loaded on demand"):
        c.finish()
    curl, kafka, ssl = names
    ldd = subprocess.run(["ldd", tt.LOGFERRY], capture_output=True, text=True).stdout
    linked = {lib for lib in names if lib in ldd}
    c.check(not linked, "the binary links none of them", f"ldd lists {sorted(linked)}")

    wd = tt.Workdir("netlib")
    rx = ht.Receiver(os.path.join(wd.root, "rx"))
    agents = []
    try:
        with open(wd.path("app.log"), "w") as f:
            f.writelines(f"line {i}\n" for i in range(LINES))

        out_dir = os.path.join(wd.root, "out")
        a = start(wd, "file", f"  - {{name: local, type: file, path: {json.dumps(out_dir)}, "
                  "compression: none}")
        agents.append(a)
        got = tt.wait_events(out_dir, LINES, 20)
        c.check(got == LINES, "the file output delivers every line", f"{got} of {LINES}")
        libs = mapped(a.pid, names)
        c.check(not libs, "a file output maps none of them", f"mapped: {sorted(libs)}")
        rss = tt.proc_status_kib(a.pid, "VmRSS")
        if tt.sanitized():
            print(f"info: RSS {rss} KiB not compared: a sanitizer build")
        else:
            c.check(rss is not None and rss <= IDLE_RSS_KIB, "and stays small",
                    f"{rss} KiB resident, at most {IDLE_RSS_KIB}")
        c.check(a.stop() == 0, "the file agent stops with exit 0", f"rc {a.rc}")

        a = start(wd, "http", f"  - {{name: collector, type: http, url: {json.dumps(rx.url())}}}")
        agents.append(a)
        ok = tt.wait_for(lambda: sum(r.get("lines", 0) for r in rx.requests()
                                     if r["status"] == 200) >= LINES, 20)
        c.check(ok, "the http output delivers every line")
        libs = mapped(a.pid, names)
        c.check(curl in libs and kafka not in libs, "an http output maps libcurl only",
                f"{curl}: {curl in libs}, {kafka}: {kafka in libs}")
        # GnuTLS comes with Debian's libcurl (through librtmp and libldap, never used here)
        # and initialises itself at load unless told not to: 1.1 MiB resident, 0.5 without.
        kib, seen = resident_kib(a.pid, "libgnutls.so")
        c.check(not seen or kib <= GNUTLS_RSS_KIB, "GnuTLS, mapped by libcurl's dependencies, "
                "does not initialise itself", f"{kib} KiB resident" if seen else "not mapped")
        c.check(a.stop() == 0, "the http agent stops with exit 0", f"rc {a.rc}")

        a = start(wd, "kafka", "  - {name: bus, type: kafka, brokers: [\"127.0.0.1:1\"], "
                  "topic: logs}")
        agents.append(a)
        libs = mapped(a.pid, names)
        c.check(kafka in libs and curl not in libs, "a kafka output maps librdkafka, not libcurl",
                f"{kafka}: {kafka in libs}, {curl}: {curl in libs}")
        a.stop()

        a = start(wd, "syslog", "  - {name: central, type: syslog, protocol: tls, "
                  "address: \"127.0.0.1:1\", tls: {verify: false}}")
        agents.append(a)
        libs = mapped(a.pid, names)
        c.check(ssl in libs and curl not in libs and kafka not in libs,
                "a syslog output over TLS maps libssl and neither of the others",
                f"{ssl}: {ssl in libs}, {curl}: {curl in libs}, {kafka}: {kafka in libs}")
        a.stop()
    finally:
        for a in agents:
            if a.alive():
                a.kill9()
        rx.stop()
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
