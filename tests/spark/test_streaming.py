"""Streaming reads: restarts from the checkpoint, read limits, AvailableNow, discovery, subscriptions."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from magnetar.client import Client
from magnetar.testing import BrokerProcess

from .helpers import admin, create_partitioned, reader_options, stream_to_parquet


def _values(spark: Any, out: Path) -> list[str]:
    return [r.v for r in spark.read.parquet(str(out)).collect()]


def _send(client: Client, topic: str, values: range, **options: Any) -> None:
    producer = client.create_producer(topic, **options)
    for i in values:
        producer.send_async(f"m{i}".encode(), None, partition_key=f"k{i % 5}")
    producer.flush()
    producer.close()


def test_two_runs_on_one_checkpoint_lose_and_duplicate_nothing(
    spark: Any, broker: BrokerProcess, clients: Callable[..., Client], topic: str, tmp_path: Path
) -> None:
    create_partitioned(broker, topic, 2)
    client = clients()
    _send(client, topic, range(0, 500), batching_max_messages=30)
    options = reader_options(broker, topic, startingOffsets="earliest")
    select = ["cast(value as string) as v", "__partition", "__messageId"]
    q1 = stream_to_parquet(spark, options, tmp_path / "out", tmp_path / "ck", select)
    assert sum(p["numInputRows"] for p in q1.recentProgress) == 500
    first_end = q1.lastProgress["sources"][0]["endOffset"]
    assert first_end.startswith('{"v": 1, "offsets": {"') and f'"{topic}-partition-0": "' in first_end

    # more data while the query is down, some of it in the middle of a batch entry
    _send(client, topic, range(500, 1250), batching_max_messages=30)
    q2 = stream_to_parquet(spark, options, tmp_path / "out", tmp_path / "ck", select)
    assert sum(p["numInputRows"] for p in q2.recentProgress) == 750
    values = _values(spark, tmp_path / "out")
    assert len(values) == 1250
    assert sorted(values, key=lambda v: int(v[1:])) == [f"m{i}" for i in range(1250)]

    # a third run with nothing new reads nothing
    q3 = stream_to_parquet(spark, options, tmp_path / "out", tmp_path / "ck", select)
    assert sum(p["numInputRows"] for p in q3.recentProgress) == 0


def test_available_now_with_max_entries_per_trigger(
    spark: Any, broker: BrokerProcess, clients: Callable[..., Client], topic: str, tmp_path: Path
) -> None:
    create_partitioned(broker, topic, 2)
    client = clients()
    # no batching: one entry per message, so that entries and rows count alike
    _send(client, topic, range(25), batching_enabled=False)
    options = reader_options(broker, topic, startingOffsets="earliest", maxEntriesPerTrigger="10")
    q = stream_to_parquet(spark, options, tmp_path / "out", tmp_path / "ck", ["cast(value as string) as v"])
    sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    assert sizes == [10, 10, 5]
    assert sorted(_values(spark, tmp_path / "out"), key=lambda v: int(v[1:])) == [f"m{i}" for i in range(25)]
    # batched entries count as one entry each
    _send(client, topic, range(25, 225), batching_max_messages=20, batching_max_publish_delay_ms=1000)
    q = stream_to_parquet(spark, options, tmp_path / "out", tmp_path / "ck", ["cast(value as string) as v"])
    assert sum(p["numInputRows"] for p in q.recentProgress) == 200
    assert len(_values(spark, tmp_path / "out")) == 225


def test_new_topics_and_partitions_are_picked_up(
    spark: Any, broker: BrokerProcess, clients: Callable[..., Client], tmp_path: Path
) -> None:
    prefix = f"persistent://public/default/disc-{uuid.uuid4().hex[:8]}"
    client = clients()
    create_partitioned(broker, f"{prefix}-a", 1)
    _send(client, f"{prefix}-a", range(10))
    options = {"service.url": broker.service_url, "topicsPattern": f"{prefix}-.*", "startingOffsets": "latest"}
    select = ["cast(value as string) as v", "__topic"]
    # startingOffsets=latest: what is there before the query starts is not read
    stream_to_parquet(spark, options, tmp_path / "out", tmp_path / "ck", select)
    _send(client, f"{prefix}-a", range(10, 15))
    # a new topic matching the pattern, and a new partition of the partitioned one: read from their start
    _send(client, f"{prefix}-b", range(100, 107))
    admin(broker.http_url, "POST", f"{prefix}-a".replace("persistent://", "/admin/v2/persistent/") + "/partitions", 2)
    _send(client, f"{prefix}-a-partition-1", range(200, 203))
    stream_to_parquet(spark, options, tmp_path / "out", tmp_path / "ck", select)
    got = {(r[0], r[1].rsplit("/", 1)[1]) for r in spark.read.parquet(str(tmp_path / "out")).select("v", "__topic").collect()}
    name = prefix.rsplit("/", 1)[1]
    expected = {(f"m{i}", f"{name}-a-partition-0") for i in range(10, 15)}
    expected |= {(f"m{i}", f"{name}-b") for i in range(100, 107)}
    expected |= {(f"m{i}", f"{name}-a-partition-1") for i in range(200, 203)}
    assert got == expected


def test_predefined_subscription_follows_the_commits(
    spark: Any, broker: BrokerProcess, clients: Callable[..., Client], topic: str, tmp_path: Path
) -> None:
    client = clients()
    _send(client, topic, range(40), batching_enabled=False)
    sub = "spark-progress"
    options = reader_options(broker, topic, startingOffsets="earliest", predefinedSubscription=sub, maxEntriesPerTrigger="15")
    stream_to_parquet(spark, options, tmp_path / "out", tmp_path / "ck", ["cast(value as string) as v"])
    stats_path = topic.replace("persistent://", "/admin/v2/persistent/") + "/stats"

    def backlog() -> int:
        return admin(broker.http_url, "GET", stats_path)["subscriptions"][sub]["msgBacklog"]

    # each committed micro-batch is acknowledged on the subscription, so the broker's retention sees
    # the query's progress; Spark commits a batch to its source when it starts the next one, so the
    # last batch of a run (15 + 15 + 10 here) stays in the backlog until the next run
    assert backlog() == 10
    _send(client, topic, range(40, 50), batching_enabled=False)
    assert backlog() == 20
    stream_to_parquet(spark, options, tmp_path / "out", tmp_path / "ck", ["cast(value as string) as v"])
    assert backlog() == 10
    assert len(_values(spark, tmp_path / "out")) == 50
