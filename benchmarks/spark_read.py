"""Spark connector benchmark: batch read and write rows/s against a broker-less ceiling, in one run.

- read: ``spark.read.format("pulsar")`` of N messages of SIZE bytes (a topic of 2 partitions,
  produced with magnetar's client, batching on) into the ``noop`` sink;
- ceiling: the same data source code turning the same number of generated messages into the
  same Arrow batches, with no broker (:class:`GeneratedSource`): what Spark and the
  connector's Python side cost without any network or client work. Goal: read >= 0.5 of it;
- write: N rows (``value`` binary of SIZE bytes and a ``__key``) with ``df.write.format("pulsar")``,
  next to the same DataFrame written to a Python data source that drops the rows (the write
  side's ceiling).

After a warm-up of both paths, rounds alternate (pulsar, ceiling, ...); the best round of each counts. Results go to
benchmarks/results/spark_read.json.

usage: python benchmarks/spark_read.py [--count N] [--size BYTES] [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

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


class _Id:
    __slots__ = ("ledger_id", "entry_id", "batch_index", "batch_size")

    def __init__(self, entry: int, index: int) -> None:
        self.ledger_id = 1
        self.entry_id = entry
        self.batch_index = index
        self.batch_size = 1000


class _Message:
    """What the connector reads of a message, generated."""

    __slots__ = ("_data", "_id", "_key")

    def __init__(self, data: bytes, i: int) -> None:
        self._data = data
        self._id = _Id(i // 1000, i % 1000)
        self._key = f"k{i % 100}"

    def data(self) -> bytes:
        return self._data

    def is_null_value(self) -> bool:
        return False

    def partition_key(self) -> str:
        return self._key

    def has_key(self) -> bool:
        return True

    def message_id(self) -> _Id:
        return self._id

    def publish_timestamp(self) -> int:
        return 1_700_000_000_000

    def event_timestamp(self) -> int:
        return 0

    def properties(self) -> dict:
        return {}

    def schema_version(self) -> bytes:
        return b""


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
        from magnetar.spark.options import ClientSettings

        plan = ReadPlan(ClientSettings("pulsar://unused:1"), ValueFormat(), self.schema, True, 1000)
        first, last = partition.value
        batcher = _Batcher(plan, "persistent://public/default/generated-partition-0", 0, None)
        payload = b"x" * self.size
        for lo in range(first, last, ROWS_PER_BATCH):
            hi = min(last, lo + ROWS_PER_BATCH)
            msgs = [_Message(payload, i) for i in range(lo, hi)]
            yield batcher.build(msgs, [m.message_id() for m in msgs])


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    n, size = args.count, args.size

    import magnetar.spark

    tmp = tempfile.TemporaryDirectory()
    broker = BrokerProcess(Path(tmp.name) / "data", args=("--log-level", "WARNING"))
    broker.start()
    try:
        for topic in ("bench-read", "bench-write"):
            req = urllib.request.Request(
                f"{broker.http_url}/admin/v2/persistent/public/default/{topic}/partitions", data=b"2", method="PUT",
                headers={"Content-Type": "application/json"},
            )
            urllib.request.urlopen(req).close()
        produce_rate = produce(broker.service_url, "bench-read", n, size)
        print(f"produced {n} messages of {size} bytes at {produce_rate:,.0f} msg/s", flush=True)

        spark = magnetar.spark.local_session(
            "spark-bench", "local[2]", **{"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "2g"}
        )
        spark.dataSource.register(GeneratedSource)
        spark.dataSource.register(DropSource)

        def read_pulsar() -> None:
            df = spark.read.format("pulsar").option("service.url", broker.service_url).option("topic", "bench-read").load()
            df.write.format("noop").mode("overwrite").save()

        def read_generated() -> None:
            df = spark.read.format("generated").option("count", str(n)).option("size", str(size)).load()
            df.write.format("noop").mode("overwrite").save()

        frame = spark.range(n, numPartitions=2).selectExpr(
            f"cast(repeat('x', {size}) as binary) as value", "concat('k', cast(id % 100 as string)) as __key"
        )

        def write_pulsar() -> None:
            frame.write.mode("append").format("pulsar").option("service.url", broker.service_url).option("topic", "bench-write").save()

        def write_drop() -> None:
            frame.write.mode("append").format("drop").save()

        # warm-up of both paths: JVM code, Python workers, the broker's page cache
        spark.read.format("generated").option("count", "20000").option("size", str(size)).load().count()
        read_pulsar()

        runs: dict[str, list[float]] = {"read_pulsar": [], "read_ceiling": [], "write_pulsar": [], "write_ceiling": []}
        for r in range(args.rounds):
            runs["read_pulsar"].append(n / timed(read_pulsar))
            runs["read_ceiling"].append(n / timed(read_generated))
            runs["write_ceiling"].append(n / timed(write_drop))
            if r == 0:  # one write round: every round adds N messages to the topic
                runs["write_pulsar"].append(n / timed(write_pulsar))
            print(f"round {r}: " + ", ".join(f"{k} {v[-1]:,.0f} rows/s" for k, v in runs.items() if v), flush=True)
        written = spark.read.format("pulsar").option("service.url", broker.service_url).option("topic", "bench-write").load().count()
        spark.stop()
    finally:
        broker.stop()
        tmp.cleanup()
    if written != n:
        print(f"error: the write test wrote {written} rows, not {n}", file=sys.stderr)
        sys.exit(1)

    best = {k: max(v) for k, v in runs.items()}
    result = {
        "benchmark": "magnetar.spark batch read into noop / batch write, against broker-less ceilings",
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, Python {platform.python_version()}",
        "spark": __import__("pyspark").__version__,
        "master": "local[2]",
        "topic_partitions": 2,
        "rows": n,
        "message_bytes": size,
        "rounds": args.rounds,
        "produce_msg_per_s": produce_rate,
        "runs_rows_per_s": runs,
        "read_rows_per_s": best["read_pulsar"],
        "read_ceiling_rows_per_s": best["read_ceiling"],
        "read_ratio": best["read_pulsar"] / best["read_ceiling"],
        # each round's read against the ceiling measured right after it (robust to load changes)
        "read_ratio_per_round": [p / c for p, c in zip(runs["read_pulsar"], runs["read_ceiling"], strict=True)],
        "write_rows_per_s": best["write_pulsar"],
        "write_ceiling_rows_per_s": best["write_ceiling"],
        "write_ratio": best["write_pulsar"] / best["write_ceiling"],
    }
    out = HERE / "results" / "spark_read.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
