#!/usr/bin/env python3
"""Conditions, `when:` on a parser and the drop stage through the real binary
(docs/processing.md "Conditions", "`when` on any stage", "Dropping events"):
- --once over an ndjson log: `drop: {when: ...}` on parsed fields (a level, a nested status
  compared as a number, a regex on the message, `in`, `not exists`) drops exactly the
  lines it matches; the summary counts them as filtered, all acknowledged; the registry
  reaches the file's end and a second run reads nothing again;
- `when` on a parser: a kv stage applied only to the lines of one kind (the others keep
  their message and gain nothing), and a `when` beside include_lines;
- --preview prints the kept events on stdout and each dropped one on stderr;
- a bad condition exits 2 with FILE:LINE:COL pointing at the token at fault (plain, single-
  and double-quoted scalars), and says what was expected; drop without when, when on
  multiline, and when given twice are refused; a condition from ${VAR} never shows its text."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402

LOGFERRY = tt.LOGFERRY


def config(wd, data, iid, glob, parsers):
    lines = [f"data_dir: {json.dumps(data)}", "shutdown_timeout: 1s", "inputs:",
             f"  - id: {iid}", f"    paths: [{json.dumps(glob)}]", "    parsers:"]
    lines += ["      " + p for p in parsers]
    lines += ["outputs:", f"  - {{name: local, type: file, path: {json.dumps(wd.out)}, "
              "compression: none}", 'metrics: {listen: ""}']
    path = os.path.join(wd.root, f"{iid}.yml")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def once(conf):
    p = subprocess.run([LOGFERRY, "-c", conf, "--once"], capture_output=True, text=True,
                       timeout=300)
    return p.returncode, p.stderr


def clear(wd):
    for name in os.listdir(wd.out):
        os.unlink(os.path.join(wd.out, name))


def app_line(i):
    level = ["DEBUG", "INFO", "WARN", "ERROR"][i % 4]
    obj = {"i": i, "level": level, "http": {"status": 200 if i % 3 else 503},
           "message": f"request {i} " + ("timed out" if i % 5 == 0 else "done")}
    if i % 7 == 0:
        obj["trace"] = {"id": f"t{i}"}
    return json.dumps(obj) + "\n"


# the conditions, and which lines of app_line(0..399) each drops
DROPS = [
    ('level == "DEBUG"', lambda i: i % 4 == 0),
    ("level in ['DEBUG', 'INFO'] and not exists(trace.id)",
     lambda i: i % 4 in (0, 1) and i % 7 != 0),
    ("http.status >= 500 or message =~ 'timed out$'", lambda i: i % 3 == 0 or i % 5 == 0),
    ('not (level == "ERROR" or http.status == 503)', lambda i: i % 4 != 3 and i % 3 != 0),
]


def drop_case(c, wd):
    path = wd.path("app.log")
    with open(path, "w") as f:
        for i in range(400):
            f.write(app_line(i))
    for k, (cond, drops) in enumerate(DROPS):
        data = os.path.join(wd.root, f"data-d{k}")
        conf = config(wd, data, "app", path,
                      ["- ndjson: {}", f"- drop: {{when: {json.dumps(cond)}}}"])
        rc, err = once(conf)
        c.check(rc == 0, f"drop when {cond}: --once exits 0", f"rc={rc}\n{err[-1500:]}")
        got = [e["i"] for e in tt.read_events(wd.out)]
        want = [i for i in range(400) if not drops(i)]
        c.check(got == want, f"drop when {cond}: exactly the {len(want)} other lines are sent, "
                "in order", f"got {len(got)}: {got[:8]} ... want {want[:8]}")
        m = re.search(r"(\d+) events read, (\d+) filtered out.*all acknowledged", err)
        c.check(m is not None and m.groups()[:2] == (str(len(want)), str(400 - len(want))),
                f"drop when {cond}: the summary counts {400 - len(want)} filtered out, all "
                "acknowledged", m.group(0) if m else err[-800:])
        c.check(tt.registry_offset(data, path) == os.path.getsize(path),
                f"drop when {cond}: the registry reaches the file's end")
        clear(wd)
        if k == 0:
            rc, err = once(conf)
            m = re.search(r"(\d+) events read", err)
            c.check(rc == 0 and m is not None and m.group(1) == "0" and not tt.read_events(wd.out),
                    "drop: a second run reads nothing again", m.group(0) if m else err[-500:])
            clear(wd)


def when_case(c, wd):
    path = wd.path("mixed.log")
    lines = ["audit user=ann action=login ok=true", "plain text with a=b inside",
             "audit user=bob action=logout", "GET /health 200", "audit user=cy action=x=y"]
    with open(path, "w") as f:
        f.write("".join(x + "\n" for x in lines))
    conf = config(wd, os.path.join(wd.root, "data-w"), "mixed", path,
                  ["- kv: {include_keys: [user, action], when: \"message =~ '^audit '\"}",
                   "- exclude_lines: ['^GET ']",
                   "  when: 'not exists(user)'",
                   "- drop:",
                   "    when: user == 'cy'"])
    rc, err = once(conf)
    c.check(rc == 0, "when on kv: --once exits 0", f"rc={rc}\n{err[-1500:]}")
    ev = tt.read_events(wd.out)
    got = [(e["message"], e.get("user"), e.get("action")) for e in ev]
    want = [(lines[0], "ann", "login"), (lines[1], None, None), (lines[2], "bob", "logout")]
    c.check(got == want, "when on kv: only audit lines are split; the others pass unchanged; "
            "exclude_lines with when and drop apply in order", f"{got}")
    c.check(all("a" not in e for e in ev), "when on kv: a=b in a plain line was not taken")
    clear(wd)


def preview_case(c, wd):
    path = wd.path("pv.log")
    with open(path, "w") as f:
        for i in range(8):
            f.write(app_line(i))
    conf = config(wd, os.path.join(wd.root, "data-p"), "pv", path,
                  ["- ndjson: {}", "- drop: {when: 'level == \"DEBUG\"'}"])
    p = subprocess.run([LOGFERRY, "-c", conf, "--preview", "pv", path], capture_output=True,
                       text=True, timeout=60)
    got = [json.loads(x)["i"] for x in p.stdout.splitlines() if x]
    c.check(p.returncode == 0 and got == [1, 2, 3, 5, 6, 7],
            "--preview prints the kept events on stdout", f"rc={p.returncode} {got}")
    off4 = len(app_line(0)) + len(app_line(1)) + len(app_line(2)) + len(app_line(3))
    shown = re.findall(r"--preview: dropped the event at offset (\d+): (.*)", p.stderr)
    c.check(shown == [("0", "request 0 timed out"), (str(off4), "request 4 done")],
            "--preview shows each dropped event on stderr with its offset and message",
            p.stderr[-600:])


ERRORS = [
    # (parser lines, regex the message must match); the parsers start on line 7
    (["- drop: {when: level == }"], r"\.yml:7:30: inputs\[0\]\.parsers\[0\]\.drop\.when: "
     r"expected a value: a \"string\", a number, true, false or null, got the end"),
    (["- drop: {when: 'level = \"x\"'}"], r"\.yml:7:29: .*drop\.when: expected ==, !=, <, <=, "
     r">, >=, =~, !~ or in after the field, got \"=\""),
    (["- drop: {when: \"exists(a) and (b == 1\"}"], r"\.yml:7:44: .*expected \"\)\", \"and\" "
     r"or \"or\", got the end"),
    (["- drop: {when: 'message =~ ''(x'''}"], r"\.yml:7:34: .*bad regex at its character 3: "
     r"missing closing parenthesis"),
    (["- drop:", "    when: a == 1 b"], r"\.yml:8:24: .*drop\.when: expected \"and\", \"or\" or "
     r"the end, got \"b\""),
    (["- include_lines: [x]", "  when: exists(a) or"], r"\.yml:8:27: .*parsers\[0\]\.when: "
     r"expected a test"),
    (["- drop: {}"], r"\.yml:7:9: .*missing required key \"when\""),
    (["- multiline: {pattern: '^ ', when: 'exists(a)'}"], r"\.yml:7:42: .*multiline takes no "
     r"\"when\""),
    (["- kv: {when: 'exists(a)'}", "  when: 'exists(b)'"], r"\.yml:8:15: .*\"when\" is given twice"),
]


def errors_case(c, wd):
    for parsers, want in ERRORS:
        conf = config(wd, os.path.join(wd.root, "data-e"), "e", wd.path("none.log"), parsers)
        rc, err = once(conf)
        c.check(rc == 2 and re.search(want, err) is not None,
                f"config error {' / '.join(parsers)}: exit 2 with FILE:LINE:COL into the "
                "expression and what was expected", f"rc={rc} {err.strip()[-400:]}")
        t = subprocess.run([LOGFERRY, "-c", conf, "-t"], capture_output=True, text=True,
                           timeout=60)
        c.check(t.returncode == 2 and re.search(want, t.stdout + t.stderr) is not None,
                f"--test-config: the same message for {' / '.join(parsers)}",
                f"rc={t.returncode} {(t.stdout + t.stderr).strip()[-300:]}")


def secret_case(c, wd):
    """A condition taking a ${VAR}: its error names what was expected, never the value."""
    conf = config(wd, os.path.join(wd.root, "data-s"), "s", wd.path("none.log"),
                  ["- drop: {when: 'level == ${COND_LEVEL}'}"])
    env = dict(os.environ, COND_LEVEL="hunter2-s3cr3t trailing")
    p = subprocess.run([LOGFERRY, "-c", conf, "--once"], capture_output=True, text=True,
                       timeout=60, env=env)
    c.check(p.returncode == 2 and "drop.when: expected a value" in p.stderr,
            "a bad condition from ${VAR}: exit 2 saying what was expected", p.stderr[-400:])
    c.check("hunter2" not in p.stderr and "s3cr3t" not in p.stderr,
            "a bad condition from ${VAR}: no part of the value in stderr", p.stderr[-400:])


def main():
    c = tt.Checks()
    wd = tt.Workdir("cond")
    os.makedirs(wd.out)
    try:
        drop_case(c, wd)
        when_case(c, wd)
        preview_case(c, wd)
        errors_case(c, wd)
        secret_case(c, wd)
    finally:
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
