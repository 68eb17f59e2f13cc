#!/usr/bin/env python3
"""The syslog output over TLS into a real rsyslogd (gtls driver) whose certificate, made by
openssl at test time, is signed by a test CA and names only IP 127.0.0.1. One input goes
to four TLS outputs:

- trusted: verify on (the default), ca_file = the test CA, address 127.0.0.1: delivers.
- no_ca: verify on, no ca_file (the system's CAs): refused, logged as a certificate
  verification failure (the log holds back word-for-word repeats for a minute), and
  retried with backoff.
- wrong_name: the test CA, but address localhost, a name the certificate does not hold:
  refused as a host name mismatch, logged, and retried.
- unverified: verify: false, no ca_file: delivers (the operator's explicit choice)."""
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rsyslogtest as rt  # noqa: E402
import tailtest as tt  # noqa: E402

LINES = 50


def main():
    rt.require_rsyslogd()
    c = tt.Checks()
    wd = tt.Workdir("syslog-tls")
    certs = rt.make_certs(os.path.join(wd.root, "pki"), server_names=("IP:127.0.0.1",))
    port = rt.free_port()
    rs = rt.Rsyslog(wd.root, tcp_port=port, tls=certs)
    rs.start()
    lines = [f"{i:03d} over TLS, verified: ja 😀" for i in range(LINES)]
    log = wd.path("app.log")
    with open(log, "w", encoding="utf-8") as f:
        f.write("".join(m + "\n" for m in lines))
    ca = json.dumps(certs["ca"])
    config = rt.write_config(wd, log, f"""\
  - {{name: trusted, type: syslog, protocol: tls, address: "127.0.0.1:{port}",
     hostname: trusted, timeout: 5s, tls: {{ca_file: {ca}}}}}
  - {{name: no_ca, type: syslog, protocol: tls, address: "127.0.0.1:{port}",
     hostname: no_ca, timeout: 5s}}
  - {{name: wrong_name, type: syslog, protocol: tls, address: "localhost:{port}",
     hostname: wrong_name, timeout: 5s, tls: {{ca_file: {ca}, verify: true}}}}
  - {{name: unverified, type: syslog, protocol: tls, address: "127.0.0.1:{port}",
     hostname: unverified, timeout: 5s, tls: {{verify: false}}}}
""", top_extra="shutdown_timeout: 2s\n")
    agent = tt.Agent(config, wd)
    try:
        tt.wait_for(lambda: rs.count() >= 2 * LINES, 20)
        # The refused outputs keep retrying (backoff 100 ms, 200 ms, ...): see a few rounds.
        tt.wait_for(lambda: len(retries(agent.stderr(), "no_ca")) >= 3
                    and len(retries(agent.stderr(), "wrong_name")) >= 3, 15)
        time.sleep(0.3)
    finally:
        agent.stop()
        rs.stop()
    recs = rs.lines()
    by_host = {}
    for r in recs:
        by_host.setdefault(r[0], []).append(r[4])
    c.check(by_host.get("trusted") == lines, "verified with ca_file: every line arrives once, "
            "in order", rt.first_difference(lines, by_host.get("trusted", [])))
    c.check(by_host.get("unverified") == lines, "verify: false: every line arrives once",
            f"{len(by_host.get('unverified', []))}")
    c.check("no_ca" not in by_host, "verify without the CA: nothing is sent",
            f"{len(by_host.get('no_ca', []))} messages")
    c.check("wrong_name" not in by_host, "a certificate for another name: nothing is sent",
            f"{len(by_host.get('wrong_name', []))} messages")
    err = agent.stderr()
    no_ca = refusals(err, "no_ca")
    c.check(no_ca and all("certificate verify failed: unable to get local issuer certificate"
                          in ln for ln in no_ca),
            "without the CA: the refusal is logged as a certificate verification failure",
            f"{no_ca[:1]}")
    wrong = refusals(err, "wrong_name")
    c.check(wrong and all("certificate verify failed: hostname mismatch" in ln for ln in wrong),
            "wrong name: the refusal is logged as a host name mismatch", f"{wrong[:1]}")
    for name in ("no_ca", "wrong_name"):
        n = retries(err, name)
        c.check(len(n) >= 3, f"{name}: the refused batch is retried with backoff",
                f"retries {n[:5]}")
    c.check("Sanitizer" not in err, "no sanitizer reports")
    rt.finish(c, wd, [agent], rs)


def retries(stderr, output):
    return re.findall(rf"output {output}: batch of \d+ events not delivered; retry (\d+)",
                      stderr)


def refusals(stderr, output):
    return [ln for ln in stderr.splitlines()
            if f"output {output}: TLS handshake with" in ln and "will be retried" in ln]


if __name__ == "__main__":
    main()
