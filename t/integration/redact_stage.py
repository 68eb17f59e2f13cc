#!/usr/bin/env python3
"""The redact stage through the real binary.

--once over a file of mixed lines: every secret and personal datum is gone from the output
bytes, the near-misses (numbers failing Luhn, version strings, octets above 255) are there
byte for byte, and a member named in fields is masked in place. The daemon over the same
file: logferry_redactions_total{input,pattern} is exported at zero for each pattern before
any line, then equals the matches counted here per pattern; a reload to other patterns
masks by the new ones. --preview shows the masked event. With hash: sha256 the same value
gives the same token on two lines, and the key (from ${REDACT_KEY}) never shows in the
agent's stderr or output."""
import json
import os
import re
import shutil
import subprocess

import reloadtest as rt
import tailtest as tt

LOGFERRY = tt.LOGFERRY
KEY = "rk-9f2c41d7e8a3b6c0-do-not-log"

# (line, {pattern: matches}, secrets that must go, near-misses that must stay)
LINES = [
    ("2026-12-03T10:00:00Z INFO payment card=4111 1111 1111 1111 by jane.doe@example.com",
     {"credit_card": 1, "email": 1}, ["4111 1111 1111 1111", "jane.doe@example.com"], []),
    ("2026-12-03T10:00:01Z WARN declined 4111111111111112 order 41111111111111110000",
     {}, [], ["4111111111111112", "41111111111111110000"]),
    ("2026-12-03T10:00:02Z INFO client 203.0.113.9 agent v1.2.3 build 1.2.3.4.5 bad 999.1.1.1",
     {"ipv4": 1}, ["203.0.113.9"], ["v1.2.3", "1.2.3.4.5", "999.1.1.1"]),
    ("2026-12-03T10:00:03Z INFO upstream [2001:db8::7]:443 via fe80::1ff:fe23:4567:890a",
     {"ipv6": 2}, ["2001:db8::7", "fe80::1ff:fe23:4567:890a"], []),
    ("2026-12-03T10:00:04Z DEBUG login user=bob password=hunter2 api_key: k-77Zq",
     {"secret_kv": 2}, ["hunter2", "k-77Zq"], ["user=bob"]),
    ('2026-12-03T10:00:05Z DEBUG body {"user":"bob","password":"pa\\"ss"}',
     {"secret_kv": 1}, ['pa\\"ss'], ['{"user":"bob","password":"[REDACTED]"}']),
    ("2026-12-03T10:00:06Z INFO aws AKIAIOSFODNN7EXAMPLE Authorization: Bearer 9f8e7d6c5b4a3f2e",
     {"aws_access_key": 1, "bearer_token": 1}, ["AKIAIOSFODNN7EXAMPLE", "9f8e7d6c5b4a3f2e"], []),
    ("2026-12-03T10:00:07Z INFO sepa DE89 3704 0044 0532 0130 00 bad DE89370400440532013001",
     {"iban": 1}, ["DE89 3704 0044 0532 0130 00"], ["DE89370400440532013001"]),
    ("2026-12-03T10:00:08Z INFO token eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0In0."
     "dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk4 and eyJnope.words.here",
     {"jwt": 1}, ["eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"], ["eyJnope.words.here"]),
    ("2026-12-03T10:00:09Z INFO nothing to hide here, GET /index.html 200 12ms", {}, [],
     ["GET /index.html 200 12ms"]),
]
PATTERNS = ["credit_card", "iban", "email", "ipv4", "ipv6", "jwt", "secret_kv",
            "aws_access_key", "bearer_token", "private_key"]


def library_path(soname):
    cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    m = re.search(r"^\s*%s \(.*\) => (\S+)$" % re.escape(soname), cache, re.M)
    return m.group(1) if m else None


def expected_counts(lines):
    want = {p: 0 for p in PATTERNS}
    for _, counts, _, _ in lines:
        for p, n in counts.items():
            want[p] += n
    return want


def once_config(wd, log, parser):
    path = os.path.join(wd.root, "once.yml")
    with open(path, "w") as f:
        f.write(f"""data_dir: {tt.yaml_str(wd.data)}
inputs:
  - id: app
    paths: [{tt.yaml_str(log)}]
    parsers:
      - ndjson: {{target: doc}}
      - {parser}
outputs:
  - name: out
    type: console
""")
    return path


