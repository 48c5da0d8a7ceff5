"""A Spark standalone cluster on this machine for the connector's cluster runs: one master and N
workers started from the pyspark install (``spark-class ...Master`` / ``...Worker``), bound to
127.0.0.1 on free ports, their logs and work directories under one directory.

Used by ``tools/spark_cluster.py`` (``make spark-cluster-test``); too slow for ``make test`` (a
master, two workers and the executors are five JVMs: minutes on a shared 2-core machine).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path

from magnetar.testing import free_port


def spark_home() -> Path:
    """The Spark distribution inside the pyspark package."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


class SparkStandaloneCluster:
    """A master and ``workers`` workers (``cores`` cores and ``memory`` each), stopped by :meth:`stop`."""

    def __init__(self, home: Path, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        self.home = home
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.port = free_port()
        self.ui_port = free_port()
        self.procs: list[subprocess.Popen] = []

    @property
    def master_url(self) -> str:
        """spark:// URL of the master."""
        return f"spark://127.0.0.1:{self.port}"

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP="127.0.0.1", SPARK_LOG_DIR=str(self.home / "logs"),
                   SPARK_WORKER_DIR=str(self.home / "work"), SPARK_NO_DAEMONIZE="1")
        return env

    def _spawn(self, log_name: str, *args: str) -> None:
        cmd = [str(spark_home() / "bin" / "spark-class"), *args]
        with open(self.home / log_name, "ab") as out:
            self.procs.append(subprocess.Popen(cmd, env=self._env(), stdout=out, stderr=subprocess.STDOUT,
                                               cwd=self.home))

    def state(self) -> dict:
        """The master's JSON status (workers, applications); {} while it does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as resp:
                return json.loads(resp.read())
        except (OSError, ValueError):
            return {}

    def start(self, timeout: float = 600.0) -> SparkStandaloneCluster:
        """Start the master, then the workers; wait until every worker is ALIVE."""
        self.home.mkdir(parents=True, exist_ok=True)
        self._spawn("master.out", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(self.port), "--webui-port", str(self.ui_port))
        deadline = time.monotonic() + timeout
        self._wait(lambda s: bool(s), deadline, "the master did not answer")
        for i in range(self.workers):
            self._spawn(f"worker-{i}.out", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                        "--webui-port", str(free_port()), "--cores", str(self.cores), "--memory", self.memory,
                        self.master_url)
        self._wait(lambda s: s.get("aliveworkers", 0) >= self.workers, deadline, "the workers did not register")
        return self

    def _wait(self, ready: object, deadline: float, what: str) -> None:
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self.procs):
                self.stop()
                raise RuntimeError(f"a Spark process exited; see {self.home}")
            if ready(self.state()):  # type: ignore[operator]
                return
            time.sleep(1)
        self.stop()
        raise RuntimeError(f"{what}; see {self.home}")

    def stop(self) -> None:
        """Stop the workers, then the master (SIGTERM, SIGKILL after 30 s)."""
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in reversed(self.procs):
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs = []
