#!/usr/bin/env python3
"""An output whose library cannot be loaded stops only what needs it.

In a mount namespace of its own, /dev/null is bound over librdkafka, so the kafka output's
library cannot be loaded there (dlopen: "file too short"), while the rest of the system is
untouched. Then:
- `--test-config` on a config with a kafka output exits 1, naming the output, the library
  and the loader's reason; the same config with only a file output is "config OK";
- the daemon with the kafka output refuses to start, with the same words;
- a daemon running with a file output, reloaded (SIGHUP) onto a config that adds the kafka
  output, logs why, keeps the old config, and goes on delivering every line, before and
  after; SIGTERM exits 0;
- with libcurl hidden the same way, a daemon with the kubernetes section refuses to start,
  saying "kubernetes: cannot load libcurl..." (not "output kubernetes").
Needs root (for the namespace); otherwise it is skipped."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402


def library_path(soname):
    cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    m = re.search(r"^\s*%s \(.*\) => (\S+)$" % re.escape(soname), cache, re.M)
    return m.group(1) if m else None


def hidden(lib):
    """The argv prefix that runs a command with /dev/null bound over lib."""
    return ["unshare", "-m", "sh", "-c", 'mount --bind /dev/null "$0" && exec "$@"', lib]


def config(wd, name, kafka):
    path = os.path.join(wd.root, name)
    outs = [f"  - {{name: local, type: file, path: {json.dumps(wd.out)}, compression: none}}"]
    if kafka:
        outs.append('  - {name: bus, type: kafka, brokers: ["127.0.0.1:1"], topic: logs}')
    with open(path, "w") as f:
        f.write(f"""data_dir: {json.dumps(wd.data)}
shutdown_timeout: 2s
inputs:
  - id: app
    paths: [{json.dumps(wd.path("*.log"))}]
    outputs: [local]
outputs:
""" + "\n".join(outs) + """
queue: {batch: {flush_interval: 50ms}}
metrics: {listen: ""}
""")
    return path


def main():
    version = subprocess.run([tt.LOGFERRY, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"(librdkafka\S*\.so\.\S+) \(kafka\)", version)
    soname = m.group(1) if m else None
    lib = library_path(soname) if soname else None
    if os.geteuid() != 0 or shutil.which("unshare") is None or lib is None:
        print(f"SKIP: needs root and unshare for a mount namespace, and {soname} ({lib})")
        sys.exit(77)
    c = tt.Checks()
    wd = tt.Workdir("netlib-missing")
    agent = None
    try:
        with_kafka = config(wd, "kafka.yml", True)
        file_only = config(wd, "file.yml", False)
        why = f"output bus: cannot load {soname}, needed by the kafka output: "

        r = subprocess.run(hidden(lib) + [tt.LOGFERRY, "-c", with_kafka, "--test-config"],
                           capture_output=True, text=True, timeout=30)
        c.check(r.returncode == 1 and why in r.stderr and "file too short" in r.stderr
                and "config OK" not in r.stdout,
                "--test-config exits 1 and says which output needs what, and why",
                f"rc {r.returncode}, stderr {r.stderr.strip()!r}")
        r = subprocess.run(hidden(lib) + [tt.LOGFERRY, "-c", file_only, "--test-config"],
                           capture_output=True, text=True, timeout=30)
        c.check(r.returncode == 0 and r.stdout.strip() == "config OK",
                "a config that needs no library is OK in the same namespace",
                f"rc {r.returncode}, {r.stdout.strip()!r} {r.stderr.strip()!r}")

        r = subprocess.run(hidden(lib) + [tt.LOGFERRY, "-c", with_kafka], capture_output=True,
                           text=True, timeout=30)
        c.check(r.returncode != 0 and why in r.stderr, "the daemon refuses to start, saying why",
                f"rc {r.returncode}, stderr {r.stderr.strip()[-300:]!r}")

        log = wd.path("app.log")
        with open(log, "w") as f:
            f.writelines(f"before {i}\n" for i in range(100))
        agent = tt.Agent(file_only, wd, tag="reload", argv_prefix=hidden(lib))
        got = tt.wait_events(wd.out, 100, 20)
        c.check(got == 100, "the file output delivers in the namespace", f"{got} of 100")
        shutil.copyfile(with_kafka, file_only)
        os.kill(agent.pid, signal.SIGHUP)
        ok = tt.wait_for(lambda: why in agent.stderr(), 20)
        c.check(ok and re.search(r"reload 1 of \S+ failed: " + re.escape(why) + r".*; the running "
                                 r"configuration stays", agent.stderr()) is not None,
                "the reload onto the kafka output is refused, saying why",
                agent.stderr().strip()[-300:])
        with open(log, "a") as f:
            f.writelines(f"after {i}\n" for i in range(100))
        tt.wait_events(wd.out, 200, 20)
        msgs = [e["message"] for e in tt.read_events(wd.out)]
        want = [f"before {i}" for i in range(100)] + [f"after {i}" for i in range(100)]
        c.check(agent.alive() and msgs == want,
                "the old config keeps running: every line once, in order",
                f"alive {agent.alive()}, {len(msgs)} lines")
        rc = agent.stop()
        c.check(rc == 0, "SIGTERM exits 0", f"rc {rc}")

        # The kubernetes section's watch needs libcurl: hidden, the daemon says so.
        curl = library_path(re.search(r"loads on demand: (\S+)", version).group(1))
        kube = wd.path("kube.yml")
        with open(file_only) as f:
            text = f.read()
        with open(kube, "w") as f:
            f.write(text + "kubernetes: {enabled: true, api_server: \"https://127.0.0.1:1\", "
                    "node_name: n1}\n")
        r = subprocess.run(hidden(curl) + [tt.LOGFERRY, "-c", kube], capture_output=True,
                           text=True, timeout=30)
        c.check(r.returncode != 0 and re.search(r"kubernetes: cannot load libcurl\S*, needed by "
                                                r"the http, .* and kubernetes metadata: ",
                                                r.stderr) is not None
                and "output kubernetes" not in r.stderr,
                "with the kubernetes section, a missing libcurl stops the start, saying why",
                f"rc {r.returncode}, stderr {r.stderr.strip()[-300:]!r}")
    finally:
        if agent is not None and agent.alive():
            agent.kill9()
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
