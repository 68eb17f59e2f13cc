"""The pattern of the outage tests (http_outage.py, es_outage.py, loki_outage.py,
kafka_outage.py, syslog_outage.py): lines are written at a steady pace throughout a run;
mid-run the receiver goes down for DOWN_S seconds (stopped by PID, or its brokers cut) and
comes back on the same port; then every line must arrive. LF_SOAK=1 makes the outage 30 s.

    lines = outage.lines("http")
    took = outage.through(c, log, lines, down=rx.stop, up=rx.start)
    got = [...messages received, in arrival order...]
    outage.check_arrived(c, lines, got, copies_ok=True)

Whether copies are allowed follows docs/outputs.md: the elasticsearch output with
document_id auto delivers exactly once (a copy is answered 409), the others at least once
(a request whose answer the outage cut is sent again), so copies are counted, never losses."""
import threading
import time

import tailtest as tt

DOWN_S = 30.0 if tt.SOAK else 10.0  # past every test's max backoff and send timeout
LEAD_S = 3.0  # writing before the outage...
TAIL_S = 3.0  # ...and after it
CHUNK = 10    # lines per write


def lines(tag, n=3000):
    """n distinct lines of varied length, in write order."""
    return [f"{tag} outage {i:06d} " + "x" * (i % 50) for i in range(n)]


class Writer(threading.Thread):
    """Appends lines to path, CHUNK at a time, evenly over seconds."""

    def __init__(self, path, lines, seconds):
        super().__init__(daemon=True)
        self.path, self.lines, self.seconds = path, lines, seconds
        self.halt = threading.Event()

    def run(self):
        writes = (len(self.lines) + CHUNK - 1) // CHUNK
        t0 = time.monotonic()
        with open(self.path, "a", encoding="utf-8") as f:
            for k in range(writes):
                if self.halt.is_set():
                    return
                f.write("".join(l + "\n" for l in self.lines[k * CHUNK:(k + 1) * CHUNK]))
                f.flush()
                delay = t0 + (k + 1) * self.seconds / writes - time.monotonic()
                if delay > 0:
                    time.sleep(delay)


def through(c, path, lines, down, up, received=None, ready=None, ready_s=30.0, lead_s=LEAD_S):
    """Writes lines to path over lead_s + DOWN_S + TAIL_S seconds. After lead_s (and, with
    ready, once ready() holds, at most ready_s more) calls down(), sleeps DOWN_S, calls
    up(), and waits for the writer. received(): what has arrived so far (a count), checked
    to be neither nothing nor everything when the outage starts. Returns the seconds the
    receiver was down."""
    w = Writer(path, lines, lead_s + DOWN_S + TAIL_S)
    w.start()
    try:
        time.sleep(lead_s)
        if ready is not None:
            tt.wait_for(ready, ready_s, step=0.01)
        before = received() if received is not None else None
        t_down = time.monotonic()
        down()
        time.sleep(DOWN_S)
        up()
        took = time.monotonic() - t_down
        w.join()
    finally:
        w.halt.set()
        w.join()
    if before is not None:
        c.check(0 < before < len(lines), f"the receiver went down mid-run, for {took:.1f} s",
                f"{before} of {len(lines)} arrived before")
    return took


def check_arrived(c, lines, got, copies_ok, order=False, what="across the outage"):
    """Every line of lines arrived, byte-identical, and nothing else. copies_ok: a line may
    arrive more than once (counted and printed); else exactly once. order: first arrivals
    keep the write order. Returns the number of copies."""
    missing, dups, breaks = tt.compare_streams(lines, got)
    c.check(not missing, f"nothing is lost {what}",
            f"{len(got)} received, {len(missing)} missing, first {missing[:2]}")
    known = set(lines)
    stray = [m for m in got if m not in known]
    c.check(not stray, f"nothing arrives {what} that was not written", str(stray[:2]))
    if copies_ok:
        print(f"info: {dups} copies {what} (allowed: at least once)")
    else:
        c.check(dups == 0, f"nothing arrives twice {what}", f"{dups} copies")
    if order:
        c.check(breaks == 0, f"first arrivals keep the write order {what}", f"{breaks} breaks")
    return dups


def check_said_why(c, err):
    """The agent's stderr (err) names the failed connection while the receiver was down."""
    c.check("Connection refused" in err or "Couldn't connect" in err or
            "Failed to connect" in err, "the agent says why it could not deliver")
