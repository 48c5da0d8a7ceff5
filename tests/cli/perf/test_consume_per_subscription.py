"""``perf consume`` reports the fewest and the most messages any one subscription received, so that
a fan-out run can tell a broker that stopped delivering to a subscription, or delivered some
messages twice, from one that delivered each message once to every subscription."""

from __future__ import annotations

import asyncio
from typing import Any

from magnetar.cli.perf.consume import ConsumerLoad, ConsumeRun, entry_keys
from magnetar.cli.perf.options import ConsumerSettings
from magnetar.client.api.message import Message, MessageId

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
