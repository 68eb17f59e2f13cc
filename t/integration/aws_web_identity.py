"""The web identity source (EKS IRSA: AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE) against
the stand-in STS of aws_standin.py, the http output signing for its receiver, the agent
running as a daemon:
- STS down at start: the agent says why it has no credentials, nothing is sent, nothing is
  lost; once STS answers, every line waiting arrives;
- credentials living 10 s and 30 s of traffic: at least 3 generations of credentials are
  used, fetched ahead of expiry, so no request is refused, and every line arrives once;
- the token file rotated (its content replaced): the next fetch sends the new token, and
  every STS request carried the token the file held (none refused);
- the role, the session name and the STS endpoint from the environment, and (with
  `--once`) from the output's keys;
- the secret keys, session tokens and web identity tokens never appear in stderr or in
  /metrics."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aws_standin  # noqa: E402
import tailtest as tt  # noqa: E402

ROLE = "arn:aws:iam::123456789012:role/logferry-irsa"
JWT1 = "eyJhbGciOiJSUzI1NiJ9.FIRST-web-identity-token.c2lnbmF0dXJl"
JWT2 = "eyJhbGciOiJSUzI1NiJ9.SECOND-web-identity-token.c2lnbmF0dXJl"


def write_token(path, value):
    with open(path + ".new", "w") as f:  # as the kubelet does: a new file moved in place
        f.write(value + "\n")
    os.rename(path + ".new", path)


def from_keys(c):
    """role_arn, web_identity_token_file and sts_endpoint in the output's keys, nothing in
    the environment, `--once`: the first batches wait for the first fetch, then every line
    arrives once; the session is named logferry by default."""
    import httptest as ht
    wd = tt.Workdir("aws-web-identity-keys")
    tok = wd.path("token")
    write_token(tok, JWT1)
    sd = aws_standin.Standin(os.path.join(wd.root, "aws"), "--web-token-file", tok)
    try:
        lines = [f"keys {i}" for i in range(300)]
        ht.write_lines(wd.path("a.log"), lines)
        cfg = aws_standin.http_config(wd, sd, [f"role_arn: \"{ROLE}\"",
                                               f"web_identity_token_file: {tok}",
                                               f"sts_endpoint: \"{sd.url('/sts/')}\""])
        rc, err = ht.run_once(cfg, env=aws_standin.clean_env(), timeout=60)
        c.check(rc == 0, "keys: --once exits 0", f"rc {rc}: {err[-300:]}")
        aws_standin.check_delivery(c, "keys", sd, lines, timeout=5)
        sts = sd.sts_requests()
        c.check(sts and all(r["session"] == "logferry" and r["role"] == ROLE for r in sts),
                "keys: STS is asked for the configured role, session name logferry",
                str([(r["role"], r["session"]) for r in sts]))
        c.check(JWT1 not in err and "secret-1" not in err and "token-1" not in err,
                "keys: no token or secret in stderr")
    finally:
        sd.stop()
        wd.cleanup()


def main():
    c = tt.Checks()
    from_keys(c)
    wd = tt.Workdir("aws-web-identity")
    tok = wd.path("token")
    write_token(tok, JWT1)
    sd = aws_standin.Standin(os.path.join(wd.root, "aws"), "--lifetime", "10",
                             "--web-token-file", tok)
    agent = None
    try:
        sd.control(sts=503)
        cfg = aws_standin.http_config(wd, sd)
        env = aws_standin.clean_env(AWS_ROLE_ARN=ROLE, AWS_WEB_IDENTITY_TOKEN_FILE=tok,
                                    AWS_ENDPOINT_URL_STS=sd.url("/sts/"),
                                    AWS_ROLE_SESSION_NAME="node-7")
        agent = tt.PipedAgent(cfg, wd, env=env)
        early = aws_standin.drive(wd.path("a.log"), "early", 3)
        why = agent.wait_log("cannot get AWS credentials from web identity", 10)
        c.check(why is not None and ROLE in why and "STS answered HTTP 503" in why,
                "STS down: the agent says it cannot get credentials from web identity, naming "
                "the role and STS's answer", (why or agent.stderr()[-300:]).strip())
        c.check(sd.accepted() == [] and sd.requests() == [],
                "STS down: nothing is sent unsigned or with no credentials")
        sd.control(sts=200)
        ok = tt.wait_for(lambda: len(sd.accepted()) >= len(early), 30, 0.2)
        c.check(ok, "STS up again: the lines that waited arrive",
                f"{len(sd.accepted())} of {len(early)}")
        got = agent.wait_log("collector: AWS credentials from web identity (role " + ROLE + ")", 5)
        c.check(got is not None and "key id AKID-1" in got and "valid until" in got,
                "the first credentials are logged at info: source, role, key id, expiry",
                (got or "").strip())
        later = aws_standin.drive(wd.path("a.log"), "later", 30,
                                  at={15: lambda: write_token(tok, JWT2)})
        akids = aws_standin.check_delivery(c, "30 s of traffic, 10 s credentials", sd,
                                           early + later)
        c.check(len(akids) >= 3, "30 s with credentials of 10 s: at least 3 generations used",
                str(sorted(akids)))
        sts = sd.sts_requests()
        ok_reqs = [r for r in sts if r["status"] == 200]
        c.check(all(r["token"] in (JWT1, JWT2) and r["role"] == ROLE and
                    r["session"] == "node-7" for r in sts),
                "every STS request carries the file's token, the role and the session name",
                str([(r["token"][:40], r["role"], r["session"]) for r in sts][:3]))
        c.check(ok_reqs and ok_reqs[-1]["token"] == JWT2 and ok_reqs[0]["token"] == JWT1 and
                not any(r["status"] == 401 for r in sts),
                "the token file rotated: the fetches after it send the new token, none refused",
                str([(r["token"][21:40], r["status"]) for r in sts]))
        st = sd.stats()
        c.check(st["sts_issued"] <= 8,
                "credentials are fetched ahead of expiry, not per request",
                f"{st['sts_issued']} issued")
        aws_standin.leaks(c, agent, [JWT1, JWT2] + [f"secret-{i}" for i in range(1, 9)] +
                          [f"token-{i}" for i in range(1, 9)])
    finally:
        if agent is not None:
            agent.stop()
        sd.stop()
    wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
