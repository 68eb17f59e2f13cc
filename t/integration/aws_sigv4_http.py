"""`aws_sigv4` on the http, elasticsearch and otlp outputs, static credentials, against the
stand-in (aws_standin.py), which checks every request's signature with botocore:
- keys in the config (with a session token) and in the AWS_* environment: every line
  arrives once, every request signed, x-amz-content-sha256, x-amz-date, host and the
  content type and encoding signed, the session token sent and signed;
- a wrong secret: 403 SignatureDoesNotMatch, which is the batch refused for good as any
  other 4xx: its events are in the dead letters, the agent exits 0;
- an answer that the credentials expired (ExpiredTokenException) is never dead-lettered;
  a 400 whose body quotes the batch's text holding such a word is dead-lettered;
- --test-config refuses aws_sigv4 beside auth, bearer_token or api_key, naming where;
- the secret and the session token never appear in the agent's stderr."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aws_standin  # noqa: E402
import httptest as ht  # noqa: E402
import tailtest as tt  # noqa: E402

AKID = "AKIDSTATIC1"
SECRET = "static/SECRET+key-4711"
TOKEN = "FwoGZXIvYXdzSESSIONTOKEN-9f3e"
EXPIRED = "AKIDEXPIRED"

OUTPUTS = {
    "http": ("/ingest", []),
    "elasticsearch": ("/logs", ["index: app"]),
    "otlp": ("/v1/logs", ["encoding: json"]),
}


def messages(out_type, raw):
    if out_type == "otlp":
        return [l.decode() for l in raw]
    return [json.loads(l)["message"] for l in raw]


def run(c, out_type, how, secret=SECRET, n=1500, compression=None):
    tag = f"{out_type}/{how}" + (f"/{compression}" if compression else "")
    wd = tt.Workdir(f"aws-sigv4-{out_type}-{how}")
    sd = aws_standin.Standin(os.path.join(wd.root, "aws"), "--region", "eu-west-1",
                             "--service", "es", "--static", f"{AKID}:{SECRET}:{TOKEN}")
    try:
        path, extra = OUTPUTS[out_type]
        lines = [f"{tag} line {i} caf\u00e9" for i in range(n)]
        ht.write_lines(wd.path("a.log"), lines)
        out = [f"url: {sd.url(path)}", "max_in_flight: 2"] + extra
        if compression:
            out.append(f"compression: {compression}")
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        sig = "aws_sigv4: {region: eu-west-1, service: es"
        if how == "config":
            sig += f", access_key_id: {AKID}, secret_access_key: \"${{AWS_TEST_SECRET}}\"" \
                   f", session_token: {TOKEN}"
            env["AWS_TEST_SECRET"] = secret
        else:
            env.update(AWS_ACCESS_KEY_ID=AKID, AWS_SECRET_ACCESS_KEY=secret,
                       AWS_SESSION_TOKEN=TOKEN)
        out.append(sig + "}")
        cfg = ht.write_config(wd, out, out_type=out_type,
                              batch="flush_interval: 100ms, max_events: 200")
        rc, err = ht.run_once(cfg, env=env)
        reqs = sd.requests()
        c.check(secret not in err and TOKEN not in err,
                f"{tag}: the secret and the session token never appear in stderr")
        if secret != SECRET:
            c.check(rc == 0, f"{tag}: a wrong secret: --once exits 0", f"rc {rc}: {err[-300:]}")
            c.check(reqs and all(r["status"] == 403 and r["code"] == "SignatureDoesNotMatch"
                                 for r in reqs),
                    f"{tag}: a wrong secret: every request is refused SignatureDoesNotMatch",
                    str(reqs[:1]))
            dead = ht.dead_letters(wd.data)
            c.check(sorted(d["event"]["message"] for d in dead) == sorted(lines),
                    f"{tag}: a wrong secret: every event is in the dead letters (4xx: refused "
                    "for good)", f"{len(dead)} of {n}")
            return
        c.check(rc == 0, f"{tag}: --once exits 0", f"rc {rc}: {err[-300:]}")
        got = messages(out_type, sd.accepted())
        c.check(sorted(got) == sorted(lines) and len(got) == n,
                f"{tag}: every line arrives once", f"{len(got)} of {n}")
        want = {"host", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token",
                "content-type"}
        if not (out_type == "http" and compression == "none"):
            want.add("content-encoding")
        c.check(reqs and all(r["status"] == 200 and r["akid"] == AKID and r["token_sent"] and
                             set(r["signed"]) == want for r in reqs),
                f"{tag}: every request verified, signing {sorted(want)}",
                str([r for r in reqs if r["status"] != 200 or set(r["signed"]) != want][:1]))
    finally:
        sd.stop()
        wd.cleanup()


def expired_not_dead(c):
    """A 403 saying the credentials expired is retried, not dead-lettered: the agent keeps
    the batch and says why; the batch goes through once the peer takes the key again."""
    wd = tt.Workdir("aws-sigv4-expired")
    sd = aws_standin.Standin(os.path.join(wd.root, "aws"), "--static", f"{EXPIRED}:x",
                             "--expired", EXPIRED)
    try:
        lines = [f"kept {i}" for i in range(50)]
        ht.write_lines(wd.path("a.log"), lines)
        cfg = ht.write_config(wd, [f"url: {sd.url('/ingest')}",
                                   "aws_sigv4: {region: eu-west-1, service: es, "
                                   f"access_key_id: {EXPIRED}, secret_access_key: x}}",
                                   "backoff: {initial: 100ms, max: 500ms}"])
        agent = tt.PipedAgent(cfg, wd)
        try:
            seen = agent.wait_log("AWS refused the credentials or the clock (ExpiredToken): "
                                  "HTTP 403", 30)
            c.check(seen, "an expired token: the agent says the credentials were refused "
                    "and retries", agent.stderr()[-400:])
            c.check(ht.dead_letters(wd.data) == [], "an expired token: nothing is dead-lettered")
            sd.control(unexpire=EXPIRED)
            ok = tt.wait_for(lambda: len(sd.accepted()) >= len(lines), 30)
            got = [json.loads(l)["message"] for l in sd.accepted()]
            c.check(ok and sorted(got) == sorted(lines),
                    "an expired token: the batch arrives once the key is taken again",
                    f"{len(got)} of {len(lines)}")
        finally:
            agent.stop()
    finally:
        sd.stop()
        wd.cleanup()


def quoted_words(c):
    """A 400 whose body quotes the batch's own text naming ExpiredToken is the batch's
    fault, not the credentials': dead-lettered, not retried for ever."""
    wd = tt.Workdir("aws-sigv4-400")
    sd = aws_standin.Standin(os.path.join(wd.root, "aws"), "--static", f"{AKID}:{SECRET}",
                             "--bad-request", "ExpiredToken")
    try:
        bad = "a user typed ExpiredToken into the form"
        ht.write_lines(wd.path("a.log"), [bad])
        cfg = ht.write_config(wd, [f"url: {sd.url('/ingest')}",
                                   "aws_sigv4: {region: eu-west-1, service: es, "
                                   f"access_key_id: {AKID}, secret_access_key: {SECRET}}}",
                                   "backoff: {initial: 100ms, max: 200ms}"])
        rc, err = ht.run_once(cfg, env=aws_standin.clean_env(), timeout=30)
        dead = [d["event"]["message"] for d in ht.dead_letters(wd.data)]
        c.check(rc == 0 and dead == [bad],
                "a 400 quoting the batch's text (naming ExpiredToken) dead-letters the batch, "
                "no credentials refresh", f"rc {rc}, dead {dead}: {err[-300:]}")
    except subprocess.TimeoutExpired:
        c.check(False, "a 400 quoting the batch's text (naming ExpiredToken) dead-letters the "
                "batch, no credentials refresh", "--once did not end: retried for ever")
    finally:
        sd.stop()
        wd.cleanup()


