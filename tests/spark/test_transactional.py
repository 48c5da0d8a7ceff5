"""The exactly-once sink (``pulsar.producer.transactional=true``): a task killed after sending half
its rows, a query restarted after it, and a micro-batch run again after its commit, on a topic
without deduplication: every row is read back exactly once. And the driver's commit records."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from magnetar.client import Client
from magnetar.spark.options import ClientSettings, PulsarOptionError
from magnetar.spark.transactional import CommitRecords, plan_transactions
from magnetar.testing import BrokerProcess

from .helpers import reader_options


def _fail_once(marker: str) -> Callable[[Any], Any]:
    """A mapInArrow function: the first task to run it passes half of its first batch on, waits for
    it to be sent, then fails; every other run passes everything."""

    def run(batches: Any) -> Any:
        for batch in batches:
            if batch.num_rows >= 2 and not os.path.exists(marker):
                open(marker, "w").close()
                yield batch.slice(0, batch.num_rows // 2)
                time.sleep(1.5)
                raise RuntimeError("task killed after sending half of its rows")
            yield batch

    return run


def _stream(spark: Any, broker: BrokerProcess, source: str, sink: str, checkpoint: Path, marker: str) -> Any:
    df = spark.readStream.format("pulsar").options(
        **reader_options(broker, source, startingOffsets="earliest", maxEntriesPerTrigger="10")
    ).load().selectExpr("value", "__key").mapInArrow(_fail_once(marker), "value binary, __key string")
    q = (
        df.writeStream.format("pulsar").option("service.url", broker.service_url).option("topic", sink)
        .option("pulsar.producer.transactional", "true").option("pulsar.producer.transactionTimeoutMs", "20000")
        .option("pulsar.producer.batchingMaxMessages", "2")
        .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    )
    try:
        q.awaitTermination(300)
    except Exception:  # noqa: BLE001 - a failed query: the test reads q.exception()
        pass
    assert not q.isActive
    return q


def _values(spark: Any, broker: BrokerProcess, topic: str) -> list[str]:
    rows = spark.read.format("pulsar").options(**reader_options(broker, topic)).load().collect()
    return sorted(bytes(r.value).decode() for r in rows)


def test_killed_task_restarted_query_and_replayed_batch_write_each_row_once(
    spark: Any, broker: BrokerProcess, clients: Callable[..., Client], tmp_path: Path
) -> None:
    source = f"persistent://public/default/txn-sink-in-{uuid.uuid4().hex[:8]}"
    sink = f"persistent://public/default/txn-sink-out-{uuid.uuid4().hex[:8]}"
    producer = clients().create_producer(source, batching_enabled=False)
    for i in range(30):
        producer.send_async(f"r{i}".encode(), None, partition_key=f"k{i}")
    producer.flush()
    checkpoint, marker = tmp_path / "ck", str(tmp_path / "killed-once")

    for _ in range(3):  # (a loaded machine can fail a query before the task ran: Spark's worker start-up)
        failed = _stream(spark, broker, source, sink, checkpoint, marker)
        if os.path.exists(marker):
            break
    assert failed.exception() is not None and os.path.exists(marker)
    assert _values(spark, broker, sink) == []  # the killed task's half is not visible

    for _ in range(3):  # restarted until it finishes: each restart replays what was not committed
        restarted = _stream(spark, broker, source, sink, checkpoint, marker)
        if restarted.exception() is None:
            break
    assert restarted.exception() is None
    expected = sorted(f"r{i}" for i in range(30))
    assert _values(spark, broker, sink) == expected

    # as if the query died after committing micro-batch 2 to Pulsar but before Spark recorded it
    batches = sorted(int(p.stem) for p in (checkpoint / "pulsar-transactions").glob("*.json"))
    last = batches[-1]
    assert json.loads((checkpoint / "pulsar-transactions" / f"{last}.json").read_text())["state"] == "committed"
    for name in (str(last), f".{last}.crc"):
        os.remove(checkpoint / "commits" / name)
    for _ in range(3):
        replayed = _stream(spark, broker, source, sink, checkpoint, marker)
        if replayed.exception() is None:
            break
    assert replayed.exception() is None
    assert [p["batchId"] for p in replayed.recentProgress if p["numInputRows"]] == [last]
    assert _values(spark, broker, sink) == expected  # sent again, never committed twice


def test_plan_and_records(tmp_path: Path) -> None:
    settings = ClientSettings("pulsar://localhost:6650")
    producer, same, plan = plan_transactions({"batching_max_messages": 5}, settings, None, streaming=True)
    assert (producer, same, plan) == ({"batching_max_messages": 5}, settings, None)
    with pytest.raises(PulsarOptionError, match="needs the checkpointLocation"):
        plan_transactions({"transactional": True}, settings, None, streaming=True)
    with pytest.raises(PulsarOptionError, match="local checkpointLocation"):
        plan_transactions({"transactional": True}, settings, "s3a://bucket/ck", streaming=True)
    producer, enabled, plan = plan_transactions(
        {"transactional": True, "transaction_timeout_ms": 9000, "batching_max_messages": 5}, settings,
        f"file://{tmp_path}/ck", streaming=True,
    )
    assert producer == {"batching_max_messages": 5} and enabled.client == {"enable_transaction": True}
    assert plan is not None and (plan.timeout_ms, plan.record_dir) == (9000, f"{tmp_path}/ck/pulsar-transactions")
    records = CommitRecords(str(tmp_path / "records"))
    assert records.read(3) is None
    records.write(3, "committing", [(0, 1), (0, 2)])
    records.write(3, "committed", [(0, 1), (0, 2)])
    assert records.read(3) == {"state": "committed", "txns": [[0, 1], [0, 2]]}
    assert sorted(os.listdir(tmp_path / "records")) == ["3.json"]


def test_the_driver_aborts_the_transaction_of_an_attempt_whose_process_died(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    """A task records its transaction as open before it sends; one that dies (no commit message, no
    abort of its own) holds the topic's later messages only until the driver commits the micro-batch,
    which aborts it, not until its transaction times out (60 s here)."""
    import types

    import pulsar

    from magnetar.spark.transactional import commit_micro_batch, open_transaction

    sink = f"persistent://public/default/txn-dead-{uuid.uuid4().hex[:8]}"
    _, settings, plan = plan_transactions(
        {"transactional": True, "transaction_timeout_ms": 60_000}, ClientSettings(broker.service_url),
        str(tmp_path / "ck"), streaming=True)
    assert plan is not None
    official = pulsar.Client(broker.service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    dead_client, task_client = settings.make(), settings.make()
    try:
        observer = official.subscribe(sink, "observer", initial_position=pulsar.InitialPosition.Earliest)
        dead = open_transaction(dead_client, plan, 7)
        dead_client.create_producer(sink).send(b"dead", txn=dead)
        dead_client.close()  # the process died: its transaction neither committed nor aborted
        kept = open_transaction(task_client, plan, 7)
        task_client.create_producer(sink).send(b"kept", txn=kept)
        task_client.create_producer(sink).send(b"plain-after")
        with pytest.raises(pulsar.Timeout):  # everything waits behind the dead attempt's transaction
            observer.receive(timeout_millis=1000)
        records = CommitRecords(plan.record_dir)
        assert records.opened_txns(7) == sorted([dead.id(), kept.id()])
        started = time.monotonic()
        commit_micro_batch(settings, plan, 7, [types.SimpleNamespace(txn=kept.id())])
        got = [observer.receive(timeout_millis=10_000).data() for _ in range(2)]
        assert got == [b"kept", b"plain-after"] and time.monotonic() - started < 20
        with pytest.raises(pulsar.Timeout):
            observer.receive(timeout_millis=1000)
        assert records.opened_txns(7) == [] and records.read(7) == {"state": "committed", "txns": [list(kept.id())]}
    finally:
        task_client.close()
        official.close()
