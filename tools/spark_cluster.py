"""The Spark connector on a Spark standalone cluster (one master, two workers, executors in their
own JVMs and Python workers, all started from the pyspark install on 127.0.0.1), against a
magnetar broker and against an Apache Pulsar standalone (assembled from Maven Central by
tools/pulsar_reference.py, with its transaction coordinator on). The checks are
tests/spark/cluster_jobs.py's, run as a driver program per broker; the results table goes into
docs/SCALE-OUT.md. Heavy (five JVMs, and Pulsar's): not in CI; ``make spark-cluster-test``.

usage: python tools/spark_cluster.py [--work DIR] [--no-pulsar] [--count N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
# the brokers started here (child processes) run this checkout's magnetar too
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))

import pulsar_reference  # noqa: E402
from reference_table import write_marked_block  # noqa: E402
from tests.spark.cluster import SparkStandaloneCluster  # noqa: E402

from magnetar.testing import BrokerProcess  # noqa: E402

DOC = ROOT / "docs" / "SCALE-OUT.md"
BEGIN, END = "<!-- spark-cluster:begin -->", "<!-- spark-cluster:end -->"


def run_checks(cluster: SparkStandaloneCluster, service_url: str, http_url: str, work: Path, count: int,
               label: str, checks: str | None = None) -> list[dict]:
    """The driver program against one broker; its JSON lines."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}
    cmd = [sys.executable, "-m", "tests.spark.cluster_jobs", "--master", cluster.master_url, "--service-url",
           service_url, "--http-url", http_url, "--work", str(work / label), "--count", str(count),
           "--more", str(count // 4), *(["--checks", checks] if checks else [])]
    pulsar_reference.log(f"driver against {label}: {' '.join(cmd[3:])}")
    with open(work / f"driver-{label}.log", "wb") as err:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=err, timeout=3600, check=False)
    results = []
    for line in proc.stdout.decode().splitlines():
        if line.startswith("{"):
            results.append(json.loads(line))
            pulsar_reference.log(line)
    if not results:
        results.append({"check": "driver", "ok": False, "error": f"exit {proc.returncode}, see {work}"})
    return results


def describe(result: dict) -> str:
    """One table cell: ok / FAILED and the counts."""
    counts = ", ".join(f"{k} {v}" for k, v in result.items() if k not in ("check", "ok"))
    counts = " ".join(counts.split()).replace("|", "/")[:300]  # one table cell
    return f"{'ok' if result['ok'] else 'FAILED'} ({counts})"


def _stored_rows(text: str) -> list[tuple[str, str, str]]:
    """The rows of the table already in the document (a run with --checks replaces only its own)."""
    if BEGIN not in text:
        return []
    rows = []
    for line in text[text.index(BEGIN): text.index(END)].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) in (3, 4) and cells[0] not in ("broker", "---"):
            rows.append((cells[0], cells[1], cells[2], cells[3] if len(cells) == 4 else "an earlier run"))
    return rows  # type: ignore[return-value]


def write_table(rows: list[tuple[str, str, str]], version: str, workers: int) -> None:
    """The results table, between its markers in docs/SCALE-OUT.md: this run's rows, and the rows of
    earlier runs for checks this one did not run (their run time in the last column)."""
    text = DOC.read_text()
    now = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
    def key(broker: str, check: str) -> tuple[str, str]:
        return broker, check.split(",")[0].split(" (")[0]  # "streaming read, restarted ..." = "streaming read"

    fresh = {key(b, c) for b, c, _ in rows}
    merged = [(b, c, r, when) for b, c, r, when in _stored_rows(text)  # type: ignore[misc]
              if key(b, c) not in fresh]
    merged += [(b, c, r, now) for b, c, r in rows]
    merged.sort(key=lambda row: (row[0] != "magnetar", row[0]))
    lines = [BEGIN, "Run by `tools/spark_cluster.py`: Spark standalone (pyspark's distribution: a master and "
             f"{workers} workers of 1 core, executors of 512 MB, driver in its own process), against magnetar and "
             f"Apache Pulsar {version} standalone, one machine.", "", "| broker | check | result | run |",
             "|---|---|---|---|", *(f"| {b} | {c} | {r} | {when} |" for b, c, r, when in merged), END]
    write_marked_block(DOC, BEGIN, END, lines, "The Spark connector on a Spark cluster")


def main(argv: list[str]) -> int:
    """Start the cluster and the brokers one after the other, run the checks, write the table."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", type=Path, default=Path("/tmp/magnetar-pulsar-reference"))
    p.add_argument("--no-pulsar", action="store_true", help="only magnetar")
    p.add_argument("--count", type=int, default=20_000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--checks", help="comma-separated checks of tests/spark/cluster_jobs.py (default: all)")
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the brokers and the cluster on the way out
    base = Path(tempfile.mkdtemp(prefix="magnetar-spark-cluster-"))
    rows: list[tuple[str, str, str]] = []
    jar = next((args.work / "lib").glob("pulsar-broker-[0-9]*.jar"), None)
    version = jar.stem.removeprefix("pulsar-broker-") if jar is not None else "-"
    cluster = SparkStandaloneCluster(base / "spark", workers=args.workers).start()
    pulsar_reference.log(f"Spark standalone at {cluster.master_url}, {args.workers} workers")
    try:
        (base / "magnetar").mkdir()
        broker = BrokerProcess(base / "magnetar" / "data", args=("--fsync", "never")).start()
        try:
            for r in run_checks(cluster, broker.service_url, broker.http_url, base, args.count, "magnetar",
                                args.checks):
                rows.append(("magnetar", r["check"], describe(r)))
        finally:
            broker.stop()
        if not args.no_pulsar:
            lib = pulsar_reference.assemble(args.work)
            pulsar_reference.PULSAR_SETTINGS["transactionCoordinatorEnabled"] = "true"
            home = args.work / "spark-cluster-pulsar"
            shutil.rmtree(home, ignore_errors=True)
            pulsar = pulsar_reference.PulsarStandalone(lib, home)
            pulsar.start()
            version = pulsar.version()
            try:
                for r in run_checks(cluster, pulsar.service_url, pulsar.http_url, base, args.count, "pulsar",
                                args.checks):
                    rows.append((f"Apache Pulsar {version}", r["check"], describe(r)))
            finally:
                pulsar.stop()
    finally:
        cluster.stop()
    for broker_name, check, result in rows:
        print(f"{broker_name:>22}  {check}: {result}")
    write_table(rows, version, args.workers)
    return 0 if all(r.startswith("ok") for _, _, r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
