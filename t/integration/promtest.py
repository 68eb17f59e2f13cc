"""A real Prometheus for the integration tests (Debian's package prometheus): started on
127.0.0.1 with its own config and data directory under a test's work directory, scraping
the given targets every second, queried through its HTTP API, and stopped by PID. The
test that calls start() owns the process and must call stop(). Python standard library
only."""
import json
import os
import subprocess
import urllib.error
import urllib.parse
import urllib.request

import tailtest as tt


class Prometheus:
    """One prometheus process scraping targets (HOST:PORT strings) as job `logferry`."""

    def __init__(self, root, targets, rule_files=(), interval="1s"):
        self.port = tt.free_port()
        self.dir = os.path.join(root, "prometheus")
        os.makedirs(self.dir)
        conf = os.path.join(self.dir, "prometheus.yml")
        rules = "".join(f"\n  - {json.dumps(os.path.abspath(r))}" for r in rule_files)
        with open(conf, "w") as f:
            f.write(f"""global:
  scrape_interval: {interval}
  evaluation_interval: {interval}
rule_files:{rules or " []"}
scrape_configs:
  - job_name: logferry
    static_configs:
      - targets: {json.dumps(list(targets))}
""")
        self.log = open(os.path.join(self.dir, "stderr"), "wb")
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={conf}",
             f"--storage.tsdb.path={os.path.join(self.dir, 'data')}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        self.api = f"http://127.0.0.1:{self.port}/api/v1"

    def get(self, path, **params):
        """The decoded JSON of GET /api/v1/PATH?params; OSError when it does not answer
        (an HTTP error status is returned as its JSON body, as the API writes errors)."""
        url = self.api + path + ("?" + urllib.parse.urlencode(params) if params else "")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return json.loads(r.read().decode())
        except urllib.error.HTTPError as e:
            return json.loads(e.read().decode())

    def targets_up(self):
        try:
            active = self.get("/targets")["data"]["activeTargets"]
        except (OSError, ValueError, KeyError):
            return False
        return bool(active) and all(t["health"] == "up" for t in active)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
