#!/usr/bin/env python3
"""Routing by content (docs/processing.md "Routing by content") through the real binary:
- --once over an ndjson log of 3000 lines: errors -> pager with `continue: true`, debug ->
  [] (dropped), a last route without `when` -> archive; each output gets exactly the events
  its routes say, each once; the summary counts the dropped ones as filtered, all
  acknowledged; the registry reaches the file's end and a second run sends nothing. Without
  `continue` the first match wins and the input's `outputs:` take what no route matched;
  without `outputs:` on the input, every output does. Five routes with `continue: true`
  (32 sets of routes, each event copied into the batch of each of six outputs) reach them exactly;
- --preview names the routes and outputs of each event on stderr; stdout stays the events,
  valid NDJSON, without the dropped ones; an event a stage dropped has no route line;
- config mistakes exit 2 at FILE:LINE:COL: an unknown output, a bad `when` (the column at
  the token inside the expression), a route named `default`, a name given twice, an unknown
  key (with its suggestion), `outputs` missing, 64 routes (63 load), routes reaching 17
  outputs (16 load);
- the daemon: logferry_route_events_total{input,route} per route and "default" equals what
  was sent (an input without routes has none), each output's acked count what it got, the
  dropped counted as filtered, and `promtool check metrics` accepts the page; a SIGHUP that changes the routes
  while lines are being written: each event goes where the old or the new routes say, the
  old ones up to one event and the new ones after it, none lost, none twice; a reload
  of the same file keeps the counts, one naming an unknown output is refused and the
  running routes stay;
- the bad day: the pager is an http output whose receiver is down. The archive gets its events;
  the registry moves past the lines before the first error event, never past that one, which
  the pager has not acknowledged; after kill -9 and the receiver back, the pager gets every
  error event and the archive every event. A reload that changes the routes while the pager is
  down applies at once: what was read before goes by the old routes, what is read after by the
  new. With the disk spool the registry reaches the file's end while the pager is down, and
  after kill -9 the spool gives the pager every error event, each once. Six kill -9 at random
  moments while lines are written (the pager down for two runs): none lost."""
import json
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import reloadtest as rt  # noqa: E402
import tailtest as tt  # noqa: E402

LOGFERRY = tt.LOGFERRY
LEVELS = ["DEBUG", "INFO", "WARN", "ERROR"]


def app_line(i):
    """Line i: levels in turn; every 7th line a 503 whatever its level."""
    return json.dumps({"i": i, "level": LEVELS[i % 4],
                       "http": {"status": 503 if i % 7 == 0 else 200},
                       "message": f"request {i}"}) + "\n"


def write_app(path, first, n):
    with open(path, "a") as f:
        f.write("".join(app_line(i) for i in range(first, first + n)))


def level(i):
    return LEVELS[i % 4]


def is_error(i):
    return level(i) == "ERROR" or i % 7 == 0


# The routes of the docs' example, and where each line goes by them.
DOC_ROUTES = ("[{name: errors, when: 'level == \"ERROR\" or http.status >= 500', "
              "outputs: [pager], continue: true}, "
              "{name: debug, when: 'level == \"DEBUG\"', outputs: []}, "
              "{name: everything, outputs: [archive]}]")


def doc_dest(i):
    """(outputs, routes) of line i by DOC_ROUTES."""
    routes = ["errors"] if is_error(i) else []
    if level(i) == "DEBUG":
        routes.append("debug")
    else:
        routes.append("everything")
    outs = (["pager"] if is_error(i) else []) + ([] if level(i) == "DEBUG" else ["archive"])
    return outs, routes


def out_dir(wd, name):
    return os.path.join(wd.root, f"out-{name}")


def file_out(wd, name):
    d = out_dir(wd, name)
    os.makedirs(d, exist_ok=True)
    return f"{{name: {name}, type: file, path: {json.dumps(d)}, compression: none}}"


def once_config(wd, tag, glob, routes, outputs, input_outputs=None):
    lines = [f"data_dir: {json.dumps(os.path.join(wd.root, 'data-' + tag))}",
             "shutdown_timeout: 1s", "inputs:", "  - id: app", f"    paths: [{json.dumps(glob)}]"]
    if input_outputs is not None:
        lines.append(f"    outputs: {input_outputs}")
    lines += ["    parsers: [{ndjson: {}}]", f"    routes: {routes}", "outputs:"]
    lines += [f"  - {file_out(wd, o)}" for o in outputs]
    lines += ["queue: {batch: {max_events: 200}}", 'metrics: {listen: ""}']
    path = os.path.join(wd.root, f"{tag}.yml")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def once(conf, env=None):
    p = subprocess.run([LOGFERRY, "-c", conf, "--once"], capture_output=True, text=True,
                       timeout=120, env=env)
    return p.returncode, p.stderr


def clear(wd, outputs):
    for o in outputs:
        shutil.rmtree(out_dir(wd, o), ignore_errors=True)
        os.makedirs(out_dir(wd, o))


