"""``perf consume`` reports the fewest and the most messages any one subscription received, so that
a fan-out run can tell a broker that stopped delivering to a subscription, or delivered some
messages twice, from one that delivered each message once to every subscription."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

from magnetar.cli.perf.consume import ConsumerLoad, ConsumeRun, entry_keys, entry_runs
from magnetar.cli.perf.options import ConsumerSettings
from magnetar.client.api.message import Message, MessageId, UniformMessage
from magnetar.client.core.batch_messages import split_batch
from magnetar.protocol.batch import BatchMessage, encode_batch
from magnetar.protocol.schema import MessageMetadata

from .test_loads import FakeConsumer, FakeMessage


class SubscribingClient:
    """Gives each subscribe the next of the prepared consumers, and records what was asked."""

    def __init__(self, consumers: list[FakeConsumer]) -> None:
        self.consumers = list(consumers)
        self.subscribed: list[tuple[str, str]] = []

    async def subscribe(self, topic: str, subscription: str, **_options: Any) -> FakeConsumer:
        self.subscribed.append((topic, subscription))
        return self.consumers.pop(0)


def _messages(n: int) -> list[FakeMessage]:
    return [FakeMessage(b"x") for _ in range(n)]


def test_counts_per_subscription_add_up_the_consumers_of_each() -> None:
    # subscription a: two consumers sharing 100 messages; b: 150 (50 delivered twice) and nothing
    client = SubscribingClient([FakeConsumer(_messages(60)), FakeConsumer(_messages(40)),
                                FakeConsumer(_messages(150)), FakeConsumer([])])

    async def scenario() -> ConsumerLoad:
        load = ConsumerLoad(ConsumerSettings(["t"], ["a", "b"], consumers_per_subscription=2, duration_s=0.3))
        await load.start(client)
        await load.run(asyncio.Event())
        return load

    load = asyncio.run(scenario())
    assert client.subscribed == [("t", "a"), ("t", "a"), ("t", "b"), ("t", "b")]
    assert load.received == 250
    assert sorted(load.per_subscription()) == [100, 150]
    total = ConsumeRun(load).total()
    assert total.counters == {"fewest_per_subscription": 100, "most_per_subscription": 150, "entries": 250}


def test_a_subscription_that_got_nothing_is_the_fewest() -> None:
    client = SubscribingClient([FakeConsumer(_messages(100)), FakeConsumer([])])

    async def scenario() -> ConsumerLoad:
        load = ConsumerLoad(ConsumerSettings(["t"], ["a", "b"], duration_s=0.3))
        await load.start(client)
        await load.run(asyncio.Event())
        return load

    total = ConsumeRun(asyncio.run(scenario())).total()
    assert total.counters == {"fewest_per_subscription": 0, "most_per_subscription": 100, "entries": 100}


def test_entries_count_each_run_of_one_entry_once_across_takes() -> None:
    # 5 entries of 3, 1, 4, 1, 2 messages; the receiver hands out at most 4 at a time, so entry 2's
    # messages are split across two takes and still count as one entry
    sizes = [3, 1, 4, 1, 2]
    messages = [FakeMessage(b"x", entry=entry) for entry, n in enumerate(sizes) for _ in range(n)]

    class FourAtATime(FakeConsumer):
        def receive_nowait(self, n: int) -> list[FakeMessage]:
            return super().receive_nowait(min(n, 4))

    async def scenario() -> ConsumerLoad:
        load = ConsumerLoad(ConsumerSettings(["t"], ["a"], duration_s=0.3))
        await load.start(SubscribingClient([FourAtATime(messages)]))
        await load.run(asyncio.Event())
        return load

    load = asyncio.run(scenario())
    assert load.received == 11
    assert load.entries == 5
    assert ConsumeRun(load).total().counters["entries"] == 5


def test_entry_keys_of_magnetar_client_messages_come_from_their_shared_entry() -> None:
    first = Message(b"a", b"", None, MessageId(3, 4, 0, -1, 2), "t")
    second = Message(b"b", b"", None, MessageId(3, 4, 1, -1, 2), "t")
    third = Message(b"c", b"", None, MessageId(3, 5), "t")
    assert entry_keys([first, second, third]) == [(3, 4), (3, 4), (3, 5)]


def test_entry_runs_group_the_messages_of_one_entry_and_count_them() -> None:
    # a take holding the tail of entry 4 (2 messages), all of entry 5 (3) and a message by itself
    tail = [Message(b"a", b"", None, MessageId(3, 4, i, -1, 4), "t") for i in (2, 3)]
    whole = [Message(b"b", b"", None, MessageId(3, 5, i, -1, 3), "t") for i in range(3)]
    for group in (tail, whole):
        for message in group[1:]:
            message._ctx = group[0]._ctx  # as the consumer hands out a batch: one shared entry
    single = Message(b"c", b"", None, MessageId(3, 6), "t")
    runs = entry_runs([*tail, *whole, single])
    assert runs == [(tail[0], 2, 2), (whole[0], 3, 3), (single, 1, 1)]


def test_entry_runs_count_the_bytes_of_uniform_batches_without_their_payloads() -> None:
    payload = encode_batch([BatchMessage(bytes([i]) * 10, sequence_id=100 + i) for i in range(5)])
    meta = MessageMetadata(producer_name="p", sequence_id=100, publish_time=1, num_messages_in_batch=5)
    consumer = SimpleNamespace(topic="t", config=SimpleNamespace(schema=None))
    uniform = split_batch(payload, meta, None, (3, 7), 0, consumer, None, True)
    assert {type(m) for m in uniform} == {UniformMessage}
    other = _batch(8, [1, 2, 3], 1)
    single = Message(b"cc", b"", None, MessageId(3, 9), "t")
    runs = entry_runs([*uniform[1:], *other, single, *uniform[:2]])
    assert runs == [(uniform[1], 4, 40), (other[0], 3, 6), (single, 1, 2), (uniform[0], 2, 20)]
    assert sum(size for _, _, size in runs) == sum(len(m.data()) for m in [*uniform[1:], *other, single, *uniform[:2]])


def _batch(entry: int, sizes: list[int], published_ms: int) -> list[Message]:
    """One entry's messages as the consumer hands them out: one shared MessageEntry."""
    meta = MessageMetadata(producer_name="p", sequence_id=entry, publish_time=published_ms)
    messages = [Message(b"x" * n, meta, None, MessageId(7, entry, i, -1, len(sizes)), "t")
                for i, n in enumerate(sizes)]
    for message in messages[1:]:
        message._ctx = messages[0]._ctx
    return messages


