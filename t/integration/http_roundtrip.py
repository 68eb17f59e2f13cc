"""The http output against the test receiver, `logferry --once`: for each compression
(zstd, gzip, none) every line arrives once, byte-identical, with the matching
Content-Encoding; method, content_type and headers arrive as configured; basic auth and
bearer tokens arrive and the secrets never show in the agent's stderr; connections are kept
alive (no more than max_in_flight of them for many requests)."""
import base64
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import tailtest as tt  # noqa: E402

PASSWORD = "s3cret-PASSWORD-\u00e9"
TOKEN = "tok-4f9a2c-SECRET"


def make_lines(n, tag):
    odd = ["quote \" back\\slash", "tab\there", "caf\u00e9 \u2603 \U0001F600", "", "  spaced  ",
           "{\"json\": [1, 2]}", "\u2028sep"]
    return [f"{tag} {i} " + odd[i % len(odd)] for i in range(n)]


def roundtrip(c, compression, n=3000):
    wd = tt.Workdir(f"http-{compression}")
    rx = ht.Receiver(os.path.join(wd.root, "rx"))
    try:
        lines = make_lines(n, compression)
        ht.write_lines(wd.path("a.log"), lines)
        cfg = ht.write_config(wd, [f"url: {rx.url('/ingest?k=v')}", f"compression: {compression}",
                                   "headers: {X-Test: hello}", "max_in_flight: 2"])
        rc, err = ht.run_once(cfg)
        c.check(rc == 0, f"{compression}: --once exits 0", f"rc {rc}: {err[-300:]}")
        # Two requests in flight may land in either order: order by source offset.
        evs = sorted(rx.accepted(), key=lambda e: e["log"]["offset"])
        got = [e["message"] for e in evs]
        c.check(got == lines, f"{compression}: every line arrives once, byte-identical",
                f"{len(got)} of {len(lines)}")
        offs, off = [], 0
        for line in lines:
            offs.append(off)
            off += len(line.encode()) + 1
        c.check([e["log"]["offset"] for e in evs] == offs,
                f"{compression}: each event carries its source offset")
        reqs = rx.requests()
        want_enc = "" if compression == "none" else compression
        c.check(reqs and all(r["encoding"] == want_enc for r in reqs),
                f"{compression}: Content-Encoding is {want_enc or 'absent'}",
                str({r['encoding'] for r in reqs}))
        c.check(all(r["method"] == "POST" and r["path"] == "/ingest?k=v" and
                    r["content_type"] == "application/x-ndjson" and r["x_test"] == "hello"
                    for r in reqs), f"{compression}: POST to the path with the configured headers")
        ports = {r["client_port"] for r in reqs}
        c.check(len(reqs) >= 4 and len(ports) <= 2,
                f"{compression}: connections are reused",
                f"{len(reqs)} requests over {len(ports)} connections")
    finally:
        rx.stop()
        wd.cleanup()