def check_config(c):
    wd = tt.Workdir("aws-sigv4-check")
    try:
        for out_type, other in (("http", "auth: {user: u, password: p}"),
                                ("otlp", "bearer_token: t"),
                                ("elasticsearch", "api_key: k")):
            extra = ["index: app"] if out_type == "elasticsearch" else []
            cfg = ht.write_config(wd, ["url: http://127.0.0.1:9/x", other,
                                       "aws_sigv4: {region: eu-west-1, service: es}"] + extra,
                                  out_type=out_type)
            r = subprocess.run([tt.LOGFERRY, "-c", cfg, "--test-config"], capture_output=True,
                               timeout=30)
            err = r.stdout.decode() + r.stderr.decode()
            key = other.split(":")[0]
            c.check(r.returncode == 2 and "aws_sigv4 signs the requests: drop " + key in err and
                    "logferry.yml:" in err,
                    f"--test-config refuses aws_sigv4 with {key} ({out_type}), FILE:LINE:COL",
                    err.strip()[-300:])
    finally:
        wd.cleanup()


def main():
    c = tt.Checks()
    for out_type in OUTPUTS:
        run(c, out_type, "config")
        run(c, out_type, "environment")
    run(c, "http", "config", compression="none")
    run(c, "http", "config", compression="gzip")
    run(c, "http", "config", secret="not-the-secret", n=300)
    run(c, "elasticsearch", "environment", secret="not-the-secret", n=300)
    expired_not_dead(c)
    quoted_words(c)
    check_config(c)
    c.finish()


if __name__ == "__main__":
    main()
