#!/usr/bin/env python3
"""The daemon reads a stdin input (a sidecar fed through a pipe) next to a file input: lines
piped in over time arrive; while the pipe is idle the agent uses next to no CPU (fd 0 is
polled by the event loop, never read in a loop); at the end of the pipe the unterminated
last line arrives and the files are still followed; a reload keeps stdin running and refuses
to remove it."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reloadtest as rt  # noqa: E402
import tailtest as tt  # noqa: E402


def arrived(out_dir, lines):
    return set(lines) <= set(rt.messages(out_dir))


def main():
    c = tt.Checks()
    wd = tt.Workdir("stdin")
    app = wd.path("app.log")
    wa = rt.Writer(app, "app")
    wa.write(10)
    inputs = [("pipe", [], {"parsers": "\n      - exclude_lines: ['^DEBUG']"}),
              ("app", [app], {})]
    text = rt.config_text(wd, inputs, [("local", rt.file_output(wd.out))])
    rig = rt.Rig(wd, text, stdin=subprocess.PIPE)
    pipe = rig.agent.proc.stdin
    sent = []
    ok = True
    for burst in range(5):
        lines = [f"pipe-{burst}-{i:04d}" for i in range(200)]
        pipe.write(("".join(x + "\n" for x in lines) + "DEBUG noise\n").encode())
        pipe.flush()
        sent += lines
        ok = ok and tt.wait_for(lambda: arrived(wd.out, lines), 10)
        time.sleep(0.5)
    c.check(ok, "lines piped in over time arrive, burst after burst", f"{len(sent)} lines")
    msgs = rt.messages(wd.out)
    c.check(sum(m.startswith("pipe-") for m in msgs) == len(sent) and "DEBUG noise" not in msgs,
            "each once, with the input's stages applied")
    before = rig.agent.cpu_ticks()
    t0 = time.monotonic()
    time.sleep(3.0)
    ticks = rig.agent.cpu_ticks() - before
    secs = time.monotonic() - t0
    share = ticks / os.sysconf("SC_CLK_TCK") / secs
    c.check(share < 0.02, "an idle stdin costs next to no CPU", f"{share * 100:.2f}% over {secs:.1f} s")
    (okc, bad), _ = rig.reload()
    c.check(okc == 1 and bad == 0, "a reload with the same file keeps stdin", f"{okc}/{bad}")
    more = [f"pipe-after-reload-{i}" for i in range(50)]
    pipe.write("".join(x + "\n" for x in more).encode())
    pipe.flush()
    c.check(tt.wait_for(lambda: arrived(wd.out, more), 10), "and stdin is still read after it")
    rig.write(rt.config_text(wd, inputs[1:], [("local", rt.file_output(wd.out))]))
    (okc, bad), _ = rig.reload()
    c.check(okc == 1 and bad == 1, "a reload that removes the stdin input is refused",
            f"{okc}/{bad}")
    rig.write(text)
    pipe.write(b"the last line, unterminated")
    pipe.close()
    c.check(tt.wait_for(lambda: arrived(wd.out, ["the last line, unterminated"]), 10),
            "at the end of the pipe the unterminated last line arrives")
    c.check(tt.wait_for(lambda: "stdin ended" in rig.agent.stderr(), 10),
            "the end of stdin is logged")
    late = wa.write(10)
    c.check(tt.wait_for(lambda: arrived(wd.out, late), 10) and rig.agent.alive(),
            "the agent keeps following its files after stdin ended")
    return rt.finish(c, rig, wd)


if __name__ == "__main__":
    sys.exit(main())
