"""acknowledge_many's run of one batch's messages at once (issue 14): the ACK frames carry exactly
the entries whose every message was acknowledged, as one acknowledge() per message does; and the
per-entry counts perf takes from received messages are exact."""

from __future__ import annotations

from collections import Counter
from typing import Any

from magnetar.client import AsyncClient, ConsumerType
from magnetar.client.api.message import payload_bytes, publish_time_counts
from magnetar.protocol.batch import BatchMessage, build_entry
from magnetar.protocol.enums import CommandType
from magnetar.protocol.schema import MessageMetadata

from ..conftest import RECEIVE_MS, run
from ..fakebroker import FakeBroker, FakeConnection

NEVER_MS = 600_000


def _meta(published_ms: int) -> MessageMetadata:
    return MessageMetadata(producer_name="p", sequence_id=0, publish_time=published_ms)


def _batch(name: str, count: int, published_ms: int) -> bytes:
    return build_entry(_meta(published_ms), [BatchMessage(b"%s%d" % (name.encode(), i)) for i in range(count)])


def _of_type(fake: FakeBroker, conn: FakeConnection, command_type: int) -> list:
    return [f for c, f in fake.received if c is conn and f.command.type == command_type]


async def _received_then_acked(pick: Any, many: bool) -> tuple[list[bytes], list[tuple[int, int]]]:
    """Push four batches (entries 0, 1, 3, 4) and a plain entry (2); acknowledge what ``pick``
    chooses of the received messages; return the payloads and the entries in the ACK frame."""
    async with FakeBroker() as fake, AsyncClient(fake.url) as client:
        consumer = await client.subscribe("t", "sub", consumer_type=ConsumerType.Shared, ack_group_time_ms=NEVER_MS)
        conn = fake.connections[0]
        await fake.wait_for(lambda: _of_type(fake, conn, CommandType.FLOW))
        fake.push_message(conn, consumer.consumer_id, _batch("a", 3, 10), 7, 0)
        fake.push_message(conn, consumer.consumer_id, _batch("b", 4, 10), 7, 1)
        fake.push_message(conn, consumer.consumer_id, build_entry(_meta(11), b"plain"), 7, 2)
        fake.push_message(conn, consumer.consumer_id, _batch("c", 2, 12), 7, 3)
        fake.push_message(conn, consumer.consumer_id, _batch("d", 2, 12), 7, 4)
        got = [await consumer.receive(RECEIVE_MS)]
        await fake.wait_for(lambda: consumer.queued() == 11)
        got += consumer.receive_nowait(100)
        chosen = pick(got)
        if many:
            consumer.acknowledge_many(chosen)
        else:
            for message in chosen:
                consumer.acknowledge(message)
        await consumer.close()
        acks = _of_type(fake, conn, CommandType.ACK)
        entries = [(m.ledger_id, m.entry_id) for f in acks for m in f.command.ack.message_id]
        return [m.data() for m in got], entries


def _pick(got: list[Any]) -> list[Any]:
    a0, a1, a2, b0, b1, _b2, b3, plain, c0, c1, d0, d1 = got
    # a whole, b without b2, the plain entry, c and d interleaved (by message and by id), a duplicate
    return [a0, a1, a2, b0, b1, b3, plain, c0, d0.message_id(), c1, d1, a1]


def test_acknowledge_many_acks_exactly_the_whole_entries_as_one_by_one_does() -> None:
    payloads, one_by_one = run(_received_then_acked(_pick, many=False))
    assert payloads == [b"a0", b"a1", b"a2", b"b0", b"b1", b"b2", b"b3", b"plain", b"c0", b"c1", b"d0", b"d1"]
    _, many = run(_received_then_acked(_pick, many=True))
    assert sorted(one_by_one) == [(7, 0), (7, 2), (7, 3), (7, 4)]
    assert sorted(many) == sorted(one_by_one)


def test_acknowledge_many_of_partial_runs_leaves_the_entries_pending() -> None:
    def pick(got: list[Any]) -> list[Any]:
        return [got[0], got[2], got[3], got[4], got[5], got[8]]  # a without a1, b without b3, c without c1

    _, many = run(_received_then_acked(pick, many=True))
    assert many == []


def test_publish_time_counts_and_payload_bytes_are_exact() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe("t", "sub", ack_group_time_ms=NEVER_MS)
            conn = fake.connections[0]
            await fake.wait_for(lambda: _of_type(fake, conn, CommandType.FLOW))
            fake.push_message(conn, consumer.consumer_id, _batch("a", 3, 10), 7, 0)
            fake.push_message(conn, consumer.consumer_id, build_entry(_meta(10), b"plain"), 7, 1)
            fake.push_message(conn, consumer.consumer_id, _batch("bb", 4, 20), 7, 2)
            got = [await consumer.receive(RECEIVE_MS)]
            await fake.wait_for(lambda: consumer.queued() == 7)
            got += consumer.receive_nowait(100)
            assert publish_time_counts(got) == {10: 4, 20: 4}
            assert publish_time_counts(got) == dict(Counter(m.publish_timestamp() for m in got))
            assert payload_bytes(got) == sum(len(m.data()) for m in got) == 3 * 2 + 5 + 4 * 3

    run(main())
