"""Helpers of the splunk_hec output's tests (t/integration/hec_*.py): the stand-in HEC
(hec_receiver.py) started and stopped by PID, and what it stored."""
import json
import os
import sys
import urllib.request

import httptest as ht

HERE = os.path.dirname(os.path.abspath(__file__))


class Hec(ht.Receiver):
    """One hec_receiver.py process accepting token; its records live in DIR (kept across
    restarts, on the same port)."""

    def __init__(self, directory, token, ack=False, port=0):
        self.token = token
        self.ack = ack
        super().__init__(directory, port=port, script="hec_receiver.py")

    def start(self):
        import subprocess
        argv = [sys.executable, os.path.join(HERE, self.script), "--dir", self.dir,
                "--port", str(self.port), "--token", self.token]
        if self.ack:
            argv.append("--ack")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the stand-in HEC did not start")
        self.port = int(line)

    def control(self, **kw):
        q = "&".join(f"{k}={v}" for k, v in kw.items())
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/_ctl?{q}", timeout=5) as r:
            r.read()

    def stored(self):
        """The stored records ({"obj", "channel", "ack_id"}), in the order stored."""
        return ht.read_jsonl(os.path.join(self.dir, "events.jsonl"))

    def messages(self):
        return [r["obj"]["event"]["message"] for r in self.stored()]


def lines(tag, n):
    return [f"{tag} line {i:05d} " + "x" * (i % 40) for i in range(n)]


def config(wd, hec, keys, batch="flush_interval: 100ms, max_events: 100", spool=False, **kw):
    """A config of one splunk_hec output named collector reading wd's *.log; spool: with
    the disk spool on."""
    if spool:
        batch += "}, spool: {enabled: true, max_bytes: 64MiB"
    return ht.write_config(wd, [f"url: {hec.url('')}"] + keys, out_type="splunk_hec",
                           batch=batch, **kw)
