"""The instance metadata source (IMDSv2) against the stand-in of aws_standin.py, the http
output signing for its receiver, the agent running as a daemon, nothing else giving
credentials (no keys, no AWS_* environment, no web identity):
- the metadata service absent (imds_endpoint at a port nothing listens on): the agent
  starts, says it cannot get credentials from the instance metadata, sends nothing and
  loses nothing; once the stand-in listens there, every line waiting arrives;
- a session token first (PUT /latest/api/token), then the role's name and its credentials
  with it; credentials living 10 s over 24 s of traffic: at least 3 generations used, no
  request refused, every line once;
- the service forgets its session tokens (a 401): the agent takes a new token and goes on;
- the secret keys and tokens never appear in stderr or in /metrics."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aws_standin  # noqa: E402
import tailtest as tt  # noqa: E402


def main():
    c = tt.Checks()
    wd = tt.Workdir("aws-imds")
    port = tt.free_port()
    sd = None
    agent = None
    try:
        class Later:  # the stand-in's URL before it runs
            def url(self, path):
                return f"http://127.0.0.1:{port}{path}"
        cfg = aws_standin.http_config(wd, Later(), [f"imds_endpoint: \"http://127.0.0.1:{port}\""])
        agent = tt.PipedAgent(cfg, wd, env=aws_standin.clean_env())
        early = aws_standin.drive(wd.path("a.log"), "early", 3)
        why = agent.wait_log("cannot get AWS credentials from instance metadata", 10)
        c.check(why is not None and f"127.0.0.1:{port}" in why and "trying again" in why,
                "no metadata service: the agent says it cannot get credentials from the "
                "instance metadata and tries again", (why or agent.stderr()[-300:]).strip())
        c.check(agent.alive(), "no metadata service: the agent keeps running")
        sd = aws_standin.Standin(os.path.join(wd.root, "aws"), "--port", str(port),
                                 "--lifetime", "10")
        ok = tt.wait_for(lambda: len(sd.accepted()) >= len(early), 90, 0.2)
        c.check(ok, "the metadata service comes up: the lines that waited arrive",
                f"{len(sd.accepted())} of {len(early)}")
        got = agent.wait_log("collector: AWS credentials from instance metadata", 5)
        c.check(got is not None and "key id IMDS-1" in got,
                "the first credentials are logged at info with their key id", (got or "").strip())
        later = aws_standin.drive(wd.path("a.log"), "later", 24,
                                  at={10: lambda: sd.control(revoke=1)})
        akids = aws_standin.check_delivery(c, "24 s of traffic, 10 s credentials", sd,
                                           early + later)
        c.check(len(akids) >= 3, "24 s with credentials of 10 s: at least 3 generations used",
                str(sorted(akids)))
        st = sd.stats()
        c.check(st["imds_401"] >= 1 and st["imds_tokens"] >= 2,
                "the metadata service forgot the session token: a 401, then a new token",
                str(st))
        aws_standin.leaks(c, agent, ["imds-secret-", "imds-token-", "imds-session-"])
    finally:
        if agent is not None:
            agent.stop()
        if sd is not None:
            sd.stop()
    wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
