"""Which consumer of an Exclusive / Failover subscription is active, as Pulsar chooses it."""

from __future__ import annotations

import itertools

from magnetar.broker.subscriptions.consumer import Consumer
from magnetar.broker.subscriptions.dispatchers.single_active import SingleActiveDispatcher, ring_index
from magnetar.protocol.enums import SubType
from magnetar.protocol.topic_name import TopicName


class _Topic:
    ledger_id = 1

    def __init__(self, name: str) -> None:
        self.topic_name = TopicName.parse(name)
        self.name = str(self.topic_name)
        self.partition_index = self.topic_name.partition_index


class _Subscription:
    """Records the active-consumer notifications the dispatcher asks for."""

    name = "fo"
    consumer_unacked_limit = 0

    def __init__(self, topic: str) -> None:
        self.topic = _Topic(topic)
        self.taken_back: list[str] = []

    def notify_active(self, consumers: list, active: Consumer, only: Consumer | None = None) -> None:
        pass

    def take_back(self, consumer: Consumer) -> None:
        self.taken_back.append(consumer.name)

    def remove_consumer(self, consumer: Consumer) -> None:
        pass


def _active(topic: str, consumers: list[tuple[str, int]]) -> str:
    sub = _Subscription(topic)
    dispatcher = SingleActiveDispatcher(sub)  # type: ignore[arg-type]
    for i, (name, priority) in enumerate(consumers):
        dispatcher.add_consumer(Consumer(None, i, name, sub, SubType.Failover, priority_level=priority))  # type: ignore[arg-type]
    assert dispatcher.active is not None
    return dispatcher.active.name


def test_non_partitioned_choice_ignores_subscription_order_and_follows_the_ring() -> None:
    names = ["alpha", "mid", "zeta"]
    for i in range(30):
        topic = f"persistent://public/default/t-{i}"
        expected = names[ring_index(topic, names)]
        for order in itertools.permutations(names):
            assert _active(topic, [(n, 0) for n in order]) == expected


def test_the_ring_spreads_topics_over_consumers() -> None:
    names = ["consumer-a", "consumer-b"]
    picks = [ring_index(f"persistent://public/default/spread-{i}", names) for i in range(40)]
    assert 10 <= picks.count(0) <= 30


def test_best_priority_level_wins_whatever_the_hash() -> None:
    for i in range(10):
        topic = f"persistent://public/default/p-{i}"
        assert _active(topic, [("zeta", 0), ("alpha", 1), ("mid", 2)]) == "zeta"
        assert _active(topic, [("alpha", 1), ("zeta", 0)]) == "zeta"


def test_partitions_take_turns_over_consumers_sorted_by_name() -> None:
    consumers = [("c", 0), ("a", 0), ("b", 0)]
    got = [_active(f"persistent://public/default/pt-partition-{p}", consumers) for p in range(6)]
    assert got == ["a", "b", "c", "a", "b", "c"]