def got(wd, name, key="i"):
    return [e[key] for e in tt.read_events(out_dir(wd, name))]


def check_exact(c, what, name, have, want):
    """Exactly the events of want (a list of i), each once (in any order: the order is
    checked on its own)."""
    dups = len(have) - len(set(have))
    c.check(sorted(have) == sorted(want) and dups == 0,
            f"{what}: {name} gets exactly its {len(want)} events, each once",
            f"got {len(have)} ({dups} twice), missing {sorted(set(want) - set(have))[:6]}, "
            f"extra {sorted(set(have) - set(want))[:6]}")


def check_order(c, what, name, have):
    """SPEC.md, file output: the events of one source file appear in offset order (i grows
    with the offset), also when an output is on two sets of routes."""
    breaks = [(a, b) for a, b in zip(have, have[1:]) if b < a]
    c.check(not breaks, f"{what}: {name} has the file's events in offset order",
            f"{len(breaks)} steps back, first {breaks[:4]}; starts {have[:12]}")


def summary(err):
    m = re.search(r"(\d+) events read, (\d+) filtered out, all acknowledged", err)
    return (int(m.group(1)), int(m.group(2))) if m else None


def once_case(c, wd):
    n = 3000
    path = wd.path("app.log")
    write_app(path, 0, n)
    outs = ["pager", "archive"]

    # 1. the docs' routes: continue, a dropping route and a last route without `when`
    conf = once_config(wd, "doc", path, DOC_ROUTES, outs, input_outputs="[archive]")
    rc, err = once(conf)
    c.check(rc == 0, "--once with the docs' routes exits 0", f"rc={rc} {err[-800:]}")
    for o in outs:
        check_exact(c, "docs' routes", o, got(wd, o),
                    [i for i in range(n) if o in doc_dest(i)[0]])
        check_order(c, "docs' routes", o, got(wd, o))
        m = re.search(rf"output {o}: (\d+) delivered", err)
        c.check(m is not None and int(m.group(1)) == len(got(wd, o)),
                f"docs' routes: the summary's count for {o} is what it got (a dropped event in "
                "its batches not counted)", m.group(0) if m else err[-300:])
    dropped = sum(1 for i in range(n) if not doc_dest(i)[0])
    c.check(summary(err) == (n - dropped, dropped),
            f"docs' routes: the summary counts the {dropped} dropped events as filtered out, "
            "all acknowledged", str(summary(err)) + " " + err[-300:])
    c.check(tt.registry_offset(os.path.join(wd.root, "data-doc"), path) == os.path.getsize(path),
            "docs' routes: the registry reaches the file's end")
    clear(wd, outs)
    rc, err = once(conf)
    c.check(rc == 0 and summary(err) == (0, 0) and not got(wd, "pager") and not got(wd, "archive"),
            "docs' routes: a second run sends nothing", str(summary(err)))
    clear(wd, outs)

    # 2. first match wins; the input's outputs take what no route matched
    routes = ("[{name: err, when: 'level == \"ERROR\"', outputs: pager}, "
              "{name: warn, when: 'level == \"WARN\" or http.status == 503', "
              "outputs: [pager, archive]}, "
              "{name: dbg, when: 'level == \"DEBUG\"', outputs: []}]")

    def first_match(i):
        if level(i) == "ERROR":
            return ["pager"]
        if level(i) == "WARN" or i % 7 == 0:
            return ["pager", "archive"]
        if level(i) == "DEBUG":
            return []
        return ["archive"]  # the default: INFO without a 503
    conf = once_config(wd, "first", path, routes, outs, input_outputs="[archive]")
    rc, err = once(conf)
    c.check(rc == 0, "--once, first match wins: exits 0", f"rc={rc} {err[-800:]}")
    for o in outs:
        check_exact(c, "first match wins, default route", o, got(wd, o),
                    [i for i in range(n) if o in first_match(i)])
        check_order(c, "first match wins, default route", o, got(wd, o))
    dropped = sum(1 for i in range(n) if not first_match(i))
    c.check(summary(err) == (n - dropped, dropped),
            f"first match wins: {dropped} filtered out", str(summary(err)))
    clear(wd, outs)

    # 3. no `outputs:` on the input: the default route is every output
    routes = "[{name: dbg, when: 'level == \"DEBUG\"', outputs: []}]"
    conf = once_config(wd, "all", path, routes, outs)
    rc, err = once(conf)
    want = [i for i in range(n) if level(i) != "DEBUG"]
    c.check(rc == 0, "--once, no outputs on the input: exits 0", f"rc={rc} {err[-800:]}")
    for o in outs:
        check_exact(c, "no outputs on the input: the default goes to all", o, got(wd, o), want)
    clear(wd, outs)

    # 4. five routes with continue: 32 sets of routes over six outputs
    bits = wd.path("bits.log")
    with open(bits, "w") as f:
        for i in range(n):
            f.write(json.dumps({"i": i, **{f"f{k}": bool(i * 7 % 32 >> k & 1) for k in range(5)}})
                    + "\n")
    routes = "[" + ", ".join(f"{{name: r{k}, when: 'f{k} == true', outputs: [o{k}], "
                             "continue: true}" for k in range(5)) + "]"
    outs5 = [f"o{k}" for k in range(5)] + ["rest"]
    conf = once_config(wd, "bits", bits, routes, outs5, input_outputs="[rest]")
    rc, err = once(conf)
    c.check(rc == 0 and summary(err) == (n, 0), "--once, 32 sets of routes: exits 0, none filtered",
            f"rc={rc} {summary(err)} {err[-600:]}")
    for k in range(5):
        check_exact(c, "32 sets of routes", f"o{k}", got(wd, f"o{k}"),
                    [i for i in range(n) if i * 7 % 32 >> k & 1])
        check_order(c, "32 sets of routes", f"o{k}", got(wd, f"o{k}"))
    check_exact(c, "32 sets of routes: the default", "rest", got(wd, "rest"),
                [i for i in range(n) if i * 7 % 32 == 0])
    c.check(tt.registry_offset(os.path.join(wd.root, "data-bits"), bits) == os.path.getsize(bits),
            "32 sets of routes: the registry reaches the file's end")
    clear(wd, outs5)


