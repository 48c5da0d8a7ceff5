"""Consumer mechanics against the fake broker: flow, receive, batch receive, listeners, ack grouping,
Key_Shared policies."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from magnetar.client import (
    AsyncClient,
    Client,
    ConsumerBatchReceivePolicy,
    ConsumerKeySharedPolicy,
    ConsumerType,
    CumulativeAcknowledgementNotAllowedError,
    InvalidConfiguration,
    KeySharedMode,
    Message,
    Timeout,
)
from magnetar.protocol.batch import BatchMessage, build_entry
from magnetar.protocol.enums import AckType, CommandType
from magnetar.protocol.schema import MessageMetadata

from ..conftest import RECEIVE_MS, ThreadedFake, run
from ..fakebroker import FakeBroker


def _entry(payload: bytes, **meta: object) -> bytes:
    return build_entry(MessageMetadata(producer_name="p", sequence_id=0, publish_time=1, **meta), payload)


def _batch(payloads: list[bytes]) -> bytes:
    return build_entry(MessageMetadata(producer_name="p", sequence_id=0, publish_time=1), [BatchMessage(p) for p in payloads])


def _flows(fake: FakeBroker, consumer_id: int) -> list[int]:
    return [f.message_permits for f in fake.commands(CommandType.FLOW) if f.consumer_id == consumer_id]


def test_receive_timeout_and_async_receive() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe("t", "sub")
            started = time.monotonic()
            with pytest.raises(Timeout, match=r"no message received from .*/t within 200 ms"):
                await consumer.receive(200)
            assert 0.15 < time.monotonic() - started < 1.5
            pending = asyncio.ensure_future(consumer.receive())
            await asyncio.sleep(0.05)
            assert not pending.done()
            fake.push_message(fake.connections[0], consumer.consumer_id, _entry(b"hello", partition_key="k"), 3, 4)
            msg = await asyncio.wait_for(pending, 5)
            assert (msg.data(), msg.partition_key(), msg.message_id().ledger_entry()) == (b"hello", "k", (3, 4))

    run(main())


def test_permits_are_granted_again_at_half_the_queue() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe("t", "sub", receiver_queue_size=10)
            await fake.wait_for(lambda: _flows(fake, consumer.consumer_id))
            conn = fake.connections[0]
            for i in range(10):
                fake.push_message(conn, consumer.consumer_id, _entry(b"m%d" % i), 1, i)
            for _ in range(4):
                await consumer.receive(5000)
            await asyncio.sleep(0.05)
            assert _flows(fake, consumer.consumer_id) == [10]
            await consumer.receive(5000)
            await fake.wait_for(lambda: _flows(fake, consumer.consumer_id) == [10, 5])
            # a batch counts as many permits as it has messages
            fake.push_message(conn, consumer.consumer_id, _batch([b"a", b"b", b"c", b"d", b"e", b"f"]), 1, 10)
            for _ in range(11):
                await consumer.receive(5000)
            await fake.wait_for(lambda: _flows(fake, consumer.consumer_id) == [10, 5, 5, 5])

    run(main())


def test_zero_receiver_queue_asks_one_message_per_receive() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe("t", "sub", receiver_queue_size=0)
            await asyncio.sleep(0.1)
            assert _flows(fake, consumer.consumer_id) == []  # nothing asked before a receive
            pending = asyncio.ensure_future(consumer.receive(5000))
            await fake.wait_for(lambda: _flows(fake, consumer.consumer_id) == [1])
            fake.push_message(fake.connections[0], consumer.consumer_id, _entry(b"one"), 1, 0)
            assert (await pending).data() == b"one"
            pending = asyncio.ensure_future(consumer.receive(5000))
            await fake.wait_for(lambda: _flows(fake, consumer.consumer_id) == [1, 1])
            fake.push_message(fake.connections[0], consumer.consumer_id, _entry(b"two"), 1, 1)
            assert (await pending).data() == b"two"

    run(main())


def test_batch_receive_policy_count_bytes_and_time() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            policy = ConsumerBatchReceivePolicy(max_num_message=5, max_num_bytes=-1, timeout_ms=2000)
            consumer = await client.subscribe("t", "sub", batch_receive_policy=policy)
            conn = fake.connections[0]
            for i in range(12):
                fake.push_message(conn, consumer.consumer_id, _entry(b"m%02d" % i), 1, i)
            await asyncio.sleep(0.1)
            first = await consumer.batch_receive()
            second = await consumer.batch_receive()
            assert [m.data() for m in first] == [b"m%02d" % i for i in range(5)]
            assert [m.data() for m in second] == [b"m%02d" % i for i in range(5, 10)]
            # not enough messages: returns what is there when the timeout passes
            started = time.monotonic()
            third = await consumer.batch_receive(ConsumerBatchReceivePolicy(100, -1, 300))
            assert [m.data() for m in third] == [b"m10", b"m11"]
            assert 0.25 < time.monotonic() - started < 2
            # nothing at all: an empty list after the timeout
            assert await consumer.batch_receive(ConsumerBatchReceivePolicy(10, -1, 100)) == []
            # bytes: a batch stops before the message that would exceed the limit
            for i in range(6):
                fake.push_message(conn, consumer.consumer_id, _entry(b"x" * 100), 1, 20 + i)
            await asyncio.sleep(0.1)
            by_bytes = await consumer.batch_receive(ConsumerBatchReceivePolicy(-1, 350, 1000))
            assert len(by_bytes) == 3
            # a waiting batch receive completes as soon as the count is reached
            waiting = asyncio.ensure_future(consumer.batch_receive(ConsumerBatchReceivePolicy(4, -1, 10_000)))
            await asyncio.sleep(0.05)
            assert not waiting.done()
            fake.push_message(conn, consumer.consumer_id, _batch([b"b0", b"b1", b"b2"]), 1, 40)
            got = await asyncio.wait_for(waiting, 5)
            assert len(got) == 4
            with pytest.raises(InvalidConfiguration, match="at least one of"):
                ConsumerBatchReceivePolicy(-1, -1, -1)

    run(main())


def test_listeners_async_and_sync() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            seen: list[bytes] = []
            done = asyncio.Event()

            async def listener(consumer: object, msg: Message) -> None:
                await asyncio.sleep(0.001)
                seen.append(msg.data())
                consumer.acknowledge(msg)  # type: ignore[attr-defined]
                if len(seen) == 5:
                    done.set()

            consumer = await client.subscribe("t", "sub", message_listener=listener)
            for i in range(5):
                fake.push_message(fake.connections[0], consumer.consumer_id, _entry(b"m%d" % i), 1, i)
            await asyncio.wait_for(done.wait(), 5)
            assert seen == [b"m%d" % i for i in range(5)]
            with pytest.raises(InvalidConfiguration, match="listener"):
                await consumer.receive(10)
            await fake.wait_for(lambda: fake.commands(CommandType.ACK))
            # pause: messages wait until resumed
            consumer.pause_message_listener()
            fake.push_message(fake.connections[0], consumer.consumer_id, _entry(b"later"), 1, 9)
            await asyncio.sleep(0.1)
            assert len(seen) == 5
            consumer.resume_message_listener()
            await fake.wait_for(lambda: len(seen) == 6)

    run(main())


def test_sync_listener_runs_on_a_listener_thread(threaded_fake: ThreadedFake, client_factory) -> None:  # noqa: ANN001
    fake = threaded_fake.fake
    client: Client = client_factory(fake.url)
    threads: list[str] = []
    got = threading.Event()

    def listener(consumer: object, msg: Message) -> None:
        threads.append(threading.current_thread().name)
        consumer.acknowledge(msg)  # type: ignore[attr-defined]
        got.set()

    consumer = client.subscribe("t", "sub", message_listener=listener)
    threaded_fake.call(fake.push_message, fake.connections[0], consumer.core.consumer_id, _entry(b"x"), 1, 0)
    assert got.wait(5)
    assert threads[0].startswith("magnetar-listener")
    deadline = time.monotonic() + 5
    while not fake.commands(CommandType.ACK) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert fake.commands(CommandType.ACK)


def test_acks_are_grouped_and_batches_acked_once_complete() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe("t", "sub", consumer_type=ConsumerType.Shared)
            conn = fake.connections[0]
            for i in range(5):
                fake.push_message(conn, consumer.consumer_id, _entry(b"m%d" % i), 1, i)
            fake.push_message(conn, consumer.consumer_id, _batch([b"b0", b"b1", b"b2"]), 1, 5)
            got = [await consumer.receive(5000) for _ in range(8)]
            for msg in got[:5]:
                consumer.acknowledge(msg)
            consumer.acknowledge(got[5])
            consumer.acknowledge(got[6])
            await asyncio.sleep(0.05)
            assert fake.commands(CommandType.ACK) == []  # grouped: nothing before 100 ms
            await fake.wait_for(lambda: fake.commands(CommandType.ACK))
            (ack,) = fake.commands(CommandType.ACK)
            assert ack.ack_type == AckType.Individual
            assert [m.entry_id for m in ack.message_id] == [0, 1, 2, 3, 4]  # the batch is not complete yet
            consumer.acknowledge(got[7])
            await fake.wait_for(lambda: len(fake.commands(CommandType.ACK)) == 2)
            assert [m.entry_id for m in fake.commands(CommandType.ACK)[1].message_id] == [5]
            with pytest.raises(CumulativeAcknowledgementNotAllowedError, match="Shared"):
                consumer.acknowledge_cumulative(got[0])

    run(main())


def test_batch_index_acks_carry_ack_sets() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            consumer = await client.subscribe("t", "sub", batch_index_ack_enabled=True, ack_group_time_ms=0)
            fake.push_message(fake.connections[0], consumer.consumer_id, _batch([b"b%d" % i for i in range(4)]), 1, 0)
            got = [await consumer.receive(5000) for _ in range(4)]
            consumer.acknowledge(got[1])
            await fake.wait_for(lambda: fake.commands(CommandType.ACK))
            (ack,) = fake.commands(CommandType.ACK)
            assert list(ack.message_id[0].ack_set) == [0b1101] and ack.message_id[0].batch_size == 4
            consumer.acknowledge_cumulative(got[3])
            await fake.wait_for(lambda: len(fake.commands(CommandType.ACK)) == 2)
            cumulative = fake.commands(CommandType.ACK)[1]
            assert cumulative.ack_type == AckType.Cumulative and cumulative.message_id[0].entry_id == 0

    run(main())


def test_key_shared_policies_fill_subscribe() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            await client.subscribe("t", "auto", consumer_type=ConsumerType.Key_Shared)
            await client.subscribe(
                "t", "sticky", consumer_type=ConsumerType.Key_Shared,
                key_shared_policy=ConsumerKeySharedPolicy(KeySharedMode.Sticky, True, [(0, 99), (1000, 65535)]),
            )
            auto, sticky = fake.commands(CommandType.SUBSCRIBE)
            assert auto.sub_type == ConsumerType.Key_Shared and auto.HasField("key_shared_meta")
            assert auto.key_shared_meta.key_shared_mode == KeySharedMode.AutoSplit
            assert not auto.key_shared_meta.allow_out_of_order_delivery
            assert sticky.key_shared_meta.key_shared_mode == KeySharedMode.Sticky
            assert sticky.key_shared_meta.allow_out_of_order_delivery
            assert [(r.start, r.end) for r in sticky.key_shared_meta.hash_ranges] == [(0, 99), (1000, 65535)]
        with pytest.raises(InvalidConfiguration, match="needs sticky_ranges"):
            ConsumerKeySharedPolicy(KeySharedMode.Sticky)
        with pytest.raises(InvalidConfiguration, match="overlap"):
            ConsumerKeySharedPolicy(KeySharedMode.Sticky, sticky_ranges=[(0, 10), (10, 20)])
        with pytest.raises(InvalidConfiguration, match="not within"):
            ConsumerKeySharedPolicy(KeySharedMode.Sticky, sticky_ranges=[(0, 65536)])

    run(main())


def test_sync_receive_takes_queued_messages_in_bulk(threaded_fake: ThreadedFake, client_factory) -> None:  # noqa: ANN001
    fake = threaded_fake.fake
    client: Client = client_factory(fake.url)
    consumer = client.subscribe("t", "sub", receiver_queue_size=100)
    core = consumer.core

    def push() -> None:
        for i in range(100):
            fake.push_message(fake.connections[0], core.consumer_id, _entry(b"m%d" % i), 1, i)

    threaded_fake.call(push)
    deadline = time.monotonic() + 5
    while core.queued() < 100 and time.monotonic() < deadline:
        time.sleep(0.01)
    calls = []
    original = client._run

    def counting(coro, timeout=None):  # noqa: ANN001, ANN202
        calls.append(coro)
        return original(coro, timeout)

    client._run = counting  # type: ignore[method-assign]
    got = [consumer.receive(RECEIVE_MS).data() for _ in range(100)]
    assert got == [b"m%d" % i for i in range(100)]
    # 100 messages in one round trip, not 100
    assert len(calls) == 1
    # taken messages count as consumed at once: the broker got its permits back in one FLOW
    deadline = time.monotonic() + 5
    while sum(_flows(fake, core.consumer_id)) < 200 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _flows(fake, core.consumer_id) == [100, 100]
    with pytest.raises(Timeout):
        consumer.receive(200)


def test_sync_batch_receive_and_listener_exclusivity(client_factory, url: str, topic: str) -> None:  # noqa: ANN001
    client: Client = client_factory(url)
    consumer = client.subscribe(topic, "sub", batch_receive_policy=ConsumerBatchReceivePolicy(10, -1, 500))
    producer = client.create_producer(topic)
    for i in range(25):
        producer.send_async(b"%d" % i, None)
    producer.flush()
    got: list = []
    deadline = time.monotonic() + 10
    while len(got) < 25 and time.monotonic() < deadline:
        batch = consumer.batch_receive()
        assert len(batch) <= 10
        got += batch
    assert [m.data() for m in got] == [b"%d" % i for i in range(25)]
    assert consumer.batch_receive() == []  # after the 500 ms timeout
    with_listener = client.subscribe(topic, "listened", message_listener=lambda c, m: None)
    with pytest.raises(InvalidConfiguration, match="listener"):
        with_listener.receive(100)
