"""Many producers on one client, the per-message fast path of ``send_nowait`` and the partitioned
producer's round robin: exact message sets and order per topic, batches cut by the delay, every
waiter completed with its own id."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from magnetar.client import AsyncClient
from magnetar.client.core.partitioned import AsyncPartitionedProducer
from magnetar.client.exceptions import AlreadyClosed
from magnetar.protocol.batch import BatchMessage, encode_batch
from magnetar.protocol.enums import CommandType

from ..conftest import run
from ..fakebroker import FakeBroker, entry_metadata, entry_payload
from .test_producer_frames import _bodies


def _sends_by_producer(fake: FakeBroker) -> dict[int, list[Any]]:
    by_producer: dict[int, list[Any]] = {}
    for frame in fake.frames(CommandType.SEND):
        by_producer.setdefault(frame.command.send.producer_id, []).append(frame)
    return by_producer


def test_a_hundred_producers_fed_in_turn_keep_each_topics_messages_in_order_and_cut_batches_by_delay() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            producers = [
                await client.create_producer(f"t-{i}", batching_max_messages=1000, batching_max_publish_delay_ms=5)
                for i in range(100)
            ]
            ids: dict[tuple[int, int], Any] = {}

            def waiter(k: int, j: int) -> Any:
                def done(error: Exception | None, message_id: Any) -> None:
                    assert error is None
                    ids[k, j] = message_id
                return done

            rounds = 30
            for j in range(rounds):  # as perf does: one message to each producer in turn
                for k, producer in enumerate(producers):
                    producer.send_nowait(b"%d:%d" % (k, j), waiter(k, j))
                if j % 10 == 9:
                    await asyncio.sleep(0.01)  # past the delay: the open batches are cut by their timers
            await asyncio.gather(*(p.flush() for p in producers))
            assert len(ids) == 100 * rounds
            by_producer = _sends_by_producer(fake)
            for k, producer in enumerate(producers):
                frames = by_producer[producer.producer_id]
                bodies = [body for f in frames for body in _bodies(f)]
                assert bodies == [b"%d:%d" % (k, j) for j in range(rounds)]
                # cut by the delay, never by the count: several batches, none of them full
                assert len(frames) >= 3 and all(entry_metadata(f).num_messages_in_batch < rounds for f in frames)
                seqs = [(f.command.send.sequence_id, f.command.send.highest_sequence_id or f.command.send.sequence_id)
                        for f in frames]
                assert seqs[0][0] == 0 and seqs[-1][1] == rounds - 1
                assert all(b[0] == a[1] + 1 for a, b in zip(seqs, seqs[1:], strict=False))
                got = [(ids[k, j].entry_id, ids[k, j].batch_index) for j in range(rounds)]
                assert got == sorted(got) and len(set(got)) == rounds

    run(main())


def test_send_nowait_with_options_or_not_bytes_takes_the_general_path() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            producer = await client.create_producer("t", batching_max_messages=5, batching_max_publish_delay_ms=5000)
            done: list[Any] = []

            def waiter(error: Exception | None, message_id: Any) -> None:
                done.append((error, message_id))

            producer.send_nowait(b"a", waiter)
            producer.send_nowait(b"b", waiter, properties={"k": "v"})
            producer.send_nowait(memoryview(b"c"), waiter)
            producer.send_nowait(b"d", waiter, 10)  # a sequence id given (positionally, as perf does)
            with pytest.raises(TypeError):
                producer.send_nowait(b"e", waiter, no_such_option=1)
            assert producer._pending_messages == 4  # the refused one was not counted
            producer.send_nowait(b"f", waiter)  # the fifth: the batch is full
            await producer.flush()
            (frame,) = fake.frames(CommandType.SEND)
            assert _bodies(frame) == [b"a", b"b", b"c", b"d", b"f"]
            send = frame.command.send
            assert (send.sequence_id, send.highest_sequence_id, send.num_messages) == (0, 11, 5)
            assert [e for e, _ in done] == [None] * 5
            assert [m.batch_index for _, m in done] == [0, 1, 2, 3, 4]

    run(main())


def test_send_nowait_on_a_closed_producer_fails_even_with_a_batch_open() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            fake.answer_sends = False
            producer = await client.create_producer("t", batching_max_publish_delay_ms=5000, send_timeout_millis=0)
            producer.send_nowait(b"a", None)
            closing = asyncio.ensure_future(producer.close())
            await asyncio.sleep(0)
            producer.send_nowait(b"b", None)  # while the first batch waits for its receipt: a new batch
            producer._closed = True  # the moment close() has marked it closed, before the batch is failed
            with pytest.raises(AlreadyClosed):
                producer.send_nowait(b"c", None)
            closing.cancel()

    run(main())


def test_partitioned_send_nowait_picks_the_partitions_partition_for_picks() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            topic = "persistent://public/default/parted"
            fake.partitions[topic] = fake.partitions["persistent://public/default/twin"] = 8
            producer = await client.create_producer(topic, batching_max_messages=7, batching_max_publish_delay_ms=1000)
            twin = await client.create_producer(
                "persistent://public/default/twin", batching_max_messages=7, batching_max_publish_delay_ms=1000
            )
            assert isinstance(producer, AsyncPartitionedProducer) and isinstance(twin, AsyncPartitionedProducer)
            twin._cursor = producer._cursor
            twin.clock = producer.clock = lambda: 0.0
            twin._last_switch = producer._last_switch = 0.0
            sizes = [10, 100, 5000, 60000, 70000, 1, 1, 128 * 1024, 3]
            expected = []
            for i in range(200):
                body = b"x" * sizes[i % len(sizes)]
                expected.append(twin.partition_for(body, {}))
                producer.send_nowait(body, None)
            await producer.flush()
            partition_of = {p.producer_id: i for i, p in enumerate(producer.producers)}
            sent: list[list[int]] = [[] for _ in range(8)]
            for frame in fake.frames(CommandType.SEND):
                sent[partition_of[frame.command.send.producer_id]] += [len(body) for body in _bodies(frame)]
            assert sent == [[sizes[i % len(sizes)] for i, p in enumerate(expected) if p == k] for k in range(8)]
            # a sequence id given goes the general way, to the partition partition_for picks
            where = twin.partition_for(b"s", {"sequence_id": 500})
            producer.send_nowait(b"s", None, 500)
            await producer.flush()
            last = fake.frames(CommandType.SEND)[-1]
            assert partition_of[last.command.send.producer_id] == where and last.command.send.sequence_id == 500

    run(main())


def test_a_router_set_after_creation_routes_plain_messages() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            topic = "persistent://public/default/rerouted"
            fake.partitions[topic] = 4
            producer = await client.create_producer(topic, batching_max_messages=7, batching_max_publish_delay_ms=1000)
            assert isinstance(producer, AsyncPartitionedProducer)
            producer.router = lambda message, partitions: 2
            for _ in range(10):
                producer.send_nowait(b"to-two", None)
            await producer.flush()
            partition_of = {p.producer_id: i for i, p in enumerate(producer.producers)}
            counts = [0] * 4
            for frame in fake.frames(CommandType.SEND):
                counts[partition_of[frame.command.send.producer_id]] += len(_bodies(frame))
            assert counts == [0, 0, 10, 0]

    run(main())


@pytest.mark.parametrize(
    "messages",
    [
        [(b"aaa", {}), (b"bbb", {}), (b"ccc", {})],  # one head all along: contents only
        [(b"aaa", {}), (b"bbb", {}), (b"ddddd", {}), (b"eee", {}), (b"f", {"properties": {"k": "v"}}), (b"ggg", {})],
        [(b"p", {"partition_key": "k"}), (b"qqq", {}), (b"rrr", {})],  # a described message first
        [(b"", {}), (b"", {}), (b"s" * 200, {}), (b"", {})],
    ],
)
def test_a_batch_of_plain_messages_of_one_size_or_more_keeps_the_exact_bytes(messages: list[tuple[bytes, dict]]) -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            producer = await client.create_producer(
                "t", batching_max_messages=len(messages), batching_max_publish_delay_ms=5000
            )
            for body, options in messages:
                producer.send_nowait(body, None, **options)
            await producer.flush()
            (frame,) = fake.frames(CommandType.SEND)
            assert frame.checksum_ok()
            expected = [
                BatchMessage(body, properties=options.get("properties") or {}, partition_key=options.get("partition_key"))
                for body, options in messages
            ]
            assert entry_payload(frame) == encode_batch(expected)

    run(main())


def test_options_at_their_defaults_leave_a_message_plain_and_others_do_not() -> None:
    async def main() -> None:
        async with FakeBroker() as fake, AsyncClient(fake.url) as client:
            producer = await client.create_producer("t", batching_max_messages=4, batching_max_publish_delay_ms=5000)
            producer.send_nowait(b"a", None)
            # every option at its default, as the sync producer passes them when one is set
            producer.send_nowait(
                b"b", None, 7, properties=None, partition_key=None, ordering_key=None, event_timestamp=None,
                deliver_at=None, deliver_after=None, null_value=False, replication_clusters=None,
                disable_replication=False,
            )
            producer.send_nowait(b"c", None, partition_key="")  # an empty key is still a key
            producer.send_nowait(b"d", None, properties={})
            await producer.flush()
            (frame,) = fake.frames(CommandType.SEND)
            send = frame.command.send
            assert (send.sequence_id, send.highest_sequence_id, send.num_messages) == (0, 9, 4)
            assert entry_payload(frame) == encode_batch(
                [BatchMessage(b"a"), BatchMessage(b"b"), BatchMessage(b"c", partition_key=""), BatchMessage(b"d")]
            )

    run(main())