def preview_case(c, wd):
    path = wd.path("pv.log")
    write_app(path, 0, 12)
    conf = once_config(wd, "pv", path, DOC_ROUTES, ["pager", "archive"],
                       input_outputs="[archive]")
    p = subprocess.run([LOGFERRY, "-c", conf, "--preview", "app", path], capture_output=True,
                       text=True, timeout=60)
    try:
        shown = [json.loads(x)["i"] for x in p.stdout.splitlines()]
    except ValueError as e:
        shown = [f"not JSON: {e}"]
    c.check(p.returncode == 0 and shown == [i for i in range(12) if doc_dest(i)[0]],
            "--preview: stdout is the events, valid NDJSON, without the dropped ones",
            f"rc={p.returncode} {shown}")
    offs = [0]
    for i in range(12):
        offs.append(offs[-1] + len(app_line(i)))
    want = []
    for i in range(12):
        outs, routes = doc_dest(i)
        where = "outputs " + ", ".join(outs) if outs else "no output (dropped)"
        want.append(f"logferry: --preview: the event at offset {offs[i]} takes route "
                    f"{','.join(routes)}: {where}")
    lines = [ln for ln in p.stderr.splitlines() if " takes route " in ln]
    c.check(lines == want, "--preview: one line per event names its routes and outputs; the "
            "dropped ones say no output (dropped)",
            "\n".join(f"got  {a}\nwant {b}" for a, b in zip(lines, want) if a != b)[:800]
            or f"{len(lines)} lines, want {len(want)}")
    dropped = re.findall(r"--preview: dropped the event at offset (\d+): (.*)", p.stderr)
    # an event a stage dropped before the routes takes none: no route line for it
    drop_conf = conf[:-len(".yml")] + "-drop.yml"
    with open(conf) as src, open(drop_conf, "w") as f:
        f.write(src.read().replace("[{ndjson: {}}]", "[{ndjson: {}}, {drop: {when: 'i == 1'}}]"))
    q = subprocess.run([LOGFERRY, "-c", drop_conf, "--preview", "app", path],
                       capture_output=True, text=True, timeout=60)
    taken = re.findall(r"--preview: the event at offset (\d+) takes route", q.stderr)
    c.check(q.returncode == 0 and taken == [str(offs[i]) for i in range(12) if i != 1]
            and f"dropped the event at offset {offs[1]}: request 1" in q.stderr,
            "--preview: an event a stage dropped before the routes gets no route line, only "
            "its dropped line", q.stderr[-500:])
    c.check(dropped == [(str(offs[i]), f"request {i}") for i in range(12) if not doc_dest(i)[0]],
            "--preview: each dropped event is shown on stderr", str(dropped))


