"""The connector's checks on a Spark standalone cluster: a driver program, run in its own process
(a JVM holds one SparkContext) by ``tools/spark_cluster.py`` against one broker (magnetar or Apache
Pulsar). Prints one JSON line per check: ``{"check": ..., "ok": bool, ...counts}``.

1. batch read of a 4-partition topic of N keyed messages: N rows, N distinct values, the tasks
   ran in Python workers under the executors' JVMs (not the driver's);
2. streaming read (Trigger.AvailableNow) to Parquet, M more messages, the query restarted from
   its checkpoint: N + M rows, each value once;
3. batch write of N rows (at least once) read back: N rows, N distinct;
4. exactly-once write (``pulsar.producer.transactional=true``) on a topic without deduplication,
   its first task killed after sending half of its rows, the query restarted: N rows, each once.

usage: python -m tests.spark.cluster_jobs --master spark://.. --service-url pulsar://.. --http-url http://..
       --work DIR [--count N] [--more M] [--skip-transactions]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from magnetar.client import Client

from .helpers import admin


def _emit(check: str, ok: bool, **counts: Any) -> None:
    print(json.dumps({"check": check, "ok": ok, **counts}), flush=True)


def _session(master: str, src: str, executors: int) -> Any:
    import magnetar.spark

    spark = magnetar.spark.local_session("magnetar-cluster-check", master, **{
        "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
        "spark.executor.memory": "512m", "spark.executor.cores": "1", "spark.cores.max": str(executors),
        "spark.executorEnv.PYTHONPATH": src, "spark.sql.shuffle.partitions": "4",
        "spark.task.maxFailures": "4",
        # Python workers start slowly on a loaded machine (Spark waits 15 s for them by default)
        "spark.python.authenticate.socketTimeout": "300s", "spark.network.timeout": "600s",
    })
    deadline = time.monotonic() + 600
    while spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() < executors + 1:
        if time.monotonic() > deadline:
            raise RuntimeError("the executors did not register")
        time.sleep(1)
    return spark


def _produce(url: str, topic: str, start: int, count: int) -> None:
    client = Client(url, operation_timeout_seconds=60)
    try:
        producer = client.create_producer(topic, batching_enabled=True, block_if_queue_full=True)
        for i in range(start, start + count):
            producer.send_async(f"v{i}".encode(), None, partition_key=f"k{i % 97}")
        producer.flush()
    finally:
        client.close()


def _process_tree(_: Any) -> Any:
    """A mapInArrow function: one row per task with its Python worker's pid and its JVM ancestor."""
    import pyarrow as pa

    rows = 0
    for batch in _:
        rows += batch.num_rows
    pid, jvm = os.getpid(), ""
    parent = os.getppid()
    while parent > 1 and not jvm:
        try:
            cmd = Path(f"/proc/{parent}/cmdline").read_bytes().split(b"\0")
            stat = Path(f"/proc/{parent}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            break
        if any(b"CoarseGrainedExecutorBackend" in part for part in cmd):
            jvm = f"executor:{parent}"
        elif any(b"SparkSubmit" in part for part in cmd) or any(b"pyspark-shell" in part for part in cmd):
            jvm = f"driver:{parent}"
        parent = int(stat[1])
    yield pa.RecordBatch.from_pydict({"pid": [pid], "jvm": [jvm], "rows": [rows]})


def batch_read(spark: Any, opts: dict[str, str], topic: str, count: int) -> None:
    df = spark.read.format("pulsar").options(**opts, topic=topic).load()
    values = [bytes(r.value).decode() for r in df.select("value").collect()]
    tasks = df.select("value").mapInArrow(_process_tree, "pid long, jvm string, rows long").collect()
    jvms = sorted({t.jvm for t in tasks})
    in_executors = all(j.startswith("executor:") for j in jvms)
    ok = len(values) == count and set(values) == {f"v{i}" for i in range(count)} and in_executors
    _emit("batch read", ok, rows=len(values), distinct=len(set(values)), expected=count, tasks=len(tasks),
          python_workers=len({t.pid for t in tasks}), executor_jvms=len(jvms), driver_pid=os.getpid(),
          in_executors=in_executors)


def streaming_read(spark: Any, opts: dict[str, str], url: str, topic: str, count: int, more: int, work: Path) -> None:
    out, checkpoint = work / "stream-out", work / "stream-ck"

    starts = 0

    def run() -> int:
        # the driver's streaming source runner is a Python process Spark waits 10 s for (fixed): on a
        # loaded machine it may start later, the query fails before reading; it restarts from the checkpoint
        nonlocal starts
        rows = 0
        for attempt in range(4):
            starts += 1
            q = (spark.readStream.format("pulsar").options(**opts, topic=topic, startingOffsets="earliest").load()
                 .selectExpr("CAST(value AS STRING) AS v").writeStream.format("parquet").option("path", str(out))
                 .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
            with contextlib.suppress(Exception):
                q.awaitTermination(900)
            rows += sum(p["numInputRows"] for p in q.recentProgress)
            if q.exception() is None:
                return rows
            if attempt == 3 or "Python worker failed to connect back" not in str(q.exception()):
                raise q.exception()
        return rows

    first = run()
    _produce(url, topic, count, more)
    second = run()
    values = [r.v for r in spark.read.parquet(str(out)).collect()]
    ok = sorted(values) == sorted(f"v{i}" for i in range(count + more))
    _emit("streaming read, restarted from its checkpoint", ok, first_run=first, second_run=second, rows=len(values),
          distinct=len(set(values)), expected=count + more, query_starts=starts)


def _read_values(spark: Any, opts: dict[str, str], topic: str) -> list[str]:
    df = spark.read.format("pulsar").options(**opts, topic=topic).load()
    return [bytes(r.value).decode() for r in df.select("value").collect()]


def batch_write(spark: Any, opts: dict[str, str], count: int) -> None:
    sink = f"persistent://public/default/cluster-out-{uuid.uuid4().hex[:8]}"
    (spark.range(count, numPartitions=4).selectExpr("CONCAT('w', CAST(id AS STRING)) AS value")
     .write.format("pulsar").mode("append").options(**opts, topic=sink).save())
    values = _read_values(spark, opts, sink)
    ok = sorted(values) == sorted(f"w{i}" for i in range(count))
    _emit("batch write (at least once)", ok, rows=len(values), distinct=len(set(values)), expected=count)


def _fail_once(marker: str) -> Callable[[Any], Any]:
    def run(batches: Any) -> Any:
        for batch in batches:
            if batch.num_rows >= 2 and not os.path.exists(marker):
                open(marker, "w").close()
                yield batch.slice(0, batch.num_rows // 2)
                time.sleep(2)
                raise RuntimeError("task killed after sending half of its rows")
            yield batch

    return run


def exactly_once_write(spark: Any, opts: dict[str, str], count: int, work: Path) -> None:
    sink = f"persistent://public/default/cluster-txn-{uuid.uuid4().hex[:8]}"
    marker = str(work / "killed-once")
    df = (spark.range(count, numPartitions=4).selectExpr("CAST(CONCAT('x', CAST(id AS STRING)) AS BINARY) AS value")
          .mapInArrow(_fail_once(marker), "value binary"))
    (df.write.format("pulsar").mode("append").options(**opts, topic=sink)
     .option("pulsar.producer.transactional", "true").option("pulsar.producer.batchingMaxMessages", "100").save())
    values = _read_values(spark, opts, sink)
    ok = sorted(values) == sorted(f"x{i}" for i in range(count)) and os.path.exists(marker)
    _emit("exactly-once write (transactions), a task killed half-way", ok, rows=len(values),
          distinct=len(set(values)), expected=count, task_killed=os.path.exists(marker))


def main(argv: list[str]) -> int:
    """Run the checks; exit 0 when every one passed."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--master", required=True)
    p.add_argument("--service-url", required=True)
    p.add_argument("--http-url", required=True)
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--count", type=int, default=20_000)
    p.add_argument("--more", type=int, default=5_000)
    p.add_argument("--executors", type=int, default=2)
    p.add_argument("--skip-transactions", action="store_true")
    p.add_argument("--checks", help="comma-separated names among: batch read, streaming read, batch write, "
                                    "exactly-once write (default: all)")
    args = p.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    src = str(Path(__file__).resolve().parents[2] / "src")
    topic = f"persistent://public/default/cluster-in-{uuid.uuid4().hex[:8]}"
    admin(args.http_url, "PUT", topic.replace("persistent://", "/admin/v2/persistent/") + "/partitions", 4)
    _produce(args.service_url, topic, 0, args.count)
    spark = _session(args.master, src, args.executors)
    opts = {"service.url": args.service_url}
    checks: list[tuple[str, Callable[[], None]]] = [
        ("batch read", lambda: batch_read(spark, opts, topic, args.count)),
        ("streaming read", lambda: streaming_read(spark, opts, args.service_url, topic, args.count, args.more,
                                                  args.work)),
        ("batch write", lambda: batch_write(spark, opts, args.count)),
    ]
    if not args.skip_transactions:
        checks.append(("exactly-once write", lambda: exactly_once_write(spark, opts, args.count, args.work)))
    if args.checks:
        wanted = {c.strip() for c in args.checks.split(",")}
        checks = [(name, check) for name, check in checks if name in wanted]
    try:
        for name, check in checks:
            try:
                check()
            except Exception as exc:  # noqa: BLE001 - reported as the check's outcome
                _emit(name, False, error=f"{type(exc).__name__}: {str(exc)[:300]}")
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