def test_magnetar_client_batches_are_counted_per_entry_with_each_entrys_publish_time() -> None:
    now_ms = time.time_ns() // 1_000_000
    old = _batch(0, [1, 2, 3], now_ms - 3000)  # taken three at a time: split over two takes
    new = _batch(1, [4, 5], now_ms - 1000)
    consumer = FakeConsumer([*old, *new])

    class ThreeAtATime(FakeConsumer):
        def receive_nowait(self, n: int) -> list[Any]:
            return super().receive_nowait(min(n, 3))

    async def scenario() -> ConsumerLoad:
        load = ConsumerLoad(ConsumerSettings(["t"], ["a"], max_messages=5))
        await load.start(SubscribingClient([ThreeAtATime(consumer.queue)]))
        await load.run(asyncio.Event())
        return load

    load = asyncio.run(scenario())
    assert (load.received, load.received_bytes, load.entries) == (5, 15, 2)
    latency = load.latency.total()
    # three messages 3 s old, two 1 s old (and the run's own few milliseconds)
    assert latency.count == 5
    assert 3000 <= latency.p50 < 3500 and 1000 <= min(latency.p50, latency.mean) and latency.max < 3500
    assert 2200 <= latency.mean < 2700  # (3 * 3 s + 2 * 1 s) / 5
