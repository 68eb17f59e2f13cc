#!/usr/bin/env python3
"""The s3 output with temporary credentials that expire under it: no key in the config or
the environment, the instance metadata service of aws_standin.py (IMDSv2) gives credentials
that live 8 s, and the stand-in S3 accepts exactly the keys that service issues (it checks
every signature with botocore), each refused as expired once used for more than 8 s. 20 s of traffic with objects put every second: every line
stored exactly once, puts signed with at least three generations of credentials, none
refused, and neither a secret key nor a session token in the log."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aws_standin  # noqa: E402
import httptest as ht  # noqa: E402
import s3test as s3  # noqa: E402
import tailtest as tt  # noqa: E402


def main():
    c = tt.Checks()
    wd = tt.Workdir("s3-creds")
    store = s3.Store(os.path.join(wd.root, "store"), accept_issued=8)
    imds = aws_standin.Standin(os.path.join(wd.root, "aws"), "--lifetime", "8")
    agent = None
    try:
        lines = [f"bucket: {s3.BUCKET}", f"region: {s3.REGION}", f"endpoint: {store.url()}",
                 "object_interval: 1s", "backoff: {initial: 200ms, max: 1s}",
                 f"imds_endpoint: \"{imds.url('')}\""]
        cfg = ht.write_config(wd, lines, out_type="s3",
                              batch="flush_interval: 100ms, max_events: 200")
        for k in [k for k in os.environ if k.startswith("AWS_")]:
            del os.environ[k]  # the agent's environment gives no credentials
        agent = tt.Agent(cfg, wd, tag="creds")
        want = []
        path = wd.path("a.log")
        t0 = time.monotonic()
        i = 0
        while time.monotonic() - t0 < 20:
            batch = [f"creds {i + k:06d}" for k in range(20)]
            i += 20
            with open(path, "a") as f:
                f.write("".join(l + "\n" for l in batch))
            want += batch
            time.sleep(0.1)
        ok = tt.wait_for(lambda: sorted(m for _, m in s3.messages(store)) == want, 30)
        got = [m for _, m in s3.messages(store)]
        c.check(ok, "every line stored exactly once across expiring credentials",
                f"{len(got)} of {len(want)}, {len(got) - len(set(got))} twice")
        puts = [r for r in store.requests() if r["op"] == "PutObject"]
        akids = sorted({r["akid"] for r in puts if r["status"] == 200})
        refused = [r for r in puts if r["status"] != 200]
        c.check(len(akids) >= 3 and all(a.startswith("IMDS-") for a in akids),
                "puts signed with at least 3 generations of the metadata service's credentials",
                f"{akids}")
        c.check(not refused, "no put refused for an expired key",
                str([(r["status"], r.get("code")) for r in refused[:3]]))
        c.check(all(r["token_sent"] for r in puts), "every put carries the session token", "")
    finally:
        rc = agent.stop() if agent is not None else None
        imds.stop()
        store.stop()
    err = agent.stderr() if agent is not None else ""
    c.check(rc == 0, "stops with 0", f"rc {rc}: {err[-300:]}")
    c.check(not any(s in err for s in ("imds-secret-", "imds-token-")),
            "no secret key or session token in the log", "")
    wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
