#!/usr/bin/env python3
"""How long a SIGHUP reload with unchanged inputs takes (SIGHUP to READY=1 on the notify
socket) while the daemon follows many files, some of them being written, and how far reading
lags behind during the reloads. With --down the files go to an http output whose collector
is down as well (a port nothing listens on): its backlog fills the queue and holds reading
up, and a reload must still apply at once (the median is then under 100 ms, else exit 1);
the file output's count is then not checked (the down output holds the shared queue).

    LOGFERRY=build/logferry python3 t/bench/reload_bench.py [--files 1000] [--reloads 20]
                                                            [--down]
"""
import argparse
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import reloadtest as rt  # noqa: E402
import tailtest as tt  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--reloads", type=int, default=20)
    ap.add_argument("--down", action="store_true", help="an http output that is down too")
    args = ap.parse_args()
    wd = tt.Workdir("reload-bench")
    paths = [wd.path(f"f{i:05d}.log") for i in range(args.files)]
    for p in paths:
        with open(p, "w") as f:
            f.write("first line\n")
    inputs = [("all", [wd.path("*.log")], {"close_inactive": "1h", "max_open_files": 4096})]
    outputs = [("local", rt.file_output(wd.out))]
    if args.down:
        outputs.append(("down", {"type": "http", "url": f"http://127.0.0.1:{tt.free_port()}/",
                                 "backoff": "{initial: 100ms, max: 1s}"}))
    text = rt.config_text(wd, inputs, outputs)
    rig = rt.Rig(wd, text, notify=True)
    if not args.down:
        tt.wait_events(wd.out, args.files, 120)
    writers = [rt.Writer(p, f"w{i}") for i, p in enumerate(paths[:8])]
    halt = threading.Event()

    def write():
        while not halt.is_set():
            for w in writers:
                w.write(50)
            time.sleep(0.01)
    t = threading.Thread(target=write)
    t.start()
    times = []
    for _ in range(args.reloads):
        t0 = time.monotonic()
        os.kill(rig.agent.pid, 1)
        rig.recv()  # RELOADING=1
        rig.recv()  # READY=1
        times.append((time.monotonic() - t0) * 1000)
        time.sleep(0.2)
    halt.set()
    t.join()
    want = args.files + sum(len(w.lines) for w in writers)
    t0 = time.monotonic()
    got = tt.wait_events(wd.out, want, 5 if args.down else 120)
    catch_up = time.monotonic() - t0
    rig.stop()
    times.sort()
    median = times[len(times) // 2]
    print(f"files followed: {args.files}; reloads: {args.reloads}; lines written during them: "
          f"{want - args.files}" + ("; an http output down" if args.down else ""))
    print("| SIGHUP to READY=1 | min | median | p90 | max |")
    print("|---|---:|---:|---:|---:|")
    print(f"| ms | {times[0]:.1f} | {median:.1f} | "
          f"{times[int(len(times) * 0.9)]:.1f} | {times[-1]:.1f} |")
    if args.down:
        print(f"file output: {got} of {want} events (held up with the down output's backlog)")
        wd.cleanup()
        return 0 if median < 100 else 1
    print(f"events: {got} of {want}; caught up {catch_up:.2f} s after the last write")
    wd.cleanup()
    return 0 if got == want else 1


if __name__ == "__main__":
    sys.exit(main())
