"""Chunked messages: the reassembly rules, the consumer around them, and 12 MiB through magnetar."""

from __future__ import annotations

import hashlib
import random

from magnetar.client import AsyncClient, Client, ConsumerType, InitialPosition, MessageId
from magnetar.client.core.chunks import ChunkAssembler
from magnetar.protocol.compression import compress
from magnetar.protocol.enums import CommandType, CompressionType
from magnetar.protocol.framing import encode_entry
from magnetar.protocol.schema import MessageMetadata

from ..conftest import RECEIVE_MS, run
from ..fakebroker import FakeBroker
from ..test_roundtrip import nothing_more

MiB = 1024 * 1024


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _meta(uuid: str, chunk_id: int, chunks: int, total: int) -> MessageMetadata:
    return MessageMetadata(
        producer_name="p", sequence_id=0, publish_time=1, uuid=uuid, chunk_id=chunk_id,
        num_chunks_from_msg=chunks, total_chunk_msg_size=total,
    )


def _assembler(**kwargs: object) -> tuple[ChunkAssembler, list]:
    discarded: list = []
    return ChunkAssembler(lambda keys, ack: discarded.append((keys, ack)), **kwargs), discarded  # type: ignore[arg-type]


def test_interleaved_chunks_are_reassembled() -> None:
    asm, discarded = _assembler()
    assert asm.add(_meta("a", 0, 3, 6), b"a0", (1, 0)) is None
    assert asm.add(_meta("b", 0, 2, 4), b"b0", (1, 1)) is None
    assert asm.add(_meta("a", 1, 3, 6), b"a1", (1, 2)) is None
    assert asm.add(_meta("b", 1, 2, 4), b"b1", (1, 3)) == (b"b0b1", [(1, 1), (1, 3)])
    assert asm.add(_meta("a", 2, 3, 6), b"a2", (1, 4)) == (b"a0a1a2", [(1, 0), (1, 2), (1, 4)])
    assert len(asm) == 0 and discarded == []


def test_duplicates_and_missing_chunks() -> None:
    asm, discarded = _assembler()
    asm.add(_meta("a", 0, 3, 6), b"a0", (1, 0))
    asm.add(_meta("a", 1, 3, 6), b"a1", (1, 1))
    # the producer resent chunk 1 after a reconnection: the copy (another entry) is acknowledged
    assert asm.add(_meta("a", 1, 3, 6), b"a1", (1, 5)) is None
    assert discarded == [([(1, 5)], True)]
    # a redelivery of an entry already held is ignored
    assert asm.add(_meta("a", 0, 3, 6), b"a0", (1, 0)) is None
    assert discarded == [([(1, 5)], True)]
    assert asm.add(_meta("a", 2, 3, 6), b"a2", (1, 6)) == (b"a0a1a2", [(1, 0), (1, 1), (1, 6)])
    # a chunk whose predecessors never came: the message cannot be rebuilt
    assert asm.add(_meta("c", 1, 3, 6), b"c1", (1, 7)) is None
    assert len(asm) == 0
    # announced size not matching: dropped and acknowledged
    asm.add(_meta("d", 0, 2, 100), b"d0", (1, 8))
    assert asm.add(_meta("d", 1, 2, 100), b"d1", (1, 9)) is None
    assert discarded[-1] == ([(1, 8), (1, 9)], True)


def test_max_pending_chunked_messages_drops_the_oldest() -> None:
    asm, discarded = _assembler(max_pending=2, auto_ack_oldest=True)
    asm.add(_meta("a", 0, 2, 4), b"a0", (1, 0))
    asm.add(_meta("b", 0, 2, 4), b"b0", (1, 1))
    asm.add(_meta("c", 0, 2, 4), b"c0", (1, 2))
    assert discarded == [([(1, 0)], True)]
    assert asm.add(_meta("a", 1, 2, 4), b"a1", (1, 3)) is None  # its start is gone
    assert asm.add(_meta("c", 1, 2, 4), b"c1", (1, 4)) == (b"c0c1", [(1, 2), (1, 4)])
    keep, discarded2 = _assembler(max_pending=1, auto_ack_oldest=False)
    keep.add(_meta("a", 0, 2, 4), b"a0", (1, 0))
    keep.add(_meta("b", 0, 2, 4), b"b0", (1, 1))
    assert discarded2 == [([(1, 0)], False)]  # left for redelivery, not acknowledged


