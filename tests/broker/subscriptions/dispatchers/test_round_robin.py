"""Which consumer of a Shared subscription gets the next entry: turns within the highest
priority level that can take it (Pulsar's priorityLevel: lower number, higher priority)."""

from __future__ import annotations

from magnetar.broker.subscriptions.consumer import Consumer
from magnetar.broker.subscriptions.dispatchers.round_robin import RoundRobinDispatcher
from magnetar.protocol.enums import SubType
from magnetar.protocol.topic_name import TopicName


class _Connection:
    writable = True


class _Topic:
    ledger_id = 1

    def __init__(self) -> None:
        self.topic_name = TopicName.parse("persistent://public/default/shared-priority")
        self.name = str(self.topic_name)
        self.partition_index = -1


class _Subscription:
    name = "shared"
    consumer_unacked_limit = 0

    def __init__(self) -> None:
        self.topic = _Topic()

    def remove_consumer(self, consumer: Consumer) -> None:
        pass


def _dispatcher(levels: list[tuple[str, int, int]]) -> tuple[RoundRobinDispatcher, dict[str, Consumer]]:
    """A dispatcher with consumers (name, priority level, permits)."""
    sub = _Subscription()
    dispatcher = RoundRobinDispatcher(sub)  # type: ignore[arg-type]
    consumers = {}
    for i, (name, level, permits) in enumerate(levels):
        consumer = Consumer(_Connection(), i, name, sub, SubType.Shared, priority_level=level)  # type: ignore[arg-type]
        consumer.add_permits(permits)
        dispatcher.add_consumer(consumer)
        consumers[name] = consumer
    return dispatcher, consumers


def _picks(dispatcher: RoundRobinDispatcher, count: int) -> list[str | None]:
    """Names of the consumers chosen for ``count`` single-message entries (permits deducted)."""
    picks: list[str | None] = []
    for _ in range(count):
        consumer = dispatcher.select(None, 1)  # type: ignore[arg-type]
        picks.append(consumer.name if consumer is not None else None)
        if consumer is not None:
            consumer.permits -= 1
    return picks


def test_equal_levels_take_turns() -> None:
    dispatcher, _ = _dispatcher([("a", 0, 10), ("b", 0, 10), ("c", 0, 10)])
    assert _picks(dispatcher, 6) == ["a", "b", "c", "a", "b", "c"]


def test_a_lower_level_gets_nothing_while_a_higher_one_has_permits() -> None:
    # the low-priority consumer subscribed first and sits first in the list
    dispatcher, _ = _dispatcher([("low", 2, 100), ("high-1", 1, 3), ("high-2", 1, 3)])
    assert _picks(dispatcher, 6) == ["high-1", "high-2", "high-1", "high-2", "high-1", "high-2"]
    # permits of level 1 spent: level 2 gets the rest
    assert _picks(dispatcher, 2) == ["low", "low"]


def test_higher_level_takes_over_again_once_it_grants_permits() -> None:
    dispatcher, consumers = _dispatcher([("high", 0, 1), ("low", 5, 10)])
    assert _picks(dispatcher, 3) == ["high", "low", "low"]
    consumers["high"].add_permits(2)
    assert _picks(dispatcher, 3) == ["high", "high", "low"]


def test_the_level_is_recomputed_when_consumers_leave() -> None:
    dispatcher, consumers = _dispatcher([("high", 0, 10), ("low", 1, 10)])
    assert _picks(dispatcher, 2) == ["high", "high"]
    dispatcher.remove_consumer(consumers["high"])
    assert _picks(dispatcher, 2) == ["low", "low"]


def test_nobody_with_permits_gets_none() -> None:
    dispatcher, _ = _dispatcher([("a", 0, 0), ("b", 1, 0)])
    assert _picks(dispatcher, 1) == [None]