ROUTE_ERRORS = [
    # (routes, the text the column points at (its first occurrence), the message)
    ("[{when: 'level == \"x\"', outputs: [pagr]}]", "pagr",
     r"inputs\[0\]\.routes\[0\]\.outputs\[0\]: no output named \"pagr\""),
    ("[{when: 'level = \"x\"', outputs: [pager]}]", "= ",
     r"inputs\[0\]\.routes\[0\]\.when: expected ==, !=, <, <=, >, >=, =~, !~ or in after the "
     r"field, got \"=\""),
    ("[{outputs: [pager]}, {when: 'exists(a) and (b == 1 or', outputs: [pager]}]", "', out",
     r"inputs\[0\]\.routes\[1\]\.when: expected a test .*got the end"),
    ("[{outputs: [pager]}, {when: 'level == \"E\" and http.status >= x', outputs: [pager]}]",
     "x'", r"inputs\[0\]\.routes\[1\]\.when: expected a value: .*, got \"x\""),
    ("[{name: 'a,b', outputs: [pager]}]", "'a,b'",
     r"inputs\[0\]\.routes\[0\]\.name: a route name holds no comma"),
    ("[{name: default, when: 'exists(a)', outputs: [pager]}]", "default",
     r"inputs\[0\]\.routes\[0\]\.name: \"default\" names where events no route matched go"),
    ("[{name: e, when: 'exists(a)', outputs: [pager]}, {name: e, outputs: [archive]}]",
     "{name: e, outputs",
     r"inputs\[0\]\.routes\[1\]: duplicate route name \"e\" \(routes\[0\] has it\)"),
    ("[{when: 'exists(a)', outputs: [pager], contineu: true}]", "contineu",
     r"inputs\[0\]\.routes\[0\]: unknown key \"contineu\" \(did you mean \"continue\"\?\)"),
    ("[{name: e, when: 'exists(a)'}]", "{",
     r"inputs\[0\]\.routes\[0\]: missing required key \"outputs\""),
    ("[{when: 'exists(a)', outputs: [pager, pager]}]", "pager]",
     r"inputs\[0\]\.routes\[0\]\.outputs\[1\]: output \"pager\" is listed twice"),
    ("[{when: 'exists(a)', outputs: [pager], continue: maybe}]", "maybe",
     r"inputs\[0\]\.routes\[0\]\.continue: invalid boolean \"maybe\": expected true or false"),
    ("[" + ", ".join("{outputs: [pager]}" for _ in range(64)) + "]", "[",
     r"inputs\[0\]\.routes: 64 routes: at most 63 per input"),
]


def errors_case(c, wd):
    for k, (routes, token, want) in enumerate(ROUTE_ERRORS):
        conf = once_config(wd, f"e{k}", wd.path("none.log"), routes, ["pager", "archive"])
        # `    routes: ` takes the columns before 13, where the list starts
        col = 13 + routes.index(token)
        rc, err = once(conf)
        m = re.search(r"\.yml:7:(\d+): (.*)", err)
        c.check(rc == 2 and m is not None and re.match(want, m.group(2)) is not None,
                f"config error {routes[:60]}: exit 2 with FILE:LINE:COL and what is wrong",
                f"rc={rc} {err.strip()[-400:]}")
        c.check(m is not None and int(m.group(1)) == col,
                f"config error {routes[:60]}: the column ({col}) points at {token!r}",
                m.group(0)[-200:] if m else "")
        t = subprocess.run([LOGFERRY, "-c", conf, "-t"], capture_output=True, text=True,
                           timeout=60)
        c.check(t.returncode == 2 and m is not None and m.group(0) in t.stdout + t.stderr,
                f"--test-config: the same message for {routes[:60]}",
                f"rc={t.returncode} {(t.stdout + t.stderr).strip()[-300:]}")
    # a condition from the environment: its error never shows the value
    conf = once_config(wd, "env", wd.path("none.log"),
                       "[{when: 'level == ${ROUTE_LEVEL}', outputs: [pager]}]",
                       ["pager", "archive"])
    rc, err = once(conf, dict(os.environ, ROUTE_LEVEL="hunter2-s3cr3t x"))
    c.check(rc == 2 and "routes[0].when: expected" in err,
            "a bad route condition from ${VAR}: exit 2 saying what was expected", err[-300:])
    c.check("hunter2" not in err and "s3cr3t" not in err,
            "a bad route condition from ${VAR}: no part of the value in stderr", err[-300:])
    # the routes and outputs of one input reach at most 16 outputs
    outs = [f"o{k}" for k in range(17)]
    routes = "[" + ", ".join(f"{{when: 'i == {k}', outputs: [o{k}], continue: true}}"
                             for k in range(17)) + "]"
    conf = once_config(wd, "o17", wd.path("none.log"), routes, outs)
    rc, err = once(conf)
    c.check(rc == 2 and re.search(r"\.yml:7:13: inputs\[0\]\.routes: the routes and outputs of "
                                  r"this input reach 17 outputs: at most 16", err) is not None,
            "routes reaching 17 outputs: exit 2 at the list", f"rc={rc} {err.strip()[-300:]}")
    path = wd.path("o16.log")
    write_app(path, 0, 16)
    conf = once_config(wd, "o16", path, routes.replace(", {when: 'i == 16', outputs: [o16], "
                                                        "continue: true}", ""), outs[:16])
    rc, err = once(conf)
    c.check(rc == 0 and all(got(wd, o) == [k] for k, o in enumerate(outs[:16])),
            "routes reaching 16 outputs load, and each output gets its event",
            f"rc={rc} {[got(wd, o) for o in outs[:16]]} {err[-300:]}")
    clear(wd, outs)
    # 63 routes load, and the 63rd takes the events
    path = wd.path("many.log")
    write_app(path, 0, 8)
    routes = "[" + ", ".join("{when: 'i == -1', outputs: [pager]}" for _ in range(62))
    routes += ", {name: last, outputs: [archive]}]"
    conf = once_config(wd, "m63", path, routes, ["pager", "archive"])
    rc, err = once(conf)
    c.check(rc == 0 and got(wd, "archive") == list(range(8)) and not got(wd, "pager"),
            "63 routes load; the 63rd takes the events", f"rc={rc} {err[-400:]}")
    clear(wd, ["pager", "archive"])


