"""Grouped acknowledgements across a reconnection, and redelivered duplicates (issue 13).

As the Java client: acknowledgements still grouped when the connection drops are kept and sent
as soon as the consumer is subscribed again, before its first FLOW; a message that arrives while
its acknowledgement is pending (or covered by a cumulative one) is not handed to the application;
close() flushes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from magnetar.client import AsyncClient, Client, ConsumerType, InitialPosition, Timeout
from magnetar.client.core import acks as acks_module
from magnetar.protocol.batch import BatchMessage, build_entry
from magnetar.protocol.enums import AckType, CommandType
from magnetar.protocol.schema import MessageMetadata
from magnetar.testing import BrokerProcess, free_port

from ..conftest import QUIET_MS, RECEIVE_MS, run
from ..fakebroker import FakeBroker, FakeConnection

#: a group time no test waits for: only a reconnection, a close or a redelivery sends the acks
NEVER_MS = 600_000


def _entry(payload: bytes) -> bytes:
    return build_entry(MessageMetadata(producer_name="p", sequence_id=0, publish_time=1), payload)


def _batch(payloads: list[bytes]) -> bytes:
    return build_entry(MessageMetadata(producer_name="p", sequence_id=0, publish_time=1), [BatchMessage(p) for p in payloads])


def _frames_on(fake: FakeBroker, conn: FakeConnection, *types: int) -> list[tuple[int, object]]:
    """(type, frame) of the frames received on ``conn`` of these types, in order."""
    return [(f.command.type, f) for c, f in fake.received if c is conn and f.command.type in types]


def _acked_ids(frame: object) -> list[tuple[int, int]]:
    return sorted((m.ledger_id, m.entry_id) for m in frame.command.ack.message_id)  # type: ignore[attr-defined]


async def _nothing_queued(consumer: object) -> None:
    await asyncio.sleep(QUIET_MS / 1000)
    assert consumer.queued() == 0  # type: ignore[attr-defined]


def test_pending_acks_survive_a_reconnect_and_go_before_the_first_flow() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe("t", "sub", consumer_type=ConsumerType.Shared, ack_group_time_ms=NEVER_MS)
            first = fake.connections[0]
            await fake.wait_for(lambda: _frames_on(fake, first, CommandType.FLOW))
            for i in range(4):
                fake.push_message(first, consumer.consumer_id, _entry(b"m%d" % i), 7, i)
            got = [await consumer.receive(RECEIVE_MS) for _ in range(4)]
            consumer.acknowledge(got[0])
            consumer.acknowledge(got[2])
            first.abort()
            subscribes = lambda: [c for c, f in fake.received if f.command.type == CommandType.SUBSCRIBE]  # noqa: E731
            await fake.wait_for(lambda: len(subscribes()) == 2)
            second = subscribes()[1]
            await fake.wait_for(lambda: _frames_on(fake, second, CommandType.FLOW))
            assert _frames_on(fake, first, CommandType.ACK) == []  # never sent before the drop
            frames = _frames_on(fake, second, CommandType.SUBSCRIBE, CommandType.ACK, CommandType.FLOW)
            assert [t for t, _ in frames] == [CommandType.SUBSCRIBE, CommandType.ACK, CommandType.FLOW]
            ack = frames[1][1]
            assert ack.command.ack.ack_type == AckType.Individual  # type: ignore[attr-defined]
            assert _acked_ids(ack) == [(7, 0), (7, 2)]

    run(main())


@pytest.mark.parametrize("window", [acks_module.RESEND_WINDOW, 0.0])
def test_acks_sent_just_before_the_connection_went_are_sent_again(window: float, monkeypatch: pytest.MonkeyPatch) -> None:
    # the broker may have crashed before persisting them; outside the window they are not resent
    monkeypatch.setattr(acks_module, "RESEND_WINDOW", window)

    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe("t", "sub", consumer_type=ConsumerType.Shared, ack_group_time_ms=0)
            first = fake.connections[0]
            await fake.wait_for(lambda: _frames_on(fake, first, CommandType.FLOW))
            for i in range(3):
                fake.push_message(first, consumer.consumer_id, _entry(b"m%d" % i), 7, i)
            got = [await consumer.receive(RECEIVE_MS) for _ in range(3)]
            consumer.acknowledge(got[1])
            await fake.wait_for(lambda: _frames_on(fake, first, CommandType.ACK))
            assert _acked_ids(_frames_on(fake, first, CommandType.ACK)[0][1]) == [(7, 1)]
            first.abort()
            subscribes = lambda: [c for c, f in fake.received if f.command.type == CommandType.SUBSCRIBE]  # noqa: E731
            await fake.wait_for(lambda: len(subscribes()) == 2)
            second = subscribes()[1]
            await fake.wait_for(lambda: _frames_on(fake, second, CommandType.FLOW))
            frames = _frames_on(fake, second, CommandType.SUBSCRIBE, CommandType.ACK, CommandType.FLOW)
            if window:
                assert [t for t, _ in frames] == [CommandType.SUBSCRIBE, CommandType.ACK, CommandType.FLOW]
                assert _acked_ids(frames[1][1]) == [(7, 1)]
            else:
                assert [t for t, _ in frames] == [CommandType.SUBSCRIBE, CommandType.FLOW]

    run(main())


def test_a_redelivered_message_whose_ack_is_pending_is_dropped_and_its_permit_given_back() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe(
                "t", "sub", consumer_type=ConsumerType.Shared, ack_group_time_ms=NEVER_MS, receiver_queue_size=4
            )
            conn = fake.connections[0]
            flows = lambda: [f.command.flow.message_permits for _, f in _frames_on(fake, conn, CommandType.FLOW)]  # noqa: E731
            await fake.wait_for(lambda: flows() == [4])  # then 2 at a time
            fake.push_message(conn, consumer.consumer_id, _entry(b"a"), 7, 0)
            fake.push_message(conn, consumer.consumer_id, _entry(b"b"), 7, 1)
            got = [await consumer.receive(RECEIVE_MS) for _ in range(2)]
            consumer.acknowledge(got[0])
            consumer.acknowledge(got[1])
            await fake.wait_for(lambda: flows() == [4, 2])
            # both come again while their acknowledgements wait: dropped, permits given back
            fake.push_message(conn, consumer.consumer_id, _entry(b"a"), 7, 0, redelivery_count=1)
            fake.push_message(conn, consumer.consumer_id, _entry(b"b"), 7, 1, redelivery_count=1)
            await fake.wait_for(lambda: flows() == [4, 2, 2])
            fake.push_message(conn, consumer.consumer_id, _entry(b"c"), 7, 2)
            nxt = await consumer.receive(RECEIVE_MS)
            assert (nxt.message_id().ledger_entry(), nxt.data()) == ((7, 2), b"c")
            await _nothing_queued(consumer)

    run(main())


def test_messages_covered_by_a_pending_cumulative_ack_are_dropped() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe("t", "sub", consumer_type=ConsumerType.Failover, ack_group_time_ms=NEVER_MS)
            conn = fake.connections[0]
            await fake.wait_for(lambda: _frames_on(fake, conn, CommandType.FLOW))
            for i in range(3):
                fake.push_message(conn, consumer.consumer_id, _entry(b"m%d" % i), 7, i)
            got = [await consumer.receive(RECEIVE_MS) for _ in range(3)]
            consumer.acknowledge_cumulative(got[1])
            for i in range(4):
                fake.push_message(conn, consumer.consumer_id, _entry(b"m%d" % i), 7, i, redelivery_count=1)
            again = [await consumer.receive(RECEIVE_MS) for _ in range(2)]
            assert [m.message_id().ledger_entry() for m in again] == [(7, 2), (7, 3)]
            await _nothing_queued(consumer)

    run(main())


def test_batch_indexes_whose_ack_is_pending_are_not_handed_out_again() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe(
                "t", "sub", consumer_type=ConsumerType.Shared, ack_group_time_ms=NEVER_MS, batch_index_ack_enabled=True
            )
            conn = fake.connections[0]
            await fake.wait_for(lambda: _frames_on(fake, conn, CommandType.FLOW))
            fake.push_message(conn, consumer.consumer_id, _batch([b"x", b"y", b"z"]), 7, 5)
            got = [await consumer.receive(RECEIVE_MS) for _ in range(3)]
            assert [m.message_id().batch_index for m in got] == [0, 1, 2]
            consumer.acknowledge(got[1])
            fake.push_message(conn, consumer.consumer_id, _batch([b"x", b"y", b"z"]), 7, 5, redelivery_count=1)
            again = [await consumer.receive(RECEIVE_MS) for _ in range(2)]
            assert [(m.message_id().ledger_entry(), m.message_id().batch_index, m.data()) for m in again] == [
                ((7, 5), 0, b"x"), ((7, 5), 2, b"z"),
            ]
            await _nothing_queued(consumer)

    run(main())


def test_close_flushes_pending_acks_before_closing() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe("t", "sub", consumer_type=ConsumerType.Shared, ack_group_time_ms=NEVER_MS)
            conn = fake.connections[0]
            await fake.wait_for(lambda: _frames_on(fake, conn, CommandType.FLOW))
            fake.push_message(conn, consumer.consumer_id, _entry(b"a"), 7, 3)
            consumer.acknowledge(await consumer.receive(RECEIVE_MS))
            await consumer.close()
            frames = _frames_on(fake, conn, CommandType.ACK, CommandType.CLOSE_CONSUMER)
            assert [t for t, _ in frames] == [CommandType.ACK, CommandType.CLOSE_CONSUMER]
            assert _acked_ids(frames[0][1]) == [(7, 3)]

    run(main())


def test_acks_pending_over_a_broker_restart_reach_the_broker(
    dedicated_broker: Callable[..., BrokerProcess], client_factory: Callable[..., Client]
) -> None:
    broker = dedicated_broker(port=free_port(), http_port=free_port())
    topic = "persistent://public/default/acks-over-restart"
    client = client_factory(broker.service_url)
    consumer = client.subscribe(topic, "sub", consumer_type=ConsumerType.Shared, ack_group_time_ms=NEVER_MS,
                                initial_position=InitialPosition.Earliest)
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(b"m%d" % i) for i in range(10)]
    producer.close()
    got = [consumer.receive(RECEIVE_MS) for _ in range(10)]
    assert [m.message_id() for m in got] == ids
    for msg in got[::2]:
        consumer.acknowledge(msg)  # grouped: still in the client when the broker goes
    broker.stop()
    broker = dedicated_broker(port=broker.port, http_port=broker.http_port)
    back = [consumer.receive(RECEIVE_MS) for _ in range(5)]
    assert [m.message_id() for m in back] == ids[1::2]
    assert [m.data() for m in back] == [b"m%d" % i for i in (1, 3, 5, 7, 9)]
    try:
        extra = consumer.receive(QUIET_MS)
    except Timeout:
        extra = None
    assert extra is None