def auth(c):
    wd = tt.Workdir("http-auth")
    rx = ht.Receiver(os.path.join(wd.root, "rx"))
    try:
        ht.write_lines(wd.path("a.log"), make_lines(50, "auth"))
        env = dict(os.environ, LF_TEST_PASSWORD=PASSWORD, LF_TEST_TOKEN=TOKEN)
        cfg = ht.write_config(wd, [f"url: {rx.url()}", "compression: gzip", "method: PUT",
                                   "content_type: application/json",
                                   "auth: {user: agent, password: \"${LF_TEST_PASSWORD}\"}"],
                              extra="logging: {level: debug}")
        rc, err = ht.run_once(cfg, env=env)
        reqs = rx.requests()
        want = "Basic " + base64.b64encode(f"agent:{PASSWORD}".encode()).decode()
        c.check(rc == 0 and reqs and all(r["authorization"] == want for r in reqs),
                "basic auth arrives on every request", f"rc {rc}, {len(reqs)} requests")
        c.check(all(r["method"] == "PUT" and r["content_type"] == "application/json"
                    for r in reqs), "method and content_type are as configured")
        c.check(PASSWORD not in err and "s3cret" not in err,
                "the password never shows in stderr (debug level)")
        # A rejected run (401) logs the failure: still no secret.
        rx.control(status=401)
        ht.write_lines(wd.path("a.log"), make_lines(5, "auth2"))
        rc, err = ht.run_once(cfg, env=env)
        c.check("HTTP 401" in err and "s3cret" not in err,
                "a refused request is logged with its status, without the password",
                err.strip().splitlines()[-1][:200] if err.strip() else "no stderr")
        rx.control(status=200)

        open(wd.path("a.log"), "w").close()
        ht.write_lines(wd.path("b.log"), make_lines(20, "bearer"))
        cfg = ht.write_config(wd, [f"url: {rx.url('/b')}", "compression: none",
                                   "bearer_token: \"${LF_TEST_TOKEN}\""],
                              extra="logging: {level: debug}")
        rc, err = ht.run_once(cfg, env=env)
        breqs = [r for r in rx.requests() if r["path"] == "/b"]
        c.check(rc == 0 and breqs and all(r["authorization"] == f"Bearer {TOKEN}" for r in breqs),
                "the bearer token arrives on every request", f"rc {rc}, {len(breqs)} requests")
        c.check(TOKEN not in err and "SECRET" not in err, "the token never shows in stderr")
    finally:
        rx.stop()
        wd.cleanup()


def settings(c):
    """One request in flight keeps the order; a proxy is used; bad settings stop the start."""
    wd = tt.Workdir("http-settings")
    rx = ht.Receiver(os.path.join(wd.root, "rx"))
    try:
        lines = make_lines(1500, "ordered")
        ht.write_lines(wd.path("a.log"), lines)
        cfg = ht.write_config(wd, [f"url: {rx.url('/in-order')}", "max_in_flight: 1"])
        rc, err = ht.run_once(cfg)
        got = [e["message"] for e in rx.accepted()]
        c.check(rc == 0 and got == lines, "with max_in_flight 1 the lines arrive in order",
                f"rc {rc}, {len(got)} lines")

        # The receiver plays the proxy: it gets the absolute URL of a host that does not exist.
        open(wd.path("a.log"), "w").close()
        ht.write_lines(wd.path("b.log"), ["via proxy"])
        cfg = ht.write_config(wd, ["url: http://collector.invalid:9/ingest",
                                   f"proxy: http://127.0.0.1:{rx.port}"])
        rc, err = ht.run_once(cfg)
        paths = [r["path"] for r in rx.requests()]
        c.check(rc == 0 and paths[-1] == "http://collector.invalid:9/ingest",
                "requests go through the configured proxy", f"rc {rc}, {paths[-1:]}")

        for keys, want in (
                (["headers: {X-Bad: \"a\\nb\"}"], "X-Bad: the value must be one line of text"),
                (["bearer_token: t0k3n-XYZ", "auth: {user: u, password: p4ss-XYZ}"],
                 "auth and bearer_token exclude each other"),
                (["tls: {ca_file: /nonexistent/ca.pem}"],
                 "tls.ca_file: cannot read /nonexistent/ca.pem: No such file or directory")):
            cfg = ht.write_config(wd, [f"url: {rx.url()}"] + keys)
            rc, err = ht.run_once(cfg)
            c.check(rc != 0 and want in err and "XYZ" not in err,
                    f"a bad setting stops the start: {want}", f"rc {rc}: {err.strip()[-160:]}")
    finally:
        rx.stop()
        wd.cleanup()


def main():
    c = tt.Checks()
    for comp in ("zstd", "gzip", "none"):
        roundtrip(c, comp)
    auth(c)
    settings(c)
    c.finish()


if __name__ == "__main__":
    main()