def test_incomplete_chunked_messages_expire() -> None:
    clock = _Clock()
    asm, discarded = _assembler(expire_ms=60_000, clock=clock)
    asm.add(_meta("a", 0, 3, 6), b"a0", (1, 0))
    clock.now = 30
    asm.add(_meta("b", 0, 3, 6), b"b0", (1, 1))
    clock.now = 59.9
    asm.expire_incomplete()
    assert discarded == []
    clock.now = 60
    asm.expire_incomplete()
    assert discarded == [([(1, 0)], True)] and len(asm) == 1
    clock.now = 90
    asm.expire_incomplete()
    assert discarded[-1] == ([(1, 1)], True) and len(asm) == 0


def test_consumer_acks_and_nacks_every_chunk() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe("t", "sub", consumer_type=ConsumerType.Shared, negative_ack_redelivery_delay_ms=0)
            conn = fake.connections[0]
            payload = bytes(range(256)) * 30
            whole = compress(CompressionType.ZSTD, payload)
            parts = [whole[: len(whole) // 3], whole[len(whole) // 3 : 2 * len(whole) // 3], whole[2 * len(whole) // 3 :]]
            for i, part in enumerate(parts):
                meta = _meta("u-1", i, 3, len(whole))
                meta.compression = CompressionType.ZSTD
                meta.uncompressed_size = len(payload)
                fake.push_message(conn, consumer.consumer_id, encode_entry(meta, part), 2, 10 + i)
            msg = await consumer.receive(5000)
            assert msg.data() == payload
            mid = msg.message_id()
            assert mid.is_chunked() and mid.chunk_entries() == [(2, 10), (2, 11), (2, 12)]
            assert mid.first_chunk_message_id().ledger_entry() == (2, 10)
            consumer.negative_acknowledge(msg)
            await fake.wait_for(lambda: fake.commands(CommandType.REDELIVER_UNACKNOWLEDGED_MESSAGES))
            (redeliver,) = fake.commands(CommandType.REDELIVER_UNACKNOWLEDGED_MESSAGES)
            assert sorted(m.entry_id for m in redeliver.message_ids) == [10, 11, 12]
            consumer.acknowledge(msg)
            await fake.wait_for(lambda: fake.commands(CommandType.ACK))
            assert sorted(m.entry_id for m in fake.commands(CommandType.ACK)[0].message_id) == [10, 11, 12]

    run(main())


def test_12_mib_message_through_magnetar(client: Client, client2: Client, topic: str) -> None:
    big = random.Random(1).randbytes(12 * MiB)
    consumer = client.subscribe(topic, "big", consumer_type=ConsumerType.Shared)
    producer = client2.create_producer(topic, chunking_enabled=True, send_timeout_millis=20_000)
    sent_id = producer.send(big, properties={"kind": "big"})
    producer.send(b"small-after")
    msg = consumer.receive(RECEIVE_MS)
    assert hashlib.sha256(msg.data()).digest() == hashlib.sha256(big).digest()
    assert msg.properties() == {"kind": "big"}
    assert msg.message_id() == sent_id and len(msg.message_id().chunk_entries()) == 3
    consumer.acknowledge(msg)
    small = consumer.receive(RECEIVE_MS)
    assert small.data() == b"small-after"
    consumer.acknowledge(small)
    consumer.close()
    # every chunk was acknowledged with the message
    again = client.subscribe(topic, "big", consumer_type=ConsumerType.Shared)
    nothing_more(again)
    # a reader from the earliest reassembles it from storage
    reader = client.create_reader(topic, MessageId.earliest)
    assert len(reader.read_next(RECEIVE_MS).data()) == len(big)
    assert reader.read_next(RECEIVE_MS).data() == b"small-after"


def test_compressed_chunked_message_round_trip(url: str, topic: str) -> None:
    payload = (b"0123456789abcdef" * 65536) * 8  # 8 MiB, compresses well but still chunked at 5 MiB
    noise = random.Random(2).randbytes(6 * MiB)

    async def main() -> None:
        async with AsyncClient(url) as client:
            consumer = await client.subscribe(topic, "sub", initial_position=InitialPosition.Earliest)
            producer = await client.create_producer(topic, chunking_enabled=True, compression_type=CompressionType.LZ4)
            await producer.send(payload)
            await producer.send(noise)  # does not compress: chunked
            first, second = await consumer.receive(RECEIVE_MS), await consumer.receive(RECEIVE_MS)
            assert first.data() == payload and not first.message_id().is_chunked()
            assert second.data() == noise and second.message_id().is_chunked()

    run(main())
