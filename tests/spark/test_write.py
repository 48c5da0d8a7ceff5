"""The sink: batch and streaming writes read back exactly, records, metadata, effectively once."""

from __future__ import annotations

import datetime
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from magnetar.client import Client, MessageId
from magnetar.testing import BrokerProcess

from .helpers import admin, create_partitioned, reader_options


def _read(spark: Any, broker: BrokerProcess, topic: str) -> Any:
    return spark.read.format("pulsar").options(**reader_options(broker, topic)).load()


def test_batch_write_of_values_with_metadata(spark: Any, broker: BrokerProcess, clients: Callable[..., Client], topic: str) -> None:
    create_partitioned(broker, topic, 2)
    df = spark.range(300, numPartitions=3).selectExpr(
        "cast(concat('v', cast(id as string)) as binary) as value",
        "concat('k', cast(id % 7 as string)) as __key",
        "timestamp_millis(1700000000000 + id) as __eventTime",
        "map('n', cast(id as string)) as __messageProperties",
        "id as __partition",  # a source column: ignored
    )
    df.write.mode("append").format("pulsar").option("service.url", broker.service_url).option("topic", topic) \
        .option("pulsar.producer.compressionType", "LZ4").save()
    rows = _read(spark, broker, topic).collect()
    assert len(rows) == 300
    by_value = {bytes(r.value).decode(): r for r in rows}
    assert set(by_value) == {f"v{i}" for i in range(300)}
    for i in (0, 1, 150, 299):
        r = by_value[f"v{i}"]
        assert r["__key"] == f"k{i % 7}"
        assert r["__messageProperties"] == {"n": str(i)}
        assert r["__eventTime"] == datetime.datetime.fromtimestamp((1_700_000_000_000 + i) / 1000, datetime.UTC).replace(tzinfo=None)
    # keyed rows go to the partition the Java client would pick for the key
    from magnetar.client import partition_for_key

    assert all(r["__partition"] == partition_for_key(r["__key"], 2) for r in rows)


def test_batch_write_of_records_round_trips_typed(spark: Any, broker: BrokerProcess, topic: str) -> None:
    df = spark.range(50).selectExpr(
        "id", "concat('name-', cast(id as string)) as name", "cast(id as double) * 0.5 as score", "id % 2 = 0 as even",
        "array(cast(id as string), 'x') as tags", "named_struct('a', cast(id as int), 'b', 'z') as inner",
        "timestamp_millis(1700000000000 + id * 1000) as at", "map('n', id, 'm', id * 2) as counts",
        "date_add(date'2024-01-01', cast(id as int)) as day", "cast(id as string) as __key",
    )
    df.write.mode("append").format("pulsar").option("service.url", broker.service_url).option("topic", topic).save()
    back = _read(spark, broker, topic)
    columns = ["id", "name", "score", "even", "tags", "inner", "at", "counts", "day"]
    assert back.columns[:9] == columns
    got = sorted(back.select(*columns, "__key").collect(), key=lambda r: r.id)
    want = sorted(df.select(*columns, "__key").collect(), key=lambda r: r.id)
    assert got == want


def test_write_to_an_avro_topic_uses_its_schema(spark: Any, broker: BrokerProcess, clients: Callable[..., Client], topic: str) -> None:
    from dataclasses import dataclass

    from magnetar.client import AvroSchema

    @dataclass
    class Reading:
        sensor: str
        reading: float
        note: str | None = None

    client = clients()
    producer = client.create_producer(topic, schema=AvroSchema(Reading))
    producer.send(Reading("s0", 1.5))
    producer.close()
    spark.createDataFrame([("s1", 2.5), ("s2", 3.5)], "sensor string, reading double") \
        .write.mode("append").format("pulsar").option("service.url", broker.service_url).option("topic", topic).save()
    rows = sorted((r.sensor, r.reading, r.note) for r in _read(spark, broker, topic).collect())
    assert rows == [("s0", 1.5, None), ("s1", 2.5, None), ("s2", 3.5, None)]
    from pyspark.errors import PySparkException

    with pytest.raises(PySparkException, match="column 'extra' is not a field of the topic's schema"):
        spark.createDataFrame([("s3", 1.0, 1)], "sensor string, reading double, extra int") \
            .write.mode("append").format("pulsar").option("service.url", broker.service_url).option("topic", topic).save()


