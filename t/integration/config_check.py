"""One validation for --test-config, the start and a SIGHUP reload. Each bad setting below
once passed --test-config ("config OK") and then stopped the start (exit 1, no position):
a URL that is not http(s), one without a scheme, port 99999, a header value holding a line
break from ${VAR}, auth together with bearer_token, a missing tls.ca_file, a file output
whose directory cannot be made, an option librdkafka refuses (one of them only when the
producer is made), a parser whose pattern does not compile. Each is fed to --test-config
and to the start (both: exit 2 and the same FILE:LINE:COL line), and to a running daemon's
reload (refused with that line; the daemon keeps delivering with the old config). Then one
file with every problem at once: all of them in one pass, keys and parsers together."""
import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402

# (name, YAML lines added to the outputs (or, for "input:", to the input), expected text
# after "logferry.yml:LINE:COL: ").
CASES = [
    ("ftp URL", ["  - {name: web, type: http, url: \"ftp://127.0.0.1/x\"}"],
     r"outputs\[1\]\.url: the scheme must be http:// or https://"),
    ("URL without a scheme", ["  - {name: web, type: elasticsearch, url: \"127.0.0.1:9200\"}"],
     r"outputs\[1\]\.url: (not a valid URL|the scheme must be)"),
    ("port 99999", ["  - {name: web, type: loki, url: \"http://127.0.0.1:99999\"}"],
     r"outputs\[1\]\.url: not a valid URL: .*65535"),
    ("header line break from ${VAR}",
     ["  - {name: web, type: http, url: \"http://127.0.0.1:1/\",",
      "     headers: {X-Token: \"${LF_TEST_HEADER}\"}}"],
     r"outputs\[1\]\.headers\.X-Token: the value must be one line of text"),
    ("auth with bearer_token",
     ["  - {name: web, type: http, url: \"http://127.0.0.1:1/\",",
      "     auth: {user: u, password: p}, bearer_token: t}"],
     r"outputs\[1\]\.bearer_token: auth and bearer_token exclude each other"),
    ("missing tls.ca_file",
     ["  - {name: web, type: http, url: \"https://127.0.0.1:1/\",",
      "     tls: {ca_file: /nonexistent/ca.pem}}"],
     r"outputs\[1\]\.tls\.ca_file: cannot read /nonexistent/ca.pem: No such file or directory"),
    ("unusable file output path", ["  - {name: web, type: file, path: \"FILE/below\"}"],
     r"outputs\[1\]\.path: cannot make or write files in .*a-file/below: Not a directory"),
    ("librdkafka option refused",
     ["  - {name: bus, type: kafka, brokers: [\"127.0.0.1:1\"], topic: t,",
      "     librdkafka: {no.such.option: 1}}"],
     r"outputs\[1\]\.librdkafka: librdkafka: no\.such\.option: No such configuration property"),
    ("librdkafka refuses at producer creation",
     ["  - {name: bus, type: kafka, brokers: [\"127.0.0.1:1\"], topic: t,",
      "     librdkafka: {sasl.mechanism: NOPE, security.protocol: sasl_plaintext}}"],
     r"outputs\[1\]\.librdkafka: librdkafka: Unsupported SASL mechanism: NOPE"),
    ("parser pattern", ["input:    parsers: [{dissect: {tokenizer: \"%{a\"}}]"],
     r"inputs\[0\]\.parsers\[0\]: dissect: %\{ without a closing \}"),
]

ENV = dict(os.environ, LF_TEST_HEADER="abc\r\nX-Evil: 1")


def config_text(wd, base, lines):
    """base with lines added to the outputs list (or, "input:"-prefixed, to the input)."""
    text = base
    outs = [l.replace("FILE", os.path.join(wd.root, "a-file")) for l in lines
            if not l.startswith("input:")]
    ins = [l[len("input:"):] for l in lines if l.startswith("input:")]
    text = text.replace("    compression: none\n",
                        "    compression: none\n" + "".join(l + "\n" for l in outs))
    return text.replace("    close_inactive: 5s\n",
                        "    close_inactive: 5s\n" + "".join(l + "\n" for l in ins))


