"""Batch reads: partitioned topics, columns, positions, times, patterns, schemas, planning errors."""

from __future__ import annotations

import datetime
import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from magnetar.client import Client, MessageId
from magnetar.testing import BrokerProcess

from .helpers import create_partitioned, reader_options


def _read(spark: Any, **options: str) -> Any:
    return spark.read.format("pulsar").options(**options).load()


def test_batch_read_of_a_partitioned_topic(spark: Any, broker: BrokerProcess, clients: Callable[..., Client], topic: str) -> None:
    create_partitioned(broker, topic, 3)
    client = clients()
    producer = client.create_producer(topic, batching_max_messages=50)
    sent: dict[str, tuple[str, dict, int]] = {}
    for i in range(600):
        key = f"k{i % 17}"
        props = {"i": str(i), "even": str(i % 2 == 0)} if i % 3 else {}
        event = 1_700_000_000_000 + i if i % 5 else None
        producer.send_async(f"payload-{i}".encode(), None, partition_key=key, properties=props, event_timestamp=event)
        sent[f"payload-{i}"] = (key, props, event)
    producer.flush()
    producer.close()

    df = _read(spark, **reader_options(broker, topic))
    assert df.columns == ["value", "__key", "__topic", "__partition", "__messageId", "__publishTime", "__eventTime",
                          "__messageProperties"]
    rows = df.collect()
    assert len(rows) == 600
    by_value = {bytes(r.value).decode(): r for r in rows}
    assert set(by_value) == set(sent)
    for value, (key, props, event) in sent.items():
        r = by_value[value]
        assert r["__key"] == key
        assert r["__messageProperties"] == props
        assert r["__topic"] == f"{topic}-partition-{r['__partition']}"
        if event is None:
            assert r["__eventTime"] is None
        else:
            assert r["__eventTime"] == datetime.datetime.fromtimestamp(event / 1000, datetime.UTC).replace(tzinfo=None)
        mid = MessageId.deserialize(bytes(r["__messageId"]))
        assert mid.partition == r["__partition"] and mid.batch_index >= 0
    # the same key always lands on the same partition, and each partition reads in order
    from pyspark.sql import functions as F  # noqa: N812

    per_key = df.groupBy("__key").agg(F.countDistinct("__partition")).collect()
    assert all(row[1] == 1 for row in per_key)
    counts = dict(df.groupBy("__partition").count().collect())
    assert sum(counts.values()) == 600 and len(counts) == 3
    # publish times are real timestamps of this run
    assert all(abs((r["__publishTime"] - datetime.datetime.utcnow()).total_seconds()) < 300 for r in rows[:5])


def test_offsets_and_times_bound_a_batch_read(spark: Any, broker: BrokerProcess, clients: Callable[..., Client], topic: str) -> None:
    client = clients()
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(f"m{i}".encode()) for i in range(10)]
    time.sleep(0.05)
    middle = int(time.time() * 1000)
    time.sleep(0.05)
    ids += [producer.send(f"m{i}".encode()) for i in range(10, 20)]
    producer.close()

    def values(**extra: str) -> list[str]:
        return sorted((bytes(r.value).decode() for r in _read(spark, **reader_options(broker, topic, **extra)).collect()),
                      key=lambda v: int(v[1:]))

    start = ids[5]
    end = ids[15]
    assert values(startingOffsets=json.dumps({topic: f"{start.ledger_id}:{start.entry_id}"}),
                  endingOffsets=json.dumps({topic: f"{end.ledger_id}:{end.entry_id}"})) == [f"m{i}" for i in range(5, 15)]
    # the Scala connector's form: serialized message ids as arrays of bytes
    assert values(startingOffsets=json.dumps({topic: list(start.serialize())})) == [f"m{i}" for i in range(5, 20)]
    assert values(startingTime=str(middle)) == [f"m{i}" for i in range(10, 20)]
    assert values(endingTime=str(middle)) == [f"m{i}" for i in range(10)]
    assert values(startingOffsets="earliest", endingOffsets="latest") == [f"m{i}" for i in range(20)]


def test_a_batch_read_stops_at_the_end_fixed_when_planned(spark: Any, broker: BrokerProcess, clients: Callable[..., Client], topic: str) -> None:
    client = clients()
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(100):
        producer.send_async(f"m{i}".encode(), None)
    producer.flush()
    df = _read(spark, **reader_options(broker, topic))
    assert df.count() == 100
    for i in range(100, 130):
        producer.send_async(f"m{i}".encode(), None)
    producer.flush()
    producer.close()
    # a DataFrame is planned once: it keeps reading the range fixed then; a new one sees more
    assert df.count() == 100
    assert _read(spark, **reader_options(broker, topic)).count() == 130
    # large ranges are read by several tasks
    split = _read(spark, **reader_options(broker, topic, maxEntriesPerSplit="40"))
    assert split.rdd.getNumPartitions() == 4 and split.count() == 130


