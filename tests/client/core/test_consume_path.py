"""The consumer's per-message path (issue 14): exact payload bytes out of the frames received,
exact ids in the ACK frames, and negative acks still honoured when acks skip the redelivery timers."""

from __future__ import annotations

import asyncio

from magnetar.client import AsyncClient, ConsumerType
from magnetar.protocol.batch import BatchMessage, build_entry
from magnetar.protocol.enums import AckType, CommandType
from magnetar.protocol.schema import MessageMetadata

from ..conftest import QUIET_MS, RECEIVE_MS, run
from ..fakebroker import FakeBroker, FakeConnection

NEVER_MS = 600_000
_BIG_LEDGER = (1 << 64) - 5  # an unsigned id above 2^63: -5 as the client's signed id


def _entry(payload: bytes) -> bytes:
    return build_entry(MessageMetadata(producer_name="p", sequence_id=0, publish_time=1), payload)


def _batch(payloads: list[bytes]) -> bytes:
    return build_entry(MessageMetadata(producer_name="p", sequence_id=0, publish_time=1), [BatchMessage(p) for p in payloads])


def _of_type(fake: FakeBroker, conn: FakeConnection, command_type: int) -> list:
    return [f for c, f in fake.received if c is conn and f.command.type == command_type]


def test_payloads_and_ids_are_exact() -> None:
    payloads = [b"", b"x", bytes(range(256)), b"\0" * 100, bytes(range(200)) * 500]

    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe("t", "sub", ack_group_time_ms=NEVER_MS)
            conn = fake.connections[0]
            await fake.wait_for(lambda: _of_type(fake, conn, CommandType.FLOW))
            for i, payload in enumerate(payloads):
                fake.push_message(conn, consumer.consumer_id, _entry(payload), 7, 10 + i)
            fake.push_message(conn, consumer.consumer_id, _entry(b"big ledger"), _BIG_LEDGER, 3)
            got = [await consumer.receive(RECEIVE_MS) for _ in range(len(payloads) + 1)]
            assert [m.data() for m in got] == [*payloads, b"big ledger"]
            assert all(type(m.data()) is bytes for m in got)
            ids = [(m.message_id().ledger_id, m.message_id().entry_id, m.message_id().batch_index) for m in got]
            assert ids == [(7, 10 + i, -1) for i in range(len(payloads))] + [(-5, 3, -1)]
            assert all(m.message_id().partition == -1 and m.message_id().ledger_id() == m.message_id().ledger_id for m in got)

    run(main())


def test_ack_frames_carry_exactly_the_ids_acknowledged() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe(
                "t", "sub", consumer_type=ConsumerType.Shared, ack_group_time_ms=NEVER_MS
            )
            conn = fake.connections[0]
            await fake.wait_for(lambda: _of_type(fake, conn, CommandType.FLOW))
            for i in range(6):
                fake.push_message(conn, consumer.consumer_id, _entry(b"m%d" % i), 7, i)
            fake.push_message(conn, consumer.consumer_id, _batch([b"b0", b"b1", b"b2"]), 7, 6)
            fake.push_message(conn, consumer.consumer_id, _entry(b"big"), _BIG_LEDGER, 1)
            got = [await consumer.receive(RECEIVE_MS) for _ in range(10)]
            for index in (0, 2, 3, 6, 7, 8, 9):  # every message of the batch, and the big ledger's
                consumer.acknowledge(got[index])
            consumer.acknowledge(got[5].message_id())
            await asyncio.sleep(QUIET_MS / 1000)
            assert _of_type(fake, conn, CommandType.ACK) == []
            await consumer.close()
            (ack,) = _of_type(fake, conn, CommandType.ACK)
            assert ack.command.ack.ack_type == AckType.Individual and ack.command.ack.consumer_id == consumer.consumer_id
            sent = [(m.ledger_id, m.entry_id, m.HasField("batch_index"), list(m.ack_set)) for m in ack.command.ack.message_id]
            assert sent == [(7, 0, False, []), (7, 2, False, []), (7, 3, False, []), (7, 6, False, []),
                            (_BIG_LEDGER, 1, False, []), (7, 5, False, [])]

    run(main())


def test_a_negative_ack_after_acks_without_tracking_is_redelivered_and_an_ack_cancels_the_next() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe(
                "t", "sub", consumer_type=ConsumerType.Shared, negative_ack_redelivery_delay_ms=50
            )
            conn = fake.connections[0]
            await fake.wait_for(lambda: _of_type(fake, conn, CommandType.FLOW))
            for i in range(3):
                fake.push_message(conn, consumer.consumer_id, _entry(b"m%d" % i), 7, i)
            got = [await consumer.receive(RECEIVE_MS) for _ in range(3)]
            consumer.acknowledge(got[0])  # nothing tracked yet: the timers are skipped
            consumer.negative_acknowledge(got[1])
            await fake.wait_for(lambda: _of_type(fake, conn, CommandType.REDELIVER_UNACKNOWLEDGED_MESSAGES))
            (redeliver,) = _of_type(fake, conn, CommandType.REDELIVER_UNACKNOWLEDGED_MESSAGES)
            ids = redeliver.command.redeliver_unacknowledged_messages.message_ids
            assert [(m.ledger_id, m.entry_id) for m in ids] == [(7, 1)]
            consumer.negative_acknowledge(got[2])
            consumer.acknowledge(got[2])  # acknowledged before its delay: not redelivered
            await asyncio.sleep(0.2)
            assert len(_of_type(fake, conn, CommandType.REDELIVER_UNACKNOWLEDGED_MESSAGES)) == 1

    run(main())
