"""Values from the environment never reach the log, not even inside a library's text.
- kafka: `sasl.mechanism: ${MECH}` with a value librdkafka refuses; its error text quotes
  the value ("Unsupported SASL mechanism: ..."). --test-config, --once and the daemon must
  say `${MECH}` where the value was.
- http: `tls.ca_file: ${CA}` naming a file that holds no certificate; libcurl's error text
  names the file. The daemon retries, logging that error with `${CA}` in its place."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import kafkatest as kt  # noqa: E402
import tailtest as tt  # noqa: E402

MECH = "Zq9SecretMechanismValue"


def run(args, env, timeout=60):
    r = subprocess.run([tt.LOGFERRY] + args, capture_output=True, timeout=timeout, env=env,
                       stdin=subprocess.DEVNULL)
    return r.returncode, (r.stdout + r.stderr).decode("utf-8", "replace")


def kafka_case(c, wd):
    out = kt.kafka_output("bus", ["127.0.0.1:1"], "logs", extra={
        "librdkafka": "{sasl.mechanism: \"${MECH}\", security.protocol: sasl_plaintext}"})
    cfg = kt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}], [out])
    env = dict(os.environ, MECH=MECH)
    for what, args in (("--test-config", ["-c", cfg, "--test-config"]),
                       ("--once", ["-c", cfg, "--once"]),
                       ("the daemon", ["-c", cfg])):
        rc, text = run(args, env)
        c.check(rc != 0 and "Unsupported SASL mechanism" in text,
                f"kafka, {what}: librdkafka's refusal is reported", f"rc {rc}; {text[-300:]}")
        c.check(MECH not in text and "${MECH}" in text,
                f"kafka, {what}: the value from the environment is not in it, ${{MECH}} is",
                text.strip()[-300:])


def http_case(c, wd):
    rx = ht.Receiver(os.path.join(wd.root, "rx"))
    agent = None
    try:
        secret_dir = os.path.join(wd.root, "Kx7SecretDirectoryName")
        os.makedirs(secret_dir)
        ca = os.path.join(secret_dir, "ca.pem")
        with open(ca, "w") as f:
            f.write("not a certificate\n")
        url = f"https://127.0.0.1:{rx.port}/ingest"
        cfg = ht.write_config(wd, [f"url: {url}", "timeout: 2s",
                                   "tls: {ca_file: \"${CA}\"}",
                                   "backoff: {initial: 200ms, max: 1s}"])
        ht.write_lines(wd.path("a.log"), ["one", "two"])
        agent = tt.PipedAgent(cfg, wd, "http", env=dict(os.environ, CA=ca))
        seen = agent.wait_log("will retry", 20)
        agent.stop()
        text = agent.stderr()
        c.check(seen, "http: libcurl's error is logged", text.strip()[-300:])
        c.check("Kx7SecretDirectoryName" not in text and "${CA}" in (seen or ""),
                "http: the path from the environment is not in it, ${CA} is",
                (seen or text).strip()[-300:])
    finally:
        if agent is not None and agent.alive():
            agent.stop()
        rx.stop()


def main():
    c = tt.Checks()
    wd = tt.Workdir("secret-scrub")
    try:
        ht.write_lines(wd.path("a.log"), ["hello"])
        kafka_case(c, wd)
        http_case(c, wd)
    finally:
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
