"""The http output over TLS, against a CA and server certificate made with `openssl` at test
time: verified with tls.ca_file, everything arrives; without it the certificate is refused,
the batch retried and the reason logged; with verify: false it goes through, with a
warning at start."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import tailtest as tt  # noqa: E402
import tlstest  # noqa: E402


def main():
    c = tt.Checks()
    wd = tt.Workdir("http-tls")
    pki = os.path.join(wd.root, "pki")
    os.makedirs(pki)
    server, ca = tlstest.make_pki(pki)
    rx = ht.Receiver(os.path.join(wd.root, "rx"), tls=server)
    agent = None
    try:
        lines = [f"tls {i} \u00fc" for i in range(300)]
        ht.write_lines(wd.path("a.log"), lines)
        cfg = ht.write_config(wd, [f"url: {rx.url()}", "compression: zstd",
                                   f"tls: {{ca_file: {tt.yaml_str(ca)}}}"])
        rc, err = ht.run_once(cfg)
        c.check(rc == 0, "verified against ca_file: --once exits 0", f"rc {rc}: {err[-200:]}")
        c.check(sorted(e["message"] for e in rx.accepted()) == sorted(lines),
                "verified against ca_file: every line arrives", f"{len(rx.accepted())}")

        # No ca_file: the system CAs do not know ours.
        more = [f"untrusted {i}" for i in range(20)]
        ht.write_lines(wd.path("a.log"), more)
        cfg = ht.write_config(wd, [f"url: {rx.url()}", "backoff: {initial: 100ms, max: 300ms}"])
        agent = tt.Agent(cfg, wd, "untrusted")
        retried = tt.wait_for(lambda: agent.stderr().count("certificate") >= 2, 20)
        time.sleep(0.5)
        err = agent.stderr()
        line = next((l for l in err.splitlines() if "certificate" in l), "")
        c.check(retried, "without ca_file the certificate is refused, again on each retry",
                line[:200])
        c.check("output collector: POST https://127.0.0.1:" in line and "will retry" in line,
                "the log line names the output, the URL and what happens next")
        c.check(len(rx.accepted()) == len(lines), "nothing is sent to an unverified server")
        agent.stop()
        agent = None

        cfg = ht.write_config(wd, [f"url: {rx.url()}", "tls: {verify: false}"])
        rc, err = ht.run_once(cfg)
        c.check(rc == 0 and sorted(e["message"] for e in rx.accepted()[len(lines):]) ==
                sorted(more), "verify: false delivers", f"rc {rc}")
        c.check("tls.verify is off" in err, "verify: false is warned about")
    finally:
        if agent is not None:
            agent.stop()
        rx.stop()
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
