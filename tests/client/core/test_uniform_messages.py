"""The messages of a uniform batch (equal-size messages with nothing of their own but their size and
sequence id) are UniformMessages: their payloads are sliced out of the bytes received only when
asked for (client/api/message.py). What every accessor says equals what a batch read message by
message says; the bytes counted, the batch receive's byte limit and the ACK frames are exact; a
message outlives its consumer and client."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

from magnetar.client import AsyncClient, ConsumerBatchReceivePolicy, ConsumerType, StringSchema
from magnetar.client.api.message import Message, UniformMessage, payload_bytes
from magnetar.protocol.batch import BatchMessage, build_entry
from magnetar.protocol.enums import CommandType
from magnetar.protocol.schema import MessageMetadata

from ..conftest import RECEIVE_MS, run
from ..fakebroker import FakeBroker, FakeConnection

NEVER_MS = 600_000
FIRST_SEQUENCE = 20_000


def _meta(published_ms: int = 10) -> MessageMetadata:
    return MessageMetadata(producer_name="p", sequence_id=FIRST_SEQUENCE, publish_time=published_ms)


def _numbered(payloads: list[bytes], **extra: Any) -> bytes:
    """A batch entry as the official producers write one: each message numbered from the entry's
    first sequence id (``extra``: fields of the first message's metadata, which make it not uniform)."""
    messages = [BatchMessage(p, sequence_id=FIRST_SEQUENCE + i) for i, p in enumerate(payloads)]
    for name, value in extra.items():
        setattr(messages[0], name, value)
    return build_entry(_meta(), messages)


def _of_type(fake: FakeBroker, conn: FakeConnection, command_type: int) -> list:
    return [f for c, f in fake.received if c is conn and f.command.type == command_type]


def _acked_entries(fake: FakeBroker, conn: FakeConnection) -> list[tuple[int, int]]:
    return sorted((m.ledger_id, m.entry_id) for f in _of_type(fake, conn, CommandType.ACK) for m in f.command.ack.message_id)


def _view(msg: Any) -> tuple:
    mid = msg.message_id()
    return (
        msg.data(), msg.value(), msg.size(), msg.properties(), msg.partition_key(), msg.has_key(), msg.ordering_key(),
        msg.event_timestamp(), msg.publish_timestamp(), msg.sequence_id(), msg.is_null_value(),
        (mid.ledger_id, mid.entry_id, mid.batch_index, mid.partition, mid.batch_size), msg.topic_name(),
        msg.redelivery_count(), msg.producer_name(),
    )


async def _receive(consumer: Any, count: int) -> list[Any]:
    got = [await consumer.receive(RECEIVE_MS)]
    while len(got) < count:
        got += consumer.receive_nowait(count - len(got)) or [await consumer.receive(RECEIVE_MS)]
    return got


def test_a_uniform_batch_reads_as_the_same_batch_read_message_by_message() -> None:
    payloads = [b"%04d" % i for i in range(300)]

    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe("t", "sub", schema=StringSchema(), ack_group_time_ms=NEVER_MS)
            conn = fake.connections[0]
            await fake.wait_for(lambda: _of_type(fake, conn, CommandType.FLOW))
            # the same messages: uniform, then with an event time on the first (read message by message)
            fake.push_message(conn, consumer.consumer_id, _numbered(payloads), 7, 1, redelivery_count=2)
            fake.push_message(conn, consumer.consumer_id, _numbered(payloads, event_time=5), 7, 1, redelivery_count=2)
            got = await _receive(consumer, 600)
            uniform, each = got[:300], got[300:]
            assert {type(m) for m in uniform} == {UniformMessage} and {type(m) for m in each} == {Message}
            assert [m.data() for m in uniform] == payloads and all(type(m.data()) is bytes for m in uniform)
            assert [m.value() for m in uniform] == [p.decode() for p in payloads]
            assert [m.sequence_id() for m in uniform] == list(range(FIRST_SEQUENCE, FIRST_SEQUENCE + 300))
            assert [_view(m) for m in uniform[1:]] == [_view(m) for m in each[1:]]
            assert _view(uniform[0])[:7] == _view(each[0])[:7] and each[0].event_timestamp() == 5
            assert repr(uniform[5]) == repr(each[5]) == "Message(id=MessageId(7:1:-1:5), 4 bytes)"
            assert payload_bytes(got) == sum(len(m.data()) for m in got) == 600 * 4

    run(main())


def test_payload_bytes_counts_runs_of_uniform_batches_among_other_messages() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe("t", "sub", ack_group_time_ms=NEVER_MS)
            conn = fake.connections[0]
            await fake.wait_for(lambda: _of_type(fake, conn, CommandType.FLOW))
            fake.push_message(conn, consumer.consumer_id, _numbered([b"a" * 10] * 5), 7, 0)
            fake.push_message(conn, consumer.consumer_id, build_entry(_meta(), b"plain!"), 7, 1)
            fake.push_message(conn, consumer.consumer_id, _numbered([b"b", b"bb", b"bbb"]), 7, 2)
            fake.push_message(conn, consumer.consumer_id, _numbered([b"c" * 7] * 4), 7, 3)
            got = await _receive(consumer, 13)
            assert [type(m).__name__ for m in got] == ["UniformMessage"] * 5 + ["PlainMessage"] + ["Message"] * 3 + ["UniformMessage"] * 4
            assert payload_bytes(got) == 50 + 6 + 6 + 28
            # a list that is not in the order received, with one message twice
            mixed = [got[12], got[0], got[5], got[1], got[7], got[12]]
            assert payload_bytes(mixed) == sum(len(m.data()) for m in mixed) == 7 + 10 + 6 + 10 + 2 + 7

    run(main())


def test_batch_receive_limits_bytes_by_the_uniform_payload_sizes() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            policy = ConsumerBatchReceivePolicy(max_num_message=-1, max_num_bytes=350, timeout_ms=50)
            consumer = await client.subscribe("t", "sub", batch_receive_policy=policy, ack_group_time_ms=NEVER_MS)
            conn = fake.connections[0]
            await fake.wait_for(lambda: _of_type(fake, conn, CommandType.FLOW))
            fake.push_message(conn, consumer.consumer_id, _numbered([bytes([i]) * 100 for i in range(10)]), 7, 0)
            async with asyncio.timeout(5):
                while consumer.queued() < 10:
                    await asyncio.sleep(0.005)
            first = await consumer.batch_receive()
            assert [m.data() for m in first] == [bytes([i]) * 100 for i in range(3)]
            assert all(type(m) is UniformMessage for m in first)

    run(main())


def test_acknowledge_many_acks_a_uniform_entry_once_all_its_messages_are() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe("t", "sub", consumer_type=ConsumerType.Shared, ack_group_time_ms=NEVER_MS)
            conn = fake.connections[0]
            await fake.wait_for(lambda: _of_type(fake, conn, CommandType.FLOW))
            for entry_id in range(4):
                fake.push_message(conn, consumer.consumer_id, _numbered([b"%d-%d" % (entry_id, i) for i in range(5)]), 7, entry_id)
            fake.push_message(conn, consumer.consumer_id, _numbered([b"x", b"yy"]), 7, 4)  # not uniform
            got = await _receive(consumer, 22)
            e0, e1, e2, e3, e4 = got[0:5], got[5:10], got[10:15], got[15:20], got[20:22]
            # e0 whole; e1 but one; e2 in two calls, out of order, one by its id, one twice; e3 only
            # by ids; e4 (read message by message) whole
            consumer.acknowledge_many([*e0, *e1[:4], e2[4], e2[0], e4[0]])
            consumer._acks.flush()
            await fake.wait_for(lambda: len(_of_type(fake, conn, CommandType.ACK)) == 1)
            assert _acked_entries(fake, conn) == [(7, 0)]
            consumer.acknowledge_many([e2[2], e2[1].message_id(), e2[2], e2[3], *[m.message_id() for m in e3], e4[1]])
            consumer._acks.flush()
            await fake.wait_for(lambda: len(_of_type(fake, conn, CommandType.ACK)) == 2)
            assert _acked_entries(fake, conn) == [(7, 0), (7, 2), (7, 3), (7, 4)]
            consumer.acknowledge(e1[4])
            consumer._acks.flush()
            await fake.wait_for(lambda: len(_of_type(fake, conn, CommandType.ACK)) == 3)
            assert _acked_entries(fake, conn) == [(7, 0), (7, 1), (7, 2), (7, 3), (7, 4)]

    run(main())


def test_a_uniform_message_outlives_its_consumer_and_client() -> None:
    async def main() -> list[Any]:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe("t", "sub", ack_group_time_ms=NEVER_MS)
            conn = fake.connections[0]
            await fake.wait_for(lambda: _of_type(fake, conn, CommandType.FLOW))
            fake.push_message(conn, consumer.consumer_id, _numbered([b"kept %d" % i for i in range(8)]), 9, 3)
            got = await _receive(consumer, 8)
            await consumer.close()
        return got

    got = run(main())
    gc.collect()
    assert {type(m) for m in got} == {UniformMessage}
    assert [m.data() for m in got] == [b"kept %d" % i for i in range(8)]
    assert [(m.message_id().entry_id, m.message_id().batch_index) for m in got] == [(3, i) for i in range(8)]
