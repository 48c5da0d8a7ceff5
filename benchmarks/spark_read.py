"""Spark connector benchmark: batch read and write rows/s against broker-less ceilings, in one run.

- read: ``spark.read.format("pulsar")`` of N messages of SIZE bytes (a topic of 2 partitions,
  produced with magnetar's client, batching on) into the ``noop`` sink;
- read ceiling: the same data source code turning the same number of generated entries (batches
  of 1,000 messages with keys, as the producer writes them) into the same Arrow batches, with no
  broker and no client (:class:`GeneratedSource`): what Spark and the connector's Python side
  cost without any network or client work. Goal: read >= 0.7 of it;
- write: N rows (``value`` binary of SIZE bytes and a ``__key``) with ``df.write.format("pulsar")``
  into a topic of 2 partitions (a new topic each round), next to the same DataFrame written to a
  Python data source that converts the rows to Python lists and drops them (the write side's
  ceiling). Goal: write >= 0.25 of it.

After a warm-up of every path, rounds alternate (pulsar read, read ceiling, write ceiling, pulsar
write); the best round of each counts, and each round's ratio is kept. Results go to
benchmarks/results/spark_read.json under ``--label`` (other labels there are kept: "before" and
"after" a change, side by side).

usage: python benchmarks/spark_read.py [--count N] [--size BYTES] [--rounds R] [--label NAME]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)

from magnetar.spark.reading import ROWS_PER_BATCH, ReadPlan, _Batcher
from magnetar.spark.schemas import ValueFormat
from magnetar.testing import BrokerProcess

HERE = Path(__file__).resolve().parent
#: messages per generated entry (the producer's batchingMaxMessages below)
ENTRY_MESSAGES = 1000


class GeneratedSource(DataSource):
    """The pulsar source's Arrow building fed with generated messages (no broker)."""

    @classmethod
    def name(cls) -> str:
        return "generated"

    def schema(self):  # noqa: ANN201
        return ValueFormat().spark_schema()

    def reader(self, schema):  # noqa: ANN001, ANN201
        return GeneratedReader(schema, int(self.options["count"]), int(self.options["size"]))


