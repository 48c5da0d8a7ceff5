"""magnetar's client and the official client on the same topics: each reads what the other wrote,
with batching, every compression codec and chunking."""

from __future__ import annotations

import hashlib
import random

import pulsar
import pytest

from magnetar.client import Client, CompressionType, InitialPosition

from .conftest import RECEIVE_MS

CODECS = [
    (CompressionType.NONE, pulsar.CompressionType.NONE),
    (CompressionType.LZ4, pulsar.CompressionType.LZ4),
    (CompressionType.ZLIB, pulsar.CompressionType.ZLib),
    (CompressionType.ZSTD, pulsar.CompressionType.ZSTD),
    (CompressionType.SNAPPY, pulsar.CompressionType.SNAPPY),
]
MiB = 1024 * 1024


def _payloads(n: int) -> list[bytes]:
    return [(b"cross-client %d " % i) * (1 + i % 30) for i in range(n)]


@pytest.mark.parametrize("batching", [False, True], ids=["single", "batched"])
@pytest.mark.parametrize("codecs", CODECS, ids=[c.name for c, _ in CODECS])
def test_ours_produce_official_consumes(client: Client, official: pulsar.Client, topic: str, codecs: tuple, batching: bool) -> None:
    ours_codec, _ = codecs
    consumer = official.subscribe(topic, "official", initial_position=pulsar.InitialPosition.Earliest)
    producer = client.create_producer(topic, compression_type=ours_codec, batching_enabled=batching, batching_max_publish_delay_ms=50)
    payloads = _payloads(40)
    for i, p in enumerate(payloads):
        producer.send_async(p, None, partition_key=f"k{i % 4}", properties={"i": str(i)}, event_timestamp=1000 + i)
    producer.flush()
    got = [consumer.receive(RECEIVE_MS) for _ in payloads]
    assert [m.data() for m in got] == payloads
    assert [m.partition_key() for m in got] == [f"k{i % 4}" for i in range(40)]
    assert [m.properties() for m in got] == [{"i": str(i)} for i in range(40)]
    assert [m.event_timestamp() for m in got] == [1000 + i for i in range(40)]
    if batching:
        assert any(m.message_id().batch_index() > 0 for m in got)
    for m in got:
        consumer.acknowledge(m)


@pytest.mark.parametrize("batching", [False, True], ids=["single", "batched"])
@pytest.mark.parametrize("codecs", CODECS, ids=[c.name for c, _ in CODECS])
def test_official_produces_ours_consume(client: Client, official: pulsar.Client, topic: str, codecs: tuple, batching: bool) -> None:
    _, their_codec = codecs
    consumer = client.subscribe(topic, "ours", initial_position=InitialPosition.Earliest)
    producer = official.create_producer(
        topic, compression_type=their_codec, batching_enabled=batching, batching_max_publish_delay_ms=50
    )
    payloads = _payloads(40)
    for i, p in enumerate(payloads):
        producer.send_async(p, None, partition_key=f"k{i % 4}", properties={"i": str(i)}, event_timestamp=1000 + i)
    producer.flush()
    got = [consumer.receive(RECEIVE_MS) for _ in payloads]
    assert [m.data() for m in got] == payloads
    assert [m.partition_key() for m in got] == [f"k{i % 4}" for i in range(40)]
    assert [m.properties() for m in got] == [{"i": str(i)} for i in range(40)]
    assert [m.event_timestamp() for m in got] == [1000 + i for i in range(40)]
    assert all(m.producer_name() == producer.producer_name() for m in got)
    if batching:
        assert any(m.message_id().batch_index > 0 for m in got)
    for m in got:
        consumer.acknowledge(m)


def test_chunked_messages_both_ways(client: Client, official: pulsar.Client, topic: str) -> None:
    big_ours = random.Random(3).randbytes(11 * MiB + 5)
    big_theirs = random.Random(4).randbytes(7 * MiB)
    official_consumer = official.subscribe(topic, "official", initial_position=pulsar.InitialPosition.Earliest)
    our_consumer = client.subscribe(topic, "ours", initial_position=InitialPosition.Earliest)
    ours = client.create_producer(topic, chunking_enabled=True, compression_type=CompressionType.ZSTD)
    theirs = official.create_producer(topic, chunking_enabled=True, batching_enabled=False, send_timeout_millis=20_000)
    ours.send(big_ours, properties={"from": "magnetar"})
    theirs.send(big_theirs, properties={"from": "official"})
    for consumer, receive in ((official_consumer, official_consumer.receive), (our_consumer, our_consumer.receive)):
        first, second = receive(RECEIVE_MS), receive(RECEIVE_MS)
        assert first.properties() == {"from": "magnetar"} and second.properties() == {"from": "official"}
        assert hashlib.sha256(first.data()).digest() == hashlib.sha256(big_ours).digest()
        assert hashlib.sha256(second.data()).digest() == hashlib.sha256(big_theirs).digest()
        consumer.acknowledge(first)
        consumer.acknowledge(second)
