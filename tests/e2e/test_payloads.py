"""Payloads: every compression codec with and without batching, large and oversized messages."""

from __future__ import annotations

import os

import pulsar
import pytest

from .helpers import RECEIVE_MS, assert_nothing_more

MiB = 1024 * 1024

CODECS = {
    "lz4": pulsar.CompressionType.LZ4,
    "zlib": pulsar.CompressionType.ZLib,
    "zstd": pulsar.CompressionType.ZSTD,
    "snappy": pulsar.CompressionType.SNAPPY,
}


def _payloads() -> list[bytes]:
    out = []
    for i in range(30):
        text = f"payload {i} ".encode() * (1 + i * 7)  # compressible
        noise = os.urandom(i * 13)  # not compressible
        out.append(text + noise)
    out.append(bytes(range(256)) * 64)
    # no empty payload here: the C++ client cannot inflate an empty ZLIB payload it deflated
    # itself ("uncompressed size: 0"); empty payloads are covered uncompressed elsewhere
    return out


@pytest.mark.parametrize("batching", [False, True], ids=["single", "batched"])
@pytest.mark.parametrize("codec", list(CODECS), ids=list(CODECS))
def test_compression_round_trip(client: pulsar.Client, topic: str, codec: str, batching: bool) -> None:
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(
        topic,
        compression_type=CODECS[codec],
        batching_enabled=batching,
        batching_max_messages=10,
        batching_max_publish_delay_ms=50,
    )
    payloads = _payloads()
    for p in payloads:
        producer.send_async(p, None)
    producer.flush()
    got = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in payloads]
    assert [m.data() for m in got] == payloads
    entries = {(m.message_id().ledger_id(), m.message_id().entry_id()) for m in got}
    if batching:
        assert len(entries) < len(payloads)
        assert any(m.message_id().batch_index() > 0 for m in got)
    else:
        assert len(entries) == len(payloads)
    # a reader decodes the stored (compressed) entries the same way
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert [reader.read_next(timeout_millis=RECEIVE_MS).data() for _ in payloads] == payloads


def test_large_messages_round_trip(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, send_timeout_millis=10_000)
    sizes = [1 * MiB, 3 * MiB, 5 * MiB - 4096]
    payloads = [os.urandom(n) for n in sizes]
    for p in payloads:
        producer.send(p)
    got = [consumer.receive(timeout_millis=RECEIVE_MS).data() for _ in payloads]
    assert [len(g) for g in got] == sizes
    assert got == payloads


def test_message_above_max_size_is_refused_and_producer_survives(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, send_timeout_millis=10_000)
    producer.send(b"before")
    with pytest.raises(pulsar.MessageTooBig):
        producer.send(os.urandom(5 * MiB + 1024))
    producer.send(b"after")
    assert [consumer.receive(timeout_millis=RECEIVE_MS).data() for _ in range(2)] == [b"before", b"after"]
    assert_nothing_more(consumer)


def test_size_limit_applies_to_the_compressed_message(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, compression_type=pulsar.CompressionType.LZ4)
    # 6 MiB uncompressed, a few KiB on the wire: the limit counts what is sent and stored
    big = b"0123456789abcdef" * (6 * MiB // 16)
    producer.send(big)
    producer.send(b"small")
    assert consumer.receive(timeout_millis=RECEIVE_MS).data() == big
    assert consumer.receive(timeout_millis=RECEIVE_MS).data() == b"small"
    assert_nothing_more(consumer)
