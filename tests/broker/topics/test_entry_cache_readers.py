"""A persistent topic keeps its recent entries in memory only while a subscription reads (issue 27):
as Pulsar's managed ledger, which caches for active cursors only, a cursor going inactive with its
subscription's last consumer."""

from __future__ import annotations

import pytest

from magnetar.broker.subscriptions.consumer import Consumer
from magnetar.broker.topics.persistent import PersistentTopic
from magnetar.protocol.enums import InitialPosition, SubType
from magnetar.storage import ManagedCursor
from magnetar.storage.cursor import CursorState
from tests.broker.topics.topic_harness import TopicHarness


class _Cursors:
    """Durable cursors as the service opens them, without persisting them."""

    def open_cursor(self, topic: PersistentTopic, name: str, mark_delete: int) -> ManagedCursor:
        return ManagedCursor(topic.ledger, topic.name, name, CursorState(mark_delete))

    def maybe_trim(self, topic: PersistentTopic) -> None:
        pass


class _Connection:
    writable = True

    def send_message(self, *args: object) -> None:
        pass


def _cached(harness: TopicHarness) -> list[int]:
    return sorted(harness.ledger.cache.entries)


def test_entries_are_cached_only_while_a_subscription_has_a_consumer(
    harness: TopicHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(harness.topic, "_cursors", _Cursors())
    producer = harness.producer("p")
    harness.topic.add_producer(producer)
    harness.publish(producer, 0)
    assert _cached(harness) == []  # no subscription
    sub = harness.topic.subscribe("s", durable=True, initial_position=InitialPosition.Earliest, start_message_id=None)
    harness.publish(producer, 1)
    assert _cached(harness) == []  # a subscription nobody consumes from: its cursor reads nothing now
    consumer = Consumer(_Connection(), 1, "c", sub, SubType.Shared)  # type: ignore[arg-type]
    sub.add_consumer(consumer)
    harness.publish(producer, 2)
    harness.publish(producer, 3)
    assert _cached(harness) == [2, 3]
    sub.remove_consumer(consumer)  # the last consumer left: nothing more is kept (the rest ages out)
    harness.publish(producer, 4)
    assert _cached(harness) == []
    harness.make_durable()
    assert [e.entry_id for e in harness.ledger.read_range(0, 4)] == [0, 1, 2, 3, 4]  # from the files