def route_counts(rig):
    body = rig.metrics()
    return {m.group(1): int(float(m.group(2))) for m in re.finditer(
        r'^logferry_route_events_total\{input="app",route="([^"]+)"\} (\S+)$', body, re.M)}


class Appender:
    """Appends app lines to path from a thread, about rate a second, until stopped."""

    def __init__(self, path, first, rate):
        self.path, self.n, self.rate = path, first, rate
        self.stop_ev = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop_ev.is_set():
            write_app(self.path, self.n, self.rate // 50)
            self.n += self.rate // 50
            time.sleep(0.02)

    def stop(self):
        self.stop_ev.set()
        self.thread.join()
        return self.n


def daemon_config(wd, routes, pager, spool=False):
    app = ("app", [wd.path("live.log")],
           {"outputs": "[archive]", "parsers": "[{ndjson: {}}]", "routes": routes})
    plain = ("plain", [wd.path("plain.log")], {"outputs": "[archive]"})  # no routes
    text = rt.config_text(wd, [app, plain],
                          [("pager", pager), ("archive", file_spec(wd, "archive"))])
    if spool:
        text = text.replace("queue: {batch: {flush_interval: 100ms}}",
                            "queue: {batch: {flush_interval: 100ms}, spool: {enabled: true}}")
    return text


def file_spec(wd, name):
    os.makedirs(out_dir(wd, name), exist_ok=True)
    return rt.file_output(out_dir(wd, name))


# Old and new routes of the reload: a bit read under the wrong routes lands elsewhere.
OLD_ROUTES = ("[{name: errors, when: 'level == \"ERROR\"', outputs: [pager]}, "
              "{name: debug, when: 'level == \"DEBUG\"', outputs: []}]")
NEW_ROUTES = ("[{name: debug, when: 'level == \"DEBUG\"', outputs: []}, "
              "{name: errors, when: 'level == \"ERROR\" or level == \"WARN\"', "
              "outputs: [pager], continue: true}, "
              "{name: loud, when: 'http.status >= 500', outputs: [pager, archive]}]")


def old_dest(i):
    return {"ERROR": {"pager"}, "DEBUG": set()}.get(level(i), {"archive"})


def new_dest(i):
    if level(i) == "DEBUG":
        return set()
    outs = {"pager"} if level(i) in ("ERROR", "WARN") else set()
    if i % 7 == 0:
        outs |= {"pager", "archive"}
    return outs or {"archive"}


def new_routes(i):
    """The routes of NEW_ROUTES line i takes."""
    if level(i) == "DEBUG":
        return ["debug"]
    routes = (["errors"] if level(i) in ("ERROR", "WARN") else []) + (["loud"] if i % 7 == 0
                                                                      else [])
    return routes or ["default"]


def new_counts(first, end):
    counts = {"debug": 0, "errors": 0, "loud": 0, "default": 0}
    for i in range(first, end):
        for r in new_routes(i):
            counts[r] += 1
    return counts


def received(wd):
    """Per line i, the outputs it reached, and the lines that reached one twice."""
    where, twice = {}, []
    for o in ("pager", "archive"):
        for i in got(wd, o):
            if o in where.setdefault(i, set()):
                twice.append((o, i))
            where[i].add(o)
    return where, twice


def metrics_reload_case(c, wd):
    path = wd.path("live.log")
    open(path, "w").close()
    rig = rt.Rig(wd, daemon_config(wd, OLD_ROUTES, file_spec(wd, "pager")))
    try:
        c.check(route_counts(rig) == {"errors": 0, "debug": 0, "default": 0},
                "logferry_route_events_total is exported at zero for every route and default",
                str(route_counts(rig)))
        c.check('logferry_route_events_total{input="plain"' not in rig.metrics(),
                "an input without routes has no route samples")
        write_app(path, 0, 400)
        tt.wait_registry_offset(wd.data, path, os.path.getsize(path))
        want = {"errors": 100, "debug": 100, "default": 200}
        tt.wait_for(lambda: route_counts(rig) == want, 10)
        c.check(route_counts(rig) == want, "route counts equal what each route took",
                str(route_counts(rig)))
        body = rig.metrics()
        acked = [rt.sample(body, "logferry_events_acked_total", f'{{output="{o}"}}')
                 for o in ("pager", "archive")]
        c.check(acked == [100, 200], "logferry_events_acked_total per output counts the events "
                "its routes sent it (the dropped ones in its batches not counted)", str(acked))
        inp = [rt.sample(body, f"logferry_events_{m}_total", '{input="app"}')
               for m in ("read", "filtered")]
        c.check(inp == [400, 100], "read 400, filtered 100: the events a route dropped are "
                "counted as filtered", str(inp))
        r = subprocess.run(["promtool", "check", "metrics"], input=rig.metrics(),
                           capture_output=True, text=True)
        c.check(r.returncode == 0 and not (r.stdout + r.stderr).strip(),
                "promtool check metrics accepts the page with the route counts",
                (r.stdout + r.stderr).strip()[:400])

        writer = Appender(path, 400, 2000)
        time.sleep(0.5)
        rig.write(daemon_config(wd, NEW_ROUTES, file_spec(wd, "pager")))
        (ok, bad), took = rig.reload()
        time.sleep(0.5)
        n = writer.stop()
        write_app(path, n, 200)
        n += 200
        c.check(ok == 1 and bad == 0, "a SIGHUP that changes the routes while lines are written "
                "reloads", f"{ok}/{bad} in {took:.2f} s")
        tt.wait_registry_offset(wd.data, path, os.path.getsize(path))
        tt.wait_for(lambda: len(received(wd)[0]) == sum(1 for i in range(n)
                                                         if old_dest(i) or new_dest(i)), 10)
        where, twice = received(wd)
        # the first line read under the new routes: the first whose outputs are not the old
        # ones' (the lines the two sets of routes send alike say nothing)
        switch = next((i for i in range(400, n) if where.get(i, set()) != old_dest(i)), n)
        bad_old = [i for i in range(switch) if where.get(i, set()) != old_dest(i)]
        bad_new = [i for i in range(switch, n) if where.get(i, set()) != new_dest(i)]
        c.check(not bad_old and not bad_new and switch < n - 200,
                f"every line went where the routes said when it was read: the old routes "
                f"before line {switch}, the new ones from it (of {n})",
                f"not by the old: {[(i, where.get(i)) for i in bad_old[:5]]}; not by the new: "
                f"{[(i, where.get(i)) for i in bad_new[:5]]}")
        c.check(not twice, "none twice across the reload", str(twice[:8]))
        for o in ("pager", "archive"):
            check_order(c, "the daemon across a reload", o, got(wd, o))
        # the counts start again at the reload: those of the new routes over the lines from
        # the first one read under them, somewhere after the last line the old routes sent
        last_old = max([i for i in range(switch) if old_dest(i) != new_dest(i)] + [399])
        counts = route_counts(rig)
        fits = [k for k in range(last_old + 1, switch + 1) if new_counts(k, n) == counts]
        c.check(bool(fits), "the route counts start again at the reload and count the events "
                "each new route took", f"{counts}; from line {switch}: {new_counts(switch, n)}")
        tt.check_no_error_logged(c, rig.agent.stderr())

        # the same file again: the input is unchanged and its counts go on
        (ok, bad), _ = rig.reload()
        c.check((ok, bad) == (2, 0) and route_counts(rig) == counts,
                "a reload that leaves the routes as they are keeps their counts",
                f"{ok}/{bad} {route_counts(rig)}")
        # a route naming an output the config lacks: refused, the running routes stay
        rig.write(daemon_config(wd, NEW_ROUTES.replace("[pager, archive]", "[pager, archiv]"),
                                file_spec(wd, "pager")))
        (ok, bad), _ = rig.reload()
        log = rig.agent.stderr()
        c.check((ok, bad) == (2, 1) and re.search(r"logferry\.yml:\d+:\d+: inputs\[0\]\.routes"
                                                  r"\[2\]\.outputs\[1\]: no output named "
                                                  r"\"archiv\"", log) is not None,
                "a reload with a route to an unknown output is refused at FILE:LINE:COL",
                f"{ok}/{bad} {log[-400:]}")
        write_app(path, n, 100)
        tt.wait_registry_offset(wd.data, path, os.path.getsize(path))
        want = {i: new_dest(i) for i in range(n, n + 100) if new_dest(i)}
        tt.wait_for(lambda: all(received(wd)[0].get(i) == d for i, d in want.items()), 10)
        where, twice = received(wd)
        c.check(all(where.get(i) == d for i, d in want.items()) and not twice,
                "after the refused reload the running routes stay in force",
                str([(i, where.get(i)) for i, d in want.items() if where.get(i) != d][:5]))
    finally:
        rc = rig.stop()
        c.check(rc == 0, "SIGTERM exits 0", f"rc={rc}")


# The bad day: errors go to an http output whose receiver is down, everything to a file.
BAD_ROUTES = ("[{name: errors, when: 'level == \"ERROR\"', outputs: [pager], continue: true}, "
              "{name: everything, outputs: [archive]}]")
BAD_NEW_ROUTES = ("[{name: errors, when: 'level in [\"ERROR\", \"WARN\"]', outputs: [pager], "
                  "continue: true}, {name: everything, outputs: [archive]}]")


def http_spec(rx):
    return {"type": "http", "url": tt.yaml_str(rx.url()), "compression": "none",
            "timeout": "5s", "backoff": "{initial: 100ms, max: 500ms}"}


def offset_of(i):
    return sum(len(app_line(k)) for k in range(i))


def watch_registry(wd, path, seconds):
    """The registry offsets of path seen over seconds (None: no entry yet)."""
    seen = set()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        seen.add(tt.registry_offset(wd.data, path))
        time.sleep(0.05)
    return seen


def bad_day_crash(c, wd, rx):
    path = wd.path("live.log")
    # 40 INFO lines first, acknowledged by the archive alone: the registry moves past them
    with open(path, "w") as f:
        f.write("".join(json.dumps({"i": k, "level": "INFO", "http": {"status": 200},
                                    "message": f"before {k}"}) + "\n" for k in range(-40, 0)))
    start = os.path.getsize(path)
    rx.stop()
    rig = rt.Rig(wd, daemon_config(wd, BAD_ROUTES, http_spec(rx)), tag="crash1")
    n = 600
    first_error = 3
    try:
        c.check(tt.wait_registry_offset(wd.data, path, start, timeout=15) == start,
                "pager down: the registry moves past the lines only the archive takes",
                str(tt.registry_offset(wd.data, path)))
        write_app(path, 0, n // 2)
        tt.wait_for(lambda: len(got(wd, "archive")) >= 40 + n // 2, 15)
        write_app(path, n // 2, n // 2)
        tt.wait_for(lambda: len(got(wd, "archive")) >= 40 + n, 15)
        check_exact(c, "pager down", "archive", got(wd, "archive"), list(range(-40, n)))
        seen = watch_registry(wd, path, 1.5)
        limit = start + offset_of(first_error)
        c.check(all(o is not None and start <= o <= limit for o in seen),
                f"pager down: the registry never passes the first error event (offset {limit})",
                f"offsets seen {sorted(seen, key=lambda o: -1 if o is None else o)}")
        c.check(rig.agent.alive(), "pager down: the agent keeps running")
    finally:
        rig.agent.kill9()
    rx.start()
    rig = rt.Rig(wd, daemon_config(wd, BAD_ROUTES, http_spec(rx)), tag="crash2")
    try:
        tt.wait_registry_offset(wd.data, path, os.path.getsize(path), timeout=30)
        errors = [i for i in range(n) if level(i) == "ERROR"]
        pager = [e["i"] for e in rx.accepted()]
        c.check(sorted(set(pager)) == errors,
                f"after kill -9 and the receiver back: the pager has every one of the "
                f"{len(errors)} error events (none lost)",
                f"{len(pager)} received, missing {sorted(set(errors) - set(pager))[:8]}, "
                f"{len(pager) - len(set(pager))} twice")
        c.check(len(pager) == len(errors), "the pager got each error event once (it had "
                "acknowledged none)", f"{len(pager)} for {len(errors)}")
        c.check(set(got(wd, "archive")) == set(range(-40, n)),
                "the archive has every event at least once",
                f"missing {sorted(set(range(-40, n)) - set(got(wd, 'archive')))[:8]}")
        c.check(tt.registry_offset(wd.data, path) == os.path.getsize(path),
                "the registry reaches the file's end once the pager answered")
    finally:
        rc = rig.stop()
        c.check(rc == 0, "SIGTERM exits 0 after the bad day", f"rc={rc}")


def bad_day_reload(c, wd, rx):
    path = wd.path("live.log")
    open(path, "w").close()
    rx.stop()
    rig = rt.Rig(wd, daemon_config(wd, BAD_ROUTES, http_spec(rx)))
    try:
        write_app(path, 0, 200)
        tt.wait_for(lambda: len(got(wd, "archive")) >= 200, 15)
        rig.write(daemon_config(wd, BAD_NEW_ROUTES, http_spec(rx)))
        (ok, bad), took = rig.reload()
        c.check(ok == 1 and bad == 0 and took < 5,
                "pager down: a SIGHUP that changes the routes applies at once",
                f"{ok}/{bad} in {took:.2f} s")
        write_app(path, 200, 200)
        tt.wait_for(lambda: len(got(wd, "archive")) >= 400, 15)
        want = {"errors": 100, "everything": 200, "default": 0}
        tt.wait_for(lambda: route_counts(rig) == want, 10)
        c.check(route_counts(rig) == want, "pager down: the lines after the reload take the "
                "new routes (ERROR and WARN: errors)", str(route_counts(rig)))
        seen = watch_registry(wd, path, 1.0)
        c.check(all(o is None or o <= offset_of(3) for o in seen),
                "pager down: the registry stays at or before the first error event",
                str(sorted(seen, key=lambda o: -1 if o is None else o)))
        rx.start()
        tt.wait_registry_offset(wd.data, path, os.path.getsize(path), timeout=30)
        want = [i for i in range(200) if level(i) == "ERROR"]
        want += [i for i in range(200, 400) if level(i) in ("ERROR", "WARN")]
        check_exact(c, "reload while the pager was down", "pager",
                    [e["i"] for e in rx.accepted()], want)
        check_exact(c, "reload while the pager was down", "archive", got(wd, "archive"),
                    list(range(400)))
    finally:
        rc = rig.stop()
        c.check(rc == 0, "SIGTERM exits 0", f"rc={rc}")


def bad_day_spool(c, wd, rx):
    """With the disk spool, the registry moves once the batches are spooled; after kill -9
    the pager's batches are fed again from the spool."""
    path = wd.path("live.log")
    open(path, "w").close()
    rx.stop()
    text = daemon_config(wd, BAD_ROUTES, http_spec(rx), spool=True)
    c.check("spool: {enabled: true}" in text, "spool: the config enables the disk spool")
    rig = rt.Rig(wd, text, tag="spool1")
    n = 600
    try:
        write_app(path, 0, n)
        tt.wait_for(lambda: len(got(wd, "archive")) >= n, 15)
        check_exact(c, "spool, pager down", "archive", got(wd, "archive"), list(range(n)))
        c.check(tt.wait_registry_offset(wd.data, path, os.path.getsize(path), timeout=15)
                == os.path.getsize(path), "spool, pager down: the registry reaches the file's "
                "end once the batches are spooled")
    finally:
        rig.agent.kill9()
    rx.start()
    rig = rt.Rig(wd, text, tag="spool2")
    try:
        errors = [i for i in range(n) if level(i) == "ERROR"]
        tt.wait_for(lambda: len(rx.accepted()) >= len(errors), 20)
        time.sleep(0.5)
        check_exact(c, "spool, after kill -9 and the receiver back", "pager",
                    [e["i"] for e in rx.accepted()], errors)
        c.check(set(got(wd, "archive")) == set(range(n)),
                "spool, after kill -9: the archive has every event at least once")
    finally:
        rc = rig.stop()
        c.check(rc == 0, "SIGTERM exits 0 after the spool's bad day", f"rc={rc}")


def crash_loop(c, wd, rx):
    """kill -9 six times while lines are written at about 3000 a second, the pager down for
    two of the runs: each output ends up with every event its routes give it."""
    path = wd.path("live.log")
    open(path, "w").close()
    text = daemon_config(wd, DOC_ROUTES, http_spec(rx))
    writer = Appender(path, 0, 3000)
    rnd = random.Random(25)
    try:
        for k in range(6):
            rig = rt.Rig(wd, text, tag=f"kill{k}")
            time.sleep(rnd.uniform(0.3, 1.2))
            rig.agent.kill9()
            if k == 2:
                rx.stop()
            if k == 4:
                rx.start()
    finally:
        n = writer.stop()
    rig = rt.Rig(wd, text, tag="last")
    try:
        end = os.path.getsize(path)
        c.check(tt.wait_registry_offset(wd.data, path, end, timeout=30) == end,
                f"six kill -9 over {n} lines: the registry reaches the file's end at last")
        pager = [e["i"] for e in rx.accepted()]
        for o, have in (("pager", pager), ("archive", got(wd, "archive"))):
            want = {i for i in range(n) if o in doc_dest(i)[0]}
            c.check(set(have) == want, f"six kill -9: {o} has each of its {len(want)} events "
                    "at least once, none of another route",
                    f"missing {sorted(want - set(have))[:6]}, extra {sorted(set(have) - want)[:6]}"
                    f", {len(have) - len(set(have))} again")
    finally:
        rc = rig.stop()
        c.check(rc == 0, "SIGTERM exits 0 after the kills", f"rc={rc}")


def main():
    if shutil.which("promtool") is None:
        print("SKIP: promtool not installed (Debian package prometheus)")
        sys.exit(tt.SKIP)
    c = tt.Checks()
    t0 = time.monotonic()
    for name, case in (("once", once_case), ("preview", preview_case),
                       ("errors", errors_case), ("reload", metrics_reload_case)):
        wd = tt.Workdir(f"routes-{name}")
        try:
            case(c, wd)
        finally:
            wd.cleanup()
    for name, case in (("crash", bad_day_crash), ("badreload", bad_day_reload),
                       ("spool", bad_day_spool), ("kill", crash_loop)):
        wd = tt.Workdir(f"routes-{name}")
        rx = ht.Receiver(os.path.join(wd.root, "rx"))
        try:
            case(c, wd, rx)
        finally:
            rx.stop()
            wd.cleanup()
    print(f"took {time.monotonic() - t0:.1f} s")
    c.finish()


if __name__ == "__main__":
    main()