def test_topics_list_and_pattern(spark: Any, broker: BrokerProcess, clients: Callable[..., Client]) -> None:
    prefix = f"pat-{uuid.uuid4().hex[:8]}"
    client = clients()
    create_partitioned(broker, f"persistent://public/default/{prefix}-p", 2)
    for name, n in ((f"{prefix}-a", 3), (f"{prefix}-b", 4), (f"{prefix}-p", 6)):
        producer = client.create_producer(name)
        for i in range(n):
            producer.send_async(f"{name}-{i}".encode(), None, partition_key=str(i))
        producer.flush()
        producer.close()
    listed = _read(spark, **{"service.url": broker.service_url, "topics": f"{prefix}-a,{prefix}-b"})
    assert listed.count() == 7
    pattern = _read(spark, **{"service.url": broker.service_url, "topicsPattern": f"persistent://public/default/{prefix}-.*"})
    topics = dict(pattern.groupBy("__topic").count().collect())
    assert sum(topics.values()) == 13
    assert {t.rsplit("/", 1)[1] for t in topics} == {f"{prefix}-a", f"{prefix}-b", f"{prefix}-p-partition-0", f"{prefix}-p-partition-1"}


def test_string_and_primitive_schemas(spark: Any, broker: BrokerProcess, clients: Callable[..., Client], topic: str) -> None:
    from magnetar.client import StringSchema

    client = clients()
    producer = client.create_producer(topic, schema=StringSchema())
    for word in ("héllo", "wörld"):
        producer.send(word)
    producer.close()
    df = _read(spark, **reader_options(broker, topic))
    assert df.schema["value"].dataType.simpleString() == "string"
    assert sorted(r.value for r in df.collect()) == ["héllo", "wörld"]


def _official_records() -> tuple[Any, Any]:
    from pulsar.schema import Array, Boolean, Double, Integer, Long, Map, Record, String

    class Address(Record):
        city = String()
        zip = Integer()

    class Customer(Record):
        id = Long()
        name = String()
        score = Double()
        vip = Boolean()
        tags = Array(String())
        counters = Map(Long())
        address = Address()

    return Customer, Address


@pytest.mark.parametrize("kind", ["json", "avro"])
def test_schema_typed_reads_of_records(spark: Any, broker: BrokerProcess, topic: str, kind: str) -> None:
    import pulsar
    from pulsar.schema import AvroSchema, JsonSchema

    customer, address = _official_records()
    schema = JsonSchema(customer) if kind == "json" else AvroSchema(customer)
    client = pulsar.Client(broker.service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producer = client.create_producer(topic, schema=schema)
        for i in range(20):
            producer.send(
                customer(id=i, name=f"name-{i}", score=i / 4, vip=i % 3 == 0, tags=[f"t{i}", "x"],
                         counters={"a": i, "b": 2 * i}, address=address(city=f"city-{i % 4}", zip=1000 + i) if i % 2 else None),
                partition_key=f"c{i}",
            )
        producer.close()
    finally:
        client.close()

    df = _read(spark, **reader_options(broker, topic))
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert types["id"] == "bigint" and types["name"] == "string" and types["score"] == "double"
    assert types["vip"] == "boolean" and types["tags"] == "array<string>" and types["counters"] == "map<string,bigint>"
    assert types["address"] == "struct<city:string,zip:int>"
    rows = sorted(df.collect(), key=lambda r: r.id)
    assert [r.id for r in rows] == list(range(20))
    r = rows[5]
    assert (r.name, r.score, r.vip, r.tags, r.counters) == ("name-5", 1.25, False, ["t5", "x"], {"a": 5, "b": 10})
    assert (r.address.city, r.address.zip) == ("city-1", 1005)
    assert rows[4].address is None and rows[4]["__key"] == "c4"
    # SQL over typed columns
    df.createOrReplaceTempView("customers_" + kind)
    assert spark.sql(f"SELECT sum(address.zip) FROM customers_{kind} WHERE vip").collect()[0][0] == 1003 + 1009 + 1015


def test_planning_errors_name_the_option(spark: Any, broker: BrokerProcess, topic: str) -> None:
    from pyspark.errors import PySparkException

    with pytest.raises(PySparkException, match="unknown option 'nosuchoption'"):
        _read(spark, **reader_options(broker, topic, noSuchOption="1")).collect()
    with pytest.raises(PySparkException, match="startingOffsets and startingTime conflict"):
        _read(spark, **reader_options(broker, topic, startingOffsets="earliest", startingTime="1")).collect()
    with pytest.raises(PySparkException, match="maxEntriesPerTrigger is for streaming queries"):
        _read(spark, **reader_options(broker, topic, maxEntriesPerTrigger="5")).collect()
    with pytest.raises(PySparkException, match="endingOffsets is for batch queries"):
        spark.readStream.format("pulsar").options(**reader_options(broker, topic, endingOffsets="latest")).load() \
            .writeStream.format("noop").start().awaitTermination(30)
