#!/usr/bin/env python3
"""The local receivers of the integration tests, driven for benchmarks: one generated file
(~100-byte lines) and, per output, a receiver started and stopped by PID that counts what
arrived (http_receiver.py, es_receiver.py, the Loki push receiver, librdkafka's mock
cluster, a real rsyslogd over TCP, the stand-in HEC, the stand-in OpenTelemetry Collector
otlp_collector.py and the stand-in S3 s3_standin.py). output_icount.py runs logferry
--once under callgrind into them; they are Python (but rsyslogd and the mock cluster), so
they bound events/s: the CPU comparisons beside the peers are output_bench.py's, into the
C sink.

    rx = RECEIVERS[kind](root, kind); cfg = config(root, log, rx.output(comp, in_flight))
    ... logferry -c cfg --once ...; rx.count(); rx.close()
"""
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

FORMS = {  # output: the compressions it offers
    "http": ["zstd", "gzip", "none"],
    "elasticsearch": ["gzip", "none"],
    "loki": ["gzip", "none"],
    "kafka": ["zstd", "gzip", "none"],
    "syslog": ["none"],
    "splunk_hec": ["gzip", "none"],
    "splunk_hec_ack": ["gzip"],
    "otlp": ["zstd", "gzip", "none"],
    "s3": ["zstd", "gzip", "none"],
}


def generate(path, lines):
    rng = random.Random(7)
    words = "request served user id session cache miss hit upstream latency ms bytes ok".split()
    with open(path, "w") as f:
        for i in range(lines):
            msg = " ".join(rng.choice(words) for _ in range(8))
            f.write((f"2026-12-01T01:02:{i % 60:02d}.{i % 1000:03d}Z INFO [w-{i % 16:02d}] "
                     f"{i:08d} {msg} " + "x" * 99)[:99] + "\n")


def config(root, log, output_yaml):
    return config_outputs(root, log, f"  - {output_yaml}\n")


def config_outputs(root, log, outputs, extra="", shutdown_timeout="30s"):
    """ROOT/bench.yml: one input following LOG, OUTPUTS (YAML list items, each line ending
    in a newline), no metrics listener, and EXTRA (top-level keys) after."""
    path = os.path.join(root, "bench.yml")
    with open(path, "w") as f:
        f.write(f"""data_dir: {root}/data
shutdown_timeout: {shutdown_timeout}
inputs:
  - id: bench
    paths: ["{log}"]
outputs:
{outputs}metrics: {{listen: ""}}
{extra}""")
    return path


class Http:
    """http_receiver.py or es_receiver.py, one per run; count() reads what was stored."""

    def __init__(self, root, kind):
        import httptest as ht
        self.kind = kind
        script = {"elasticsearch": "es_receiver.py",
                  "otlp": "otlp_collector.py"}.get(kind, "http_receiver.py")
        self.rx = ht.Receiver(os.path.join(root, "rx"), script=script)
        self.ht = ht

    def output(self, comp, mif):
        path = {"http": "/ingest", "elasticsearch": "/", "loki": "", "otlp": "/v1/logs"}[self.kind]
        return (f"{{name: out, type: {self.kind}, url: \"{self.rx.url(path)}\", "
                f"compression: {comp}, max_in_flight: {mif}}}")

    def count(self):
        if self.kind == "elasticsearch":
            return len(self.ht.read_jsonl(os.path.join(self.rx.dir, "docs.jsonl")))
        if self.kind == "loki":  # one push per line: count its entries
            return sum(len(s["values"]) for push in self.rx.accepted() for s in push["streams"])
        if self.kind == "otlp":  # the collector counts each request's records
            return sum(r.get("records", 0) for r in self.rx.requests() if r["status"] == 200)
        return sum(r.get("lines", 0) for r in self.rx.requests() if r["status"] == 200)

    def close(self):
        self.rx.stop()


class Kafka:
    def __init__(self, root, kind):
        import kafkatest as kt
        import tailtest as tt
        wd = tt.Workdir("bench-kafka", base=root)
        self.mc = kt.MockCluster(wd)
        self.kt = kt

    def output(self, comp, mif):
        brokers = ", ".join(f"\"{b}\"" for b in self.mc.brokers)
        return (f"{{name: out, type: kafka, brokers: [{brokers}], topic: bench, "
                f"compression: {comp}, max_in_flight: {mif}}}")

    def count(self):
        return self.mc.count("bench")

    def close(self):
        self.mc.close()


class Syslog:
    def __init__(self, root, kind):
        import rsyslogtest as rt
        self.port = rt.free_port()
        self.rs = rt.Rsyslog(root, tcp_port=self.port)
        self.rs.start()

    def output(self, comp, mif):
        return (f"{{name: out, type: syslog, address: \"127.0.0.1:{self.port}\", "
                f"protocol: tcp, max_in_flight: {mif}}}")

    def count(self):
        return self.rs.count()

    def close(self):
        self.rs.stop()


class Hec:
    """hec_receiver.py; splunk_hec_ack: with indexer acknowledgement on both sides (acks
    polled every 100 ms, answered at once)."""

    def __init__(self, root, kind):
        import hectest
        self.ack = kind == "splunk_hec_ack"
        self.rx = hectest.Hec(os.path.join(root, "rx"), "bench-token", ack=self.ack)

    def output(self, comp, mif):
        ack = ", ack: true, ack_interval: 100ms" if self.ack else ""
        return (f"{{name: out, type: splunk_hec, url: \"{self.rx.url('')}\", "
                f"token: bench-token, compression: {comp}, max_in_flight: {mif}{ack}}}")

    def count(self):
        return sum(r.get("events", 0) for r in self.rx.requests() if r["status"] == 200)

    def close(self):
        self.rx.stop()


class S3:
    """s3_standin.py (every request's signature checked with botocore; objects are few, so
    its share is small): objects put every second or at 8 MiB."""

    def __init__(self, root, kind):
        import s3test
        self.s3 = s3test
        self.store = s3test.Store(os.path.join(root, "store"))

    def output(self, comp, mif):
        s3 = self.s3
        return (f"{{name: out, type: s3, bucket: {s3.BUCKET}, region: {s3.REGION}, "
                f"endpoint: \"{self.store.url()}\", access_key_id: {s3.AKID}, "
                f"secret_access_key: \"{s3.SECRET}\", compression: {comp}, "
                f"object_interval: 1s, max_in_flight: {mif}}}")

    def count(self):
        return len(self.s3.messages(self.store))

    def close(self):
        self.store.stop()


RECEIVERS = {"http": Http, "elasticsearch": Http, "loki": Http, "kafka": Kafka,
             "syslog": Syslog, "splunk_hec": Hec, "splunk_hec_ack": Hec, "otlp": Http,
             "s3": S3}