def test_topic_column_routes_rows_and_the_option_wins(spark: Any, broker: BrokerProcess) -> None:
    base = f"persistent://public/default/route-{uuid.uuid4().hex[:8]}"
    df = spark.range(20).selectExpr("cast(cast(id as string) as binary) as value", f"concat('{base}-', cast(id % 2 as string)) as __topic")
    df.write.mode("append").format("pulsar").option("service.url", broker.service_url).save()
    assert _read(spark, broker, f"{base}-0").count() == 10
    assert _read(spark, broker, f"{base}-1").count() == 10
    df.write.mode("append").format("pulsar").option("service.url", broker.service_url).option("topic", f"{base}-x").save()
    assert _read(spark, broker, f"{base}-x").count() == 20


def test_sink_planning_errors(spark: Any, broker: BrokerProcess, topic: str) -> None:
    from pyspark.errors import PySparkException

    def write(df: Any, **options: str) -> None:
        df.write.mode("append").format("pulsar").options(**{"service.url": broker.service_url, **options}).save()

    with pytest.raises(PySparkException, match="needs a topic option"):
        write(spark.range(1).selectExpr("cast('a' as binary) as value"))
    with pytest.raises(PySparkException, match="column value must be binary or string"):
        write(spark.range(1).selectExpr("id as value"), topic=topic)
    with pytest.raises(PySparkException, match=r"column\(s\) id would not be written"):
        write(spark.range(1).selectExpr("cast('a' as binary) as value", "id"), topic=topic)
    with pytest.raises(PySparkException, match="unknown option 'pulsar.producer.nosuch'"):
        write(spark.range(1).selectExpr("cast('a' as binary) as value"), topic=topic, **{"pulsar.producer.nosuch": "1"})


def _stream_copy(spark: Any, broker: BrokerProcess, source: str, sink: str, checkpoint: Path) -> Any:
    df = spark.readStream.format("pulsar").options(
        **reader_options(broker, source, startingOffsets="earliest", maxEntriesPerTrigger="10")
    ).load()
    q = (
        df.selectExpr("value", "__key").writeStream.format("pulsar").option("service.url", broker.service_url)
        .option("topic", sink).option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    )
    q.awaitTermination(180)
    assert q.exception() is None
    return q


def _send(client: Client, topic: str, n: int) -> None:
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(n):
        producer.send_async(f"m{i}".encode(), None, partition_key=f"k{i}")
    producer.flush()
    producer.close()


def test_streaming_write_reads_back_exactly(
    spark: Any, broker: BrokerProcess, clients: Callable[..., Client], topic: str, tmp_path: Path
) -> None:
    sink = topic + "-out"
    _send(clients(), topic, 25)
    q = _stream_copy(spark, broker, topic, sink, tmp_path / "ck")
    assert [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]] == [10, 10, 5]
    rows = _read(spark, broker, sink).collect()
    assert sorted(bytes(r.value).decode() for r in rows) == sorted(f"m{i}" for i in range(25))
    assert all(r["__key"] == "k" + bytes(r.value).decode()[1:] for r in rows)


def test_effectively_once_sink_drops_a_replayed_micro_batch(
    spark: Any, broker: BrokerProcess, clients: Callable[..., Client], tmp_path: Path
) -> None:
    namespace = f"public/dedup-{uuid.uuid4().hex[:6]}"
    admin(broker.http_url, "PUT", f"/admin/v2/namespaces/{namespace}", {})
    admin(broker.http_url, "POST", f"/admin/v2/namespaces/{namespace}/deduplication", True)
    source = f"persistent://{namespace}/source"
    sink = f"persistent://{namespace}/sink"
    _send(clients(), source, 30)
    checkpoint = tmp_path / "ck"
    q = _stream_copy(spark, broker, source, sink, checkpoint)
    assert [p["batchId"] for p in q.recentProgress] == [0, 1, 2]
    assert _read(spark, broker, sink).count() == 30

    # as if the query died after writing batch 2 but before committing it: Spark runs it again
    for name in ("2", ".2.crc"):
        os.remove(checkpoint / "commits" / name)
    q = _stream_copy(spark, broker, source, sink, checkpoint)
    replayed = [p for p in q.recentProgress if p["batchId"] == 2]
    assert replayed and replayed[0]["numInputRows"] == 10  # batch 2 was written a second time
    rows = _read(spark, broker, sink).collect()
    values = [bytes(r.value).decode() for r in rows]
    assert len(values) == 30 and sorted(values) == sorted(f"m{i}" for i in range(30))
    # the producers were named after the query and its task, and their sequence ids follow the batches
    stats = admin(broker.http_url, "GET", sink.replace("persistent://", "/admin/v2/persistent/") + "/stats")
    assert stats["msgInCounter"] == 30
    first = MessageId.deserialize(bytes(rows[0]["__messageId"]))
    assert first.ledger_id >= 0
