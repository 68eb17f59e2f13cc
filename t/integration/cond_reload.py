#!/usr/bin/env python3
"""drop and `when` in the daemon (docs/processing.md "Dropping events"), with its metrics
and SIGHUP reloads:
- `drop: {when: level == "DEBUG"}` after ndjson: exactly the DEBUG lines are left out;
  logferry_events_filtered_total counts them and read = filtered + delivered; the registry
  reaches the file's end (the dropped lines acknowledged);
- a reload that changes the condition (now `level in ["DEBUG", "INFO"]`) takes effect for
  lines written after it, and the counters go on;
- a reload with a bad condition is refused with FILE:LINE:COL in the log, and the running
  condition stays in force."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reloadtest as rt  # noqa: E402
import tailtest as tt  # noqa: E402

LEVELS = ["DEBUG", "INFO", "WARN", "ERROR"]


def config(wd, cond):
    app = ("app", [wd.path("app.log")],
           {"parsers": f"[{{ndjson: {{}}}}, {{drop: {{when: {json.dumps(cond)}}}}}]"})
    return rt.config_text(wd, [app], [("local", rt.file_output(wd.out))])


def append(path, first, n):
    with open(path, "a") as f:
        for i in range(first, first + n):
            f.write(json.dumps({"n": i, "level": LEVELS[i % 4], "message": f"m{i}"}) + "\n")


def counts(rig):
    body = rig.metrics()
    return tuple(rt.sample(body, f"logferry_{m}", '{input="app"}')
                 for m in ("events_read_total", "events_filtered_total"))


def sent(wd):
    return sorted(e["n"] for e in tt.read_events(wd.out))


def main():
    c = tt.Checks()
    wd = tt.Workdir("cond-reload")
    path = wd.path("app.log")
    open(path, "w").close()
    rig = rt.Rig(wd, config(wd, 'level == "DEBUG"'))
    try:
        append(path, 0, 40)
        tt.wait_registry_offset(wd.data, path, os.path.getsize(path))
        tt.wait_for(lambda: counts(rig)[0] == 40, 10)
        c.check(sent(wd) == [i for i in range(40) if i % 4 != 0],
                "drop when level == DEBUG: the 30 other lines are sent", str(sent(wd)[:8]))
        c.check(counts(rig) == (40, 10), "read 40, filtered 10", str(counts(rig)))
        c.check(tt.registry_offset(wd.data, path) == os.path.getsize(path),
                "the registry reaches the file's end: dropped lines acknowledged")

        rig.write(config(wd, 'level in ["DEBUG", "INFO"]'))
        (ok, bad), _ = rig.reload()
        c.check(ok == 1 and bad == 0, "a SIGHUP with a changed condition reloads", f"{ok}/{bad}")
        append(path, 40, 40)
        tt.wait_registry_offset(wd.data, path, os.path.getsize(path))
        tt.wait_for(lambda: counts(rig)[0] == 80, 10)
        want = [i for i in range(40) if i % 4 != 0] + [i for i in range(40, 80) if i % 4 > 1]
        tt.wait_for(lambda: sent(wd) == want, 10)
        c.check(sent(wd) == want, "the changed condition applies to the lines after the reload "
                "(DEBUG and INFO dropped)", str(sent(wd)[28:40]))
        c.check(counts(rig) == (80, 30), "the counters go on: read 80, filtered 30 (10 + 20)",
                str(counts(rig)))

        rig.write(config(wd, 'level in ["DEBUG",'))
        (ok, bad), _ = rig.reload()
        c.check(ok == 1 and bad == 1, "a SIGHUP with a bad condition is refused", f"{ok}/{bad}")
        log = rig.agent.stderr()
        c.check("drop.when: expected a value" in log and ".yml:" in log,
                "the refused reload logs FILE:LINE:COL and what was expected", log[-600:])
        append(path, 80, 8)
        tt.wait_registry_offset(wd.data, path, os.path.getsize(path))
        tt.wait_for(lambda: counts(rig)[0] == 88, 10)
        want += [i for i in range(80, 88) if i % 4 > 1]
        tt.wait_for(lambda: sent(wd) == want, 10)
        c.check(sent(wd) == want, "the running condition stays in force after a refused reload",
                str(sent(wd)[-6:]))
    finally:
        rc = rig.stop()
        c.check(rc == 0, "SIGTERM exits 0", f"rc={rc}")
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