class GeneratedReader(DataSourceReader):
    def __init__(self, schema, count: int, size: int) -> None:  # noqa: ANN001
        self.schema = schema
        self.count = count
        self.size = size

    def partitions(self) -> list[InputPartition]:
        half = self.count // 2
        return [InputPartition((0, half)), InputPartition((half, self.count))]

    def read(self, partition: InputPartition):  # noqa: ANN201
        from magnetar.client.bulk import Entry, encode_batch_payload
        from magnetar.protocol.schema import MessageMetadata
        from magnetar.spark.options import ClientSettings

        plan = ReadPlan(ClientSettings("pulsar://unused:1"), ValueFormat(), self.schema, True, 1000)
        first, last = partition.value
        batcher = _Batcher(plan, "persistent://public/default/generated-partition-0", 0, None)
        per = ENTRY_MESSAGES
        # one entry as the producer writes it (1,000 messages, keys k0..k99), delivered again and again
        body = encode_batch_payload([b"x" * self.size] * per, [f"k{i % 100}" for i in range(per)])
        meta = MessageMetadata(producer_name="generated", sequence_id=0, publish_time=1_700_000_000_000,
                               num_messages_in_batch=per)
        for lo in range(first, last, ROWS_PER_BATCH):
            hi = min(last, lo + ROWS_PER_BATCH)
            entries = []
            for at in range(lo, hi, per):
                entry = Entry(1, at // per, meta, body)
                entry.stop = min(per, hi - at)
                entries.append(entry)
            yield batcher.build(entries)


class DropSource(DataSource):
    """A sink that converts what it gets to Python rows as the pulsar sink does, then drops it."""

    @classmethod
    def name(cls) -> str:
        return "drop"

    def writer(self, schema, overwrite):  # noqa: ANN001, ANN201
        return DropWriter()


class DropWriter(DataSourceArrowWriter):
    def write(self, iterator):  # noqa: ANN001, ANN201
        n = 0
        for batch in iterator:
            values = batch.column(batch.schema.get_field_index("value")).to_pylist()
            keys = batch.column(batch.schema.get_field_index("__key")).to_pylist()
            for _v, _k in zip(values, keys, strict=True):
                n += 1
        return WriterCommitMessage()


def produce(url: str, topic: str, count: int, size: int) -> float:
    """Produce ``count`` messages with magnetar's client; returns msg/s."""
    from magnetar.client import Client

    client = Client(url)
    try:
        producer = client.create_producer(topic, batching_max_messages=1000, max_pending_messages=20_000, block_if_queue_full=True)
        payload = b"x" * size
        t = time.perf_counter()
        for i in range(count):
            producer.send_async(payload, None, partition_key=f"k{i % 100}")
        producer.flush()
        return count / (time.perf_counter() - t)
    finally:
        client.close()


def timed(fn) -> float:  # noqa: ANN001
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def partitioned(broker: BrokerProcess, topic: str, partitions: int = 2) -> None:
    """Create ``topic`` with ``partitions`` partitions."""
    req = urllib.request.Request(
        f"{broker.http_url}/admin/v2/persistent/public/default/{topic}/partitions", data=str(partitions).encode(),
        method="PUT", headers={"Content-Type": "application/json"},
    )
    urllib.request.urlopen(req).close()


def measure(spark: Any, url: str, broker: BrokerProcess, n: int, size: int, rounds: int) -> dict[str, list[float]]:
    """Alternating rounds of the four paths (rows/s); every pulsar write is checked afterwards."""

    def read_pulsar() -> None:
        df = spark.read.format("pulsar").option("service.url", url).option("topic", "bench-read").load()
        df.write.format("noop").mode("overwrite").save()

    def read_generated() -> None:
        df = spark.read.format("generated").option("count", str(n)).option("size", str(size)).load()
        df.write.format("noop").mode("overwrite").save()

    frame = spark.range(n, numPartitions=2).selectExpr(
        f"cast(repeat('x', {size}) as binary) as value", "concat('k', cast(id % 100 as string)) as __key"
    )

    def write_pulsar(topic: str) -> None:
        frame.write.mode("append").format("pulsar").option("service.url", url).option("topic", topic).save()

    def write_drop() -> None:
        frame.write.mode("append").format("drop").save()

    # warm-up of every path: JVM code, Python workers, the broker's page cache
    spark.read.format("generated").option("count", "20000").option("size", str(size)).load().count()
    read_pulsar()
    write_drop()
    partitioned(broker, "bench-write-warm-up")
    write_pulsar("bench-write-warm-up")

    runs: dict[str, list[float]] = {"read_pulsar": [], "read_ceiling": [], "write_pulsar": [], "write_ceiling": []}
    for r in range(rounds):
        runs["read_pulsar"].append(n / timed(read_pulsar))
        runs["read_ceiling"].append(n / timed(read_generated))
        runs["write_ceiling"].append(n / timed(write_drop))
        partitioned(broker, f"bench-write-{r}")  # a new topic per round: each holds exactly one write
        runs["write_pulsar"].append(n / timed(lambda r=r: write_pulsar(f"bench-write-{r}")))
        print(f"round {r}: " + ", ".join(f"{k} {v[-1]:,.0f} rows/s" for k, v in runs.items()), flush=True)
    for r in range(rounds):
        written = spark.read.format("pulsar").option("service.url", url).option("topic", f"bench-write-{r}").load().count()
        if written != n:
            raise SystemExit(f"error: write round {r} wrote {written} rows, not {n}")
    return runs


def summary(runs: dict[str, list[float]], n: int, size: int, rounds: int, produce_rate: float) -> dict[str, Any]:
    """The result record of one run."""
    best = {k: max(v) for k, v in runs.items()}

    def per_round(a: str, b: str) -> list[float]:
        # each round's figure against the ceiling measured next to it (robust to load changes)
        return [p / c for p, c in zip(runs[a], runs[b], strict=True)]

    return {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, Python {platform.python_version()}, load average"
                   f" {os.getloadavg()[0]:.1f} at the end",
        "spark": __import__("pyspark").__version__,
        "master": "local[2]",
        "topic_partitions": 2,
        "rows": n,
        "message_bytes": size,
        "rounds": rounds,
        "produce_msg_per_s": produce_rate,
        "runs_rows_per_s": runs,
        "read_rows_per_s": best["read_pulsar"],
        "read_ceiling_rows_per_s": best["read_ceiling"],
        "read_ratio": best["read_pulsar"] / best["read_ceiling"],
        "read_ratio_per_round": per_round("read_pulsar", "read_ceiling"),
        "write_rows_per_s": best["write_pulsar"],
        "write_ceiling_rows_per_s": best["write_ceiling"],
        "write_ratio": best["write_pulsar"] / best["write_ceiling"],
        "write_ratio_per_round": per_round("write_pulsar", "write_ceiling"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--label", default="after", help="key of this run in the results file")
    args = parser.parse_args()
    n, size = args.count, args.size

    import magnetar.spark

    tmp = tempfile.TemporaryDirectory()
    broker = BrokerProcess(Path(tmp.name) / "data", args=("--log-level", "WARNING"))
    broker.start()
    try:
        partitioned(broker, "bench-read")
        produce_rate = produce(broker.service_url, "bench-read", n, size)
        print(f"produced {n} messages of {size} bytes at {produce_rate:,.0f} msg/s", flush=True)
        spark = magnetar.spark.local_session(
            "spark-bench", "local[2]", **{"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "2g"}
        )
        spark.dataSource.register(GeneratedSource)
        spark.dataSource.register(DropSource)
        try:
            runs = measure(spark, broker.service_url, broker, n, size, args.rounds)
        finally:
            spark.stop()
    finally:
        broker.stop()
        tmp.cleanup()

    out = HERE / "results" / "spark_read.json"
    out.parent.mkdir(exist_ok=True)
    try:
        results = json.loads(out.read_text())
    except (OSError, ValueError):
        results = {}
    if "runs" not in results:  # the file's older single-run layout
        results = {"runs": {}}
    results["benchmark"] = "magnetar.spark batch read into noop / batch write, against broker-less ceilings"
    results["runs"][args.label] = summary(runs, n, size, args.rounds, produce_rate)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results["runs"][args.label], indent=2))


if __name__ == "__main__":
    main()