def run(argv, timeout=30):
    r = subprocess.run(argv, capture_output=True, timeout=timeout, env=ENV,
                       stdin=subprocess.DEVNULL)
    return r.returncode, (r.stdout + r.stderr).decode("utf-8", "replace")


def located(text, pattern):
    """The line of text that is `...logferry.yml:LINE:COL: <pattern>`, or None."""
    m = re.search(r"logferry\.yml:\d+:\d+: " + pattern, text)
    return m.group(0) if m else None


def main():
    c = tt.Checks()
    wd = tt.Workdir("config-check")
    with open(os.path.join(wd.root, "a-file"), "w") as f:
        f.write("a regular file: no directory can be made below it\n")
    cfg = tt.write_config(wd, [{"id": "app", "paths": [wd.path("*.log")]}])
    with open(cfg) as f:
        base = f.read()
    bad = os.path.join(wd.root, "bad", "logferry.yml")
    os.makedirs(os.path.dirname(bad))
    agent = None
    try:
        for name, lines, want in CASES:
            with open(bad, "w") as f:
                f.write(config_text(wd, base, lines))
            rc, text = run([tt.LOGFERRY, "-c", bad, "--test-config"])
            c.check(rc == 2 and located(text, want) and len(text.splitlines()) == 1,
                    f"{name}: --test-config refuses it at its position, in one line (a "
                    "check connects nowhere, logs nothing else)", f"rc {rc}: {text[-300:]}")
            rc, text = run([tt.LOGFERRY, "-c", bad])
            c.check(rc == 2 and located(text, want),
                    f"{name}: the start refuses it the same way", f"rc {rc}: {text[-300:]}")

        # Reloads: a running daemon is handed each bad file; it refuses and delivers on.
        agent = tt.PipedAgent(cfg, wd, "reload", env=ENV)
        with open(wd.path("a.log"), "w") as f:
            f.write("line 0\n")
        tt.wait_events(wd.out, 1, 20)
        for k, (name, lines, want) in enumerate(CASES, start=1):
            with open(cfg, "w") as f:
                f.write(config_text(wd, base, lines))
            start = len(agent.stderr())
            agent.proc.send_signal(signal.SIGHUP)
            refused = tt.wait_for(
                lambda: f"reload {k} of {cfg} failed" in agent.stderr()[start:], 20)
            err = agent.stderr()[start:]
            said = located(err, want)
            c.check(refused and said is not None and agent.alive(),
                    f"{name}: a reload refuses it with its position and keeps running",
                    said or err[-300:])
            with open(wd.path("a.log"), "a") as f:
                f.write(f"line {k}\n")
            got = tt.wait_events(wd.out, k + 1, 20)
            c.check(got == k + 1, f"{name}: the old config still delivers", f"{got} events")
        with open(cfg, "w") as f:
            f.write(base)
        rc = agent.stop()
        c.check(rc == 0, "the daemon stops cleanly", f"rc {rc}")

        # Every problem at once, in one pass: key errors and parser errors together.
        every = [l for _, lines, _ in CASES for l in lines]
        names = iter(f"o{i}" for i in range(100))
        every = [re.sub(r"name: (web|bus)", lambda m: f"name: {next(names)}", l) for l in every]
        text = config_text(wd, base, every).replace("    scan_interval: 1s\n",
                                                    "    scan_interval: often\n")
        with open(bad, "w") as f:
            f.write(text)
        rc, out = run([tt.LOGFERRY, "-c", bad, "--test-config"])
        wants = [re.sub(r"outputs\\\[1\\\]", r"outputs\\[\\d+\\]", w) for _, _, w in CASES]
        wants.append(r"inputs\[0\]\.scan_interval: invalid duration")
        missing = [w for w in wants if located(out, w) is None]
        c.check(rc == 2 and missing == [],
                f"one file with {len(wants)} problems: each reported in one pass",
                f"rc {rc}; missing {missing}; {out[-600:]}")
        lines = [l for l in out.splitlines() if l.strip()]
        c.check(len(lines) == len(wants), "one line per problem", f"{len(lines)} lines")
    finally:
        if agent is not None and agent.alive():
            agent.stop()
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