def main():
    c = tt.Checks()
    wd = tt.Workdir("redact")
    log = wd.path("app.log")
    with open(log, "w") as f:
        for line, _, _, _ in LINES:
            f.write(line + "\n")
        # a JSON line whose member is scanned by fields
        f.write(json.dumps({"note": "mail jane@example.com card 5555555555554444",
                            "id": "10.0.0.1"}) + "\n")
    env = dict(os.environ, REDACT_KEY=KEY)

    # --once: bytes out, secrets gone, near-misses kept
    conf = once_config(wd, log, "redact: {fields: [message, doc.note]}")
    p = subprocess.run([LOGFERRY, "-c", conf, "--once"], capture_output=True, text=True,
                       env=env)
    c.check(p.returncode == 0, "--once exits 0", p.stderr[-400:])
    out = p.stdout
    events = [json.loads(x) for x in out.splitlines() if x]
    c.check(len(events) == len(LINES) + 1, "every line comes out once", f"{len(events)} events")
    decoded = "\n".join(e.get("message", "") for e in events)
    for line, _, gone, kept in LINES:
        for s in gone:
            raw = json.dumps(s)[1:-1]  # as the output's bytes write it
            c.check(raw not in out and s not in decoded,
                    f"secret absent from the output: {s[:24]}")
        for s in kept:
            c.check(s in decoded, f"near-miss kept: {s[:24]}")
    last = events[-1] if events else {}
    c.check(last.get("doc", {}).get("note") == "mail [REDACTED] card [REDACTED]",
            "a member named in fields is masked in place", json.dumps(last.get("doc")))
    c.check(last.get("doc", {}).get("id") == "10.0.0.1", "a member not named stays")
    c.check(events and events[0]["message"].endswith("card=[REDACTED] by [REDACTED]"),
            "the message is masked", events[0]["message"] if events else "")

    # --preview shows the masked event, hash tokens alike for one value, the key unseen
    conf = once_config(wd, log, "redact: {hash: sha256, hash_key: \"${REDACT_KEY}\"}")
    p = subprocess.run([LOGFERRY, "-c", conf, "--preview", "app", log], capture_output=True,
                       text=True, env=env)
    c.check(p.returncode == 0, "--preview exits 0", p.stderr[-400:])
    ev = [json.loads(x) for x in p.stdout.splitlines() if x]
    tok = [e["message"].split("by ")[-1] for e in ev[:1]]
    c.check(bool(tok) and tok[0].startswith("[email:") and len(tok[0]) == len("[email:]") + 16,
            "--preview shows an e-mail as its keyed token", tok[0] if tok else "")
    p2 = subprocess.run([LOGFERRY, "-c", conf, "--preview", "app", log], capture_output=True,
                        text=True, env=env)
    ev2 = [json.loads(x) for x in p2.stdout.splitlines() if x]
    c.check([e["message"] for e in ev2] == [e["message"] for e in ev] and len(ev) > 1,
            "the same values give the same tokens on another run")
    c.check(KEY not in p.stdout + p.stderr + p2.stderr, "the hash key shows nowhere")
    p3 = subprocess.run([LOGFERRY, "-c", conf, "--preview", "app", log], capture_output=True,
                        text=True, env=dict(env, REDACT_KEY="another-key"))
    ev3 = [json.loads(x) for x in p3.stdout.splitlines() if x]
    c.check(ev3[0]["message"] != ev[0]["message"] and "jane.doe@example.com" not in p3.stdout,
            "another key gives other tokens")

    # config mistakes: exit 2, FILE:LINE:COL and why, every one reported; the key unseen
    conf = once_config(wd, log, "redact: {patterns: [credit_cards]}\n"
                       "      - redact: {hash: sha256, replace: x, hash_key: \"${REDACT_KEY}\"}\n"
                       "      - redact: {hash: sha256}")
    p = subprocess.run([LOGFERRY, "-c", conf, "--once"], capture_output=True, text=True,
                       env=env)
    c.check(p.returncode == 2, "a bad redact setting exits 2", f"rc={p.returncode}")
    c.check(f"{conf}:7:9: inputs[0].parsers[1]: redact: unknown pattern \"credit_cards\"" in p.stderr
            and f"{conf}:8:9: inputs[0].parsers[2]: redact: give replace or hash, not both"
            in p.stderr and f"{conf}:9:9: inputs[0].parsers[3]: redact: hash: sha256 needs "
            "hash_key" in p.stderr, "each mistake is named at its place", p.stderr[-600:])
    c.check(KEY not in p.stderr + p.stdout, "the hash key is not in the errors")

    # hash without libssl (bound over by /dev/null in a mount namespace of its own): a config
    # error naming the library, exit 2, never a silent pass-through
    lib = library_path("libssl.so.3")
    if os.geteuid() == 0 and shutil.which("unshare") and lib:
        conf = once_config(wd, log, "redact: {hash: sha256, hash_key: \"${REDACT_KEY}\"}")
        p = subprocess.run(["unshare", "-m", "sh", "-c",
                            'mount --bind /dev/null "$0" && exec "$@"', lib, LOGFERRY, "-c",
                            conf, "--preview", "app", log], capture_output=True, text=True,
                           env=env)
        c.check(p.returncode == 2 and "redact: hash: sha256: cannot load libssl" in p.stderr
                and p.stdout == "" and KEY not in p.stderr,
                "hash without libssl is a config error naming it", p.stderr[-300:])
    else:
        print(f"not run (needs root, unshare and libssl.so.3): hash without libssl ({lib})")

    # when: only the events the condition matches are masked
    shutil.rmtree(wd.data)  # the file from its start again, not from the saved offset
    conf = once_config(wd, log, "redact: {when: 'message =~ \"DEBUG\"'}")
    p = subprocess.run([LOGFERRY, "-c", conf, "--once"], capture_output=True, text=True)
    msgs = [json.loads(x).get("message", "") for x in p.stdout.splitlines() if x]
    c.check(p.returncode == 0 and any("password=[REDACTED]" in m for m in msgs)
            and any("by jane.doe@example.com" in m for m in msgs),
            "with when: a DEBUG line is masked and an INFO line is not")

    # the daemon: metrics at zero first, then the counts per pattern
    empty = wd.path("later.log")
    open(empty, "w").close()
    text = rt.config_text(wd, [("app", [empty], {"parsers": "[{redact: {}}]"})],
                          [("out", rt.file_output(wd.out))])
    rig = rt.Rig(wd, text)
    body = rig.metrics()
    zeros = [rt.sample(body, "logferry_redactions_total", f'{{input="app",pattern="{p}"}}')
             for p in PATTERNS]
    c.check(zeros == [0] * len(PATTERNS), "every pattern is exported at zero from the start",
            str(zeros))
    with open(empty, "a") as f:
        for line, _, _, _ in LINES:
            f.write(line + "\n")
    tt.wait_events(wd.out, len(LINES), 30)
    want = expected_counts(LINES)
    tt.wait_metric(rig.port, "logferry_redactions_total", '{input="app",pattern="credit_card"}',
                   lambda v: v >= 1)
    body = rig.metrics()
    got = {p: rt.sample(body, "logferry_redactions_total", f'{{input="app",pattern="{p}"}}')
           for p in PATTERNS}
    c.check(got == want, "logferry_redactions_total per pattern equals the matches", str(got))

    # reload to other patterns: only those mask, only those are exported
    rig.write(rt.config_text(wd, [("app", [empty], {"parsers": "[{redact: {patterns: [email]}}]"})],
                             [("out", rt.file_output(wd.out))]))
    (ok, bad), _ = rig.reload()
    c.check(ok == 1 and bad == 0, "the reload applies", f"ok={ok} error={bad}")
    with open(empty, "a") as f:
        f.write("after reload jane@example.com card 4111111111111111\n")
    tt.wait_events(wd.out, len(LINES) + 1, 30)
    msgs = [e["message"] for e in tt.read_events(wd.out)]
    c.check("after reload [REDACTED] card 4111111111111111" in msgs,
            "after the reload only the new patterns mask", msgs[-1] if msgs else "")
    body = rig.metrics()
    c.check(rt.sample(body, "logferry_redactions_total", '{input="app",pattern="email"}') == 1
            and rt.sample(body, "logferry_redactions_total",
                          '{input="app",pattern="credit_card"}') is None,
            "the reloaded input exports its own patterns")
    return rt.finish(c, rig, wd)


if __name__ == "__main__":
    main()
