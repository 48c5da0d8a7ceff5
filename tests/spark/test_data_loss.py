"""failOnDataLoss: data deleted by the broker before the query read it.

A broker of this module only: 4 KiB segments, no retention, a lifecycle check every second.
Once a durable subscription acknowledged everything, the broker deletes every sealed segment,
including entries the streaming query has not read yet.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from magnetar.client import Client, InitialPosition, MessageId
from magnetar.testing import BrokerProcess

from .helpers import stream_to_parquet


@pytest.fixture(scope="module")
def lossy_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(
        tmp_path_factory.mktemp("lossy-broker") / "data",
        args=("--fsync", "never"),
        env={"MAGNETAR_SEGMENT_MAX_BYTES": "4096", "MAGNETAR_SEGMENT_MIN_ROLLOVER_MINUTES": "0",
             "MAGNETAR_LIFECYCLE_CHECK_INTERVAL_SECONDS": "1",
             "MAGNETAR_CURSOR_PERSIST_DELAY_SECONDS": "0.1"},
    ).start()
    yield proc
    proc.stop()


def _first(client: Client, topic: str) -> tuple[int, int]:
    """(ledger, entry) of the oldest message the broker still has."""
    reader = client.create_reader(topic, MessageId.earliest)
    try:
        mid = reader.read_next(5000).message_id()
        return mid.ledger_id, mid.entry_id
    finally:
        reader.close()


def test_fail_on_data_loss_both_ways(spark: Any, lossy_broker: BrokerProcess, tmp_path: Path) -> None:
    from pyspark.errors import PySparkException

    topic = "persistent://public/default/lossy"
    client = Client(lossy_broker.service_url, operation_timeout_seconds=15)
    try:
        # a durable subscription holds the data while the query reads the first part
        holder = client.subscribe(topic, "holder", initial_position=InitialPosition.Earliest)
        producer = client.create_producer(topic, batching_enabled=False)
        payload = b"x" * 300
        for i in range(10):
            producer.send(payload + str(i).encode())
        options = {"service.url": lossy_broker.service_url, "topic": topic, "startingOffsets": "earliest"}
        select = ["cast(cast(substr(value, 301) as string) as int) as i"]
        stream_to_parquet(spark, options, tmp_path / "out", tmp_path / "ck", select)
        for i in range(10, 60):
            producer.send(payload + str(i).encode())
        # everything acknowledged: the sealed segments go, unread entries 10.. among them
        for _ in range(60):
            holder.acknowledge(holder.receive(5000))
        deadline = time.monotonic() + 30
        while _first(client, topic)[1] <= 10:
            assert time.monotonic() < deadline, "the broker did not delete the acknowledged segments"
            time.sleep(0.3)
        ledger, first = _first(client, topic)

        with pytest.raises(PySparkException) as err:
            stream_to_parquet(spark, options, tmp_path / "out", tmp_path / "ck", select)
        text = str(err.value)
        assert f"data loss in {topic}: entries {ledger}:10..{ledger}:{first - 1} ({first - 10} entries)" in text
        assert "failOnDataLoss=false" in text

        # the same checkpoint, failOnDataLoss=false: a warning, and what is left is read
        stream_to_parquet(spark, {**options, "failOnDataLoss": "false"}, tmp_path / "out", tmp_path / "ck", select)
        got = sorted(r.i for r in spark.read.parquet(str(tmp_path / "out")).collect())
        assert got == list(range(10)) + list(range(first, 60))

        # a batch read from a position that is gone fails the same way
        with pytest.raises(PySparkException, match="data loss"):
            spark.read.format("pulsar").options(**{**options, "startingOffsets": f'{{"{topic}": "{ledger}:5"}}'}).load().collect()
        assert spark.read.format("pulsar").options(**options).load().count() == 60 - first
        producer.close()
        holder.close()
    finally:
        client.close()
