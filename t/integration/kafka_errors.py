#!/usr/bin/env python3
"""The kafka output when the cluster answers with errors:
- produce requests failing with retriable errors (not leader, timed out, not enough
  replicas): librdkafka retries, nothing is lost, --once exits 0;
- the producer is idempotent: it acquires a producer id, so a broker drops the copies a
  retry sends of a request it had appended;
- brokers answering slower than socket.timeout.ms for a while, so the producer gives up
  on requests the brokers did append and sends them again: nothing is lost. (A real
  broker drops the copies by their sequence numbers; the mock cluster of librdkafka 2.0
  does not check sequences, so copies are counted and printed, not asserted);
- an error fatal to the idempotent producer (out-of-order sequence): a new producer is
  made, the batch sent again, nothing lost;
- a line larger than message.max.bytes: refused for good, reported, not retried for ever,
  written to the dead letters (--once exits 0 within seconds), the other lines delivered,
  and the registry passes it;
- a produce request refused with INVALID_RECORD: its messages go to the dead
  letters, counted and acknowledged, while the daemon keeps delivering the lines after."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import httptest as ht  # noqa: E402
import kafkatest as kt  # noqa: E402
import tailtest as tt  # noqa: E402

NOT_LEADER, REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS = 6, 7, 19
OUT_OF_ORDER_SEQUENCE = 45
MSG_SIZE_TOO_LARGE, INVALID_RECORD = 10, 87


def write_lines(path, tag, n):
    lines = [f"{tag} {i:05d} " + "e" * (i % 30) for i in range(n)]
    with open(path, "w") as f:
        f.write("".join(line + "\n" for line in lines))
    return lines


def retriable_errors(c, wd, mc):
    log = wd.path("retry", "app.log")
    os.makedirs(os.path.dirname(log))
    lines = write_lines(log, "retry", 5000)
    for _ in range(8):
        for code in (NOT_LEADER, REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS):
            mc.cmd(f"errors 1 {code}")
    out = kt.kafka_output("bus", mc.brokers, "retry", key="%{log.file.path}",
                          extra={"librdkafka": "{retry.backoff.ms: 50, debug: 'eos,msg'}"})
    wd.data = os.path.join(wd.root, "data-retry")
    config = kt.write_config(wd, [{"id": "app", "paths": [log]}], [out],
                             extra="logging: {level: debug}")
    rc, err, secs = kt.run_once(config, wd)
    c.check(rc == 0, "retriable produce errors: --once exits 0", f"rc {rc}")
    failed = [ln for ln in err.splitlines() if "encountered error" in ln]
    c.check(len(failed) >= 8, "the injected errors reached the producer",
            f"{len(failed)} produce requests answered with an error")
    pid = [ln for ln in err.splitlines() if "Acquired PID" in ln]
    c.check(bool(pid), "the producer is idempotent (it acquires a producer id)",
            pid[0][-80:] if pid else "no producer id acquired")
    evs = kt.events(mc.dump("retry", os.path.join(wd.root, "retry.dump")))
    kt.check_once_in_order(c, {log: lines}, evs, "24 failed produce requests")


def slow_brokers(c, wd, mc):
    """Answers delayed past request.timeout.ms: requests time out after the broker appended
    them, and are sent again."""
    log = wd.path("slow", "app.log")
    os.makedirs(os.path.dirname(log))
    out = kt.kafka_output("bus", mc.brokers, "slow", key="%{log.file.path}",
                          extra={"librdkafka": "{socket.timeout.ms: 1000, retry.backoff.ms: 50}"})
    wd.data = os.path.join(wd.root, "data-slow")
    config = kt.write_config(wd, [{"id": "app", "paths": [log]}], [out])
    mc.cmd("create slow 2")
    lines = write_lines(log, "warmup", 100)
    agent = tt.Agent(config, wd, tag="slow")
    try:
        got = mc.wait_count("slow", 100, 20)
        c.check(got == 100, "slow brokers: the first lines arrive", f"{got}")
        mc.cmd("rtt all 2500")
        more = [f"slow {i:05d}" for i in range(3000)]
        for k in range(0, len(more), 500):
            with open(log, "a") as f:
                f.write("".join(line + "\n" for line in more[k:k + 500]))
            time.sleep(0.4)
        time.sleep(2)
        mc.cmd("rtt all 0")
        lines += more
        got = mc.wait_count("slow", len(lines), 40)
        time.sleep(1)  # late copies, if the brokers kept any, would show now
        rc = agent.stop()
        c.check(rc == 0, "slow brokers: the agent stops with exit 0", f"rc {rc}")
    finally:
        if agent.alive():
            agent.stop()
    evs = kt.events(mc.dump("slow", os.path.join(wd.root, "slow.dump")))
    got = {}
    for ev in sorted(evs, key=lambda e: (e["_partition"], e["_offset"])):
        got.setdefault(ev["message"], 0)
        got[ev["message"]] += 1
    missing = [line for line in lines if line not in got]
    c.check(not missing, "requests timed out and sent again: nothing is lost",
            f"{len(missing)} of {len(lines)} missing")
    c.check("timed out" in agent.stderr(), "the brokers' slowness made requests time out")
    print(f"info: {len(evs) - len(got)} copies kept by the mock cluster (it checks no "
          f"sequence numbers)")


def fatal_error(c, wd, mc):
    """An out-of-order sequence answer is fatal to an idempotent producer: every later
    message fails at once. The output makes a new producer and sends the batch again."""
    log = wd.path("fatal", "app.log")
    os.makedirs(os.path.dirname(log))
    lines = write_lines(log, "fatal", 500)
    mc.cmd(f"errors 1 {OUT_OF_ORDER_SEQUENCE}")
    out = kt.kafka_output("bus", mc.brokers, "fatal")
    wd.data = os.path.join(wd.root, "data-fatal")
    config = kt.write_config(wd, [{"id": "app", "paths": [log]}], [out])
    rc, err, secs = kt.run_once(config, wd, timeout=45)
    c.check("the producer failed" in err, "the injected error is fatal to the producer",
            next((ln for ln in err.splitlines() if "FATAL" in ln), "no fatal error")[:160])
    c.check(rc == 0 and "made a new producer" in err,
            "a new producer is made and --once exits 0", f"rc {rc} after {secs:.1f} s")
    got = [ev["message"] for ev in kt.events(mc.dump("fatal", os.path.join(wd.root, "f.dump")))]
    missing = set(lines) - set(got)
    c.check(not missing, "after a fatal producer error nothing is lost",
            f"{len(missing)} missing, {len(got) - len(set(got))} sent twice (at least once)")


def too_large(c, wd, mc):
    log = wd.path("large", "app.log")
    os.makedirs(os.path.dirname(log))
    before = [f"small {i:04d}" for i in range(300)]
    big = "B" * 30000
    after = [f"small {i:04d}" for i in range(300, 600)]
    with open(log, "w") as f:
        f.write("".join(line + "\n" for line in before + [big] + after))
    out = kt.kafka_output("bus", mc.brokers, "large",
                          extra={"librdkafka": "{message.max.bytes: 20000}"})
    wd.data = os.path.join(wd.root, "data-large")
    config = kt.write_config(wd, [{"id": "app", "paths": [log]}], [out])
    rc, err, secs = kt.run_once(config, wd, timeout=45)
    c.check(rc == 0, "a message over message.max.bytes is dead-lettered: --once exits 0",
            f"rc {rc} after {secs:.1f} s")
    c.check(secs < 20, "the refusal is final at once", f"{secs:.1f} s")
    refused = [ln for ln in err.splitlines() if "refused for good" in ln]
    c.check(any("Message size too large" in ln and "dead letters" in ln for ln in refused),
            "the refusal is reported with its reason", refused[0][:200] if refused else err[-300:])
    got = [ev["message"] for ev in kt.events(mc.dump("large", os.path.join(wd.root, "l.dump")))]
    c.check(sorted(got) == sorted(before + after) and big not in got,
            "every other line is delivered, the large one is not", f"{len(got)} of 600")
    dead = ht.dead_letters(wd.data, "bus")
    c.check(len(dead) == 1 and dead[0]["event"]["message"] == big
            and dead[0]["output"] == "bus" and dead[0]["status"] == MSG_SIZE_TOO_LARGE
            and "MSG_SIZE_TOO_LARGE" in dead[0]["reason"] and "large" in dead[0]["reason"],
            "the large line is in the dead letters with output, status and reason",
            f"{len(dead)} records" + (f": {dead[0]['status']} {dead[0]['reason']}" if dead else ""))
    recs = tt.read_registry(wd.data) or []
    offs = [r["offset"] for r in recs if r["path"] == log]
    size = os.path.getsize(log)
    c.check(offs == [size], "the registry passes the dead-lettered line to the end of the file",
            f"{offs} vs size {size}")


def invalid_record(c, wd, mc):
    """The brokers refuse a produce request with INVALID_RECORD (injected by the mock
    cluster): its messages go to the dead letters, are counted in
    logferry_dead_letter_events_total and acknowledged; the lines after are delivered."""
    log = wd.path("auth", "app.log")
    os.makedirs(os.path.dirname(log))
    mc.cmd("create auth 1")
    out = kt.kafka_output("bus", mc.brokers, "auth")
    wd.data = os.path.join(wd.root, "data-auth")
    config = kt.write_config(wd, [{"id": "app", "paths": [log]}], [out])
    text = open(config).read().replace('metrics: {listen: ""}', 'metrics: {listen: "127.0.0.1:0"}')
    with open(config, "w") as f:
        f.write(text)
    agent = tt.Agent(config, wd, tag="auth")
    try:
        warm = write_lines(log, "warm", 50)
        got = mc.wait_count("auth", 50, 20)
        c.check(got == 50, "invalid record: the first lines arrive", f"{got}")
        mc.cmd(f"errors 1 {INVALID_RECORD}")
        refused = [f"refused {i:03d}" for i in range(20)]
        with open(log, "a") as f:
            f.write("".join(line + "\n" for line in refused))
        port = ht.metrics_port(agent)
        c.check(tt.wait_for(lambda: (ht.metric(port, "logferry_dead_letter_events_total",
                                               "bus") or 0) > 0, 20),
                "logferry_dead_letter_events_total counts the refused events",
                str(ht.metric(port, "logferry_dead_letter_events_total", "bus")))
        later = [f"later {i:03d}" for i in range(100)]
        with open(log, "a") as f:
            f.write("".join(line + "\n" for line in later))
        got = mc.wait_count("auth", 150, 20)
        size = os.path.getsize(log)
        c.check(tt.wait_for(lambda: [r["offset"] for r in tt.read_registry(wd.data) or []
                                     if r["path"] == log] == [size], 10),
                "invalid record: the registry advances past the refused lines to the end",
                str(tt.read_registry(wd.data)))
        n_dead = ht.metric(port, "logferry_dead_letter_events_total", "bus")
        rc = agent.stop()
        c.check(rc == 0, "invalid record: the agent keeps running and stops with exit 0", f"rc {rc}")
    finally:
        if agent.alive():
            agent.stop()
    dead = ht.dead_letters(wd.data, "bus")
    msgs = [ev["message"] for ev in kt.events(mc.dump("auth", os.path.join(wd.root, "a.dump")))]
    dmsgs = [d["event"]["message"] for d in dead]
    c.check(len(dead) == n_dead and dead and
            all(d["status"] == INVALID_RECORD and "INVALID_RECORD"
                in d["reason"] for d in dead),
            "the dead letters hold the refused events with status and reason, as counted",
            f"{len(dead)} records, metric {n_dead}")
    c.check(set(dmsgs) <= set(refused), "only lines of the refused request are dead-lettered",
            str(sorted(set(dmsgs) - set(refused))[:5]))
    c.check(sorted(msgs + dmsgs) == sorted(warm + refused + later),
            "every line is delivered or dead-lettered, exactly once",
            f"{len(msgs)} delivered + {len(dmsgs)} dead of {len(warm + refused + later)}")


def main():
    c = tt.Checks()
    wd = tt.Workdir("kafka-errors")
    mc = kt.MockCluster(wd)
    try:
        retriable_errors(c, wd, mc)
        slow_brokers(c, wd, mc)
        fatal_error(c, wd, mc)
        too_large(c, wd, mc)
        invalid_record(c, wd, mc)
    finally:
        mc.close()
        wd.cleanup()
    c.finish()


if __name__ == "__main__":
    main()
