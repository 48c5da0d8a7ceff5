"""How many entries a dispatcher reads for the permits its consumers granted.

An entry of a batch costs its messages' worth of permits, so a dispatcher that read one entry per
permit would read, and drop, dozens of 128 KiB batches to send one (the consume path's top cost
when it did). These tests run the dispatch loop by hand over an in-memory topic that counts the
entries read.
"""

from __future__ import annotations

import pytest

from magnetar.broker.config import BrokerConfig
from magnetar.broker.loop_urgency import LoopUrgency
from magnetar.broker.policies.resolution import TopicPolicies
from magnetar.broker.subscriptions.consumer import Consumer
from magnetar.broker.subscriptions.dispatchers.base import Dispatcher
from magnetar.broker.subscriptions.subscription import Subscription
from magnetar.protocol.enums import SubType
from magnetar.protocol.framing import encode_entry
from magnetar.protocol.schema import MessageMetadata
from magnetar.protocol.topic_name import TopicName
from magnetar.storage import CursorState, CursorStore, Entry, ManagedCursor


class CountingTopic:
    """A topic whose ledger is a list, counting every entry read from it."""

    def __init__(self, messages_per_entry: list[int]) -> None:
        self.config = BrokerConfig(max_unacked_messages_per_consumer=0, max_unacked_messages_per_subscription=0)
        self.name = "persistent://public/default/sizing"
        self.topic_name = TopicName.parse(self.name)
        self.ledger_id = 3
        self.partition_index = -1
        self.compacted = None
        self.terminated = False
        self.policies = TopicPolicies()
        self.subscriptions: dict[str, Subscription] = {}
        self.loop_urgency = LoopUrgency()
        self.entries_read = 0
        self.entries: list[Entry] = []
        for i, n in enumerate(messages_per_entry):
            meta = MessageMetadata(producer_name="p", sequence_id=i, publish_time=1)
            if n > 1:
                meta.num_messages_in_batch = n
            self.entries.append(Entry(i, encode_entry(meta, b"x" * n), 0))

    @property
    def first_entry_id(self) -> int:
        return 0

    @property
    def last_readable_id(self) -> int:
        return len(self.entries) - 1

    last_entry_id = last_readable_id

    def cache_for_readers(self) -> None:
        pass  # no ledger cache here

    def read(self, entry_id: int) -> Entry:
        self.entries_read += 1
        return self.entries[entry_id]

    def read_range(self, first: int, last: int, max_bytes: int | None = None) -> list[Entry]:
        out = self.entries[first : last + 1]
        self.entries_read += len(out)
        return out

    def bytes_from(self, entry_id: int) -> int:
        return sum(len(e.data) for e in self.entries[entry_id:])

    def remove_subscription(self, name: str) -> None:
        pass


class RecordingConnection:
    writable = True

    def __init__(self) -> None:
        self.sent: list[int] = []

    def send_message(self, consumer_id, ledger_id, partition, entry, redelivery_count, ack_set) -> None:  # noqa: ANN001
        self.sent.append(entry.entry_id)

    def send_active_consumer_change(self, consumer_id: int, active: bool) -> None:
        pass


@pytest.fixture(autouse=True)
def manual_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    def schedule(self: Dispatcher) -> None:
        self._scheduled = True

    monkeypatch.setattr(Dispatcher, "schedule", schedule)


def pump(sub: Subscription) -> None:
    dispatcher = sub.dispatcher
    for _ in range(1000):
        if dispatcher is None or not dispatcher._scheduled:
            return
        dispatcher._scheduled = False
        dispatcher._dispatch()
    raise AssertionError("dispatcher keeps rescheduling itself")


def subscribe(topic: CountingTopic, sub_type: SubType, consumers: int = 1) -> tuple[Subscription, list[Consumer]]:
    cursor = ManagedCursor(topic, topic.name, "s", CursorState(-1), store=CursorStore(None))  # type: ignore[arg-type]
    sub = Subscription(topic, "s", cursor)  # type: ignore[arg-type]
    topic.subscriptions["s"] = sub
    joined = []
    for i in range(consumers):
        consumer = Consumer(RecordingConnection(), i, f"c{i}", sub, sub_type)  # type: ignore[arg-type]
        sub.add_consumer(consumer)
        joined.append(consumer)
    return sub, joined


def consume_all(sub: Subscription, consumers: list[Consumer], permits: int, total_messages: int) -> None:
    """Grant permits as a client does (a new grant once the last one is used) until all is delivered."""
    for _ in range(10_000):
        if sum(c.msg_out_counter for c in consumers) >= total_messages:
            return
        for consumer in consumers:
            if consumer.permits <= 0:
                sub.flow(consumer, permits - consumer.permits)
        pump(sub)
    raise AssertionError("not everything was delivered")


@pytest.mark.parametrize("sub_type", [SubType.Exclusive, SubType.Failover, SubType.Shared])
def test_batches_are_read_about_once_each(sub_type: SubType) -> None:
    topic = CountingTopic([500] * 200)
    sub, consumers = subscribe(topic, sub_type, consumers=2 if sub_type == SubType.Shared else 1)
    consume_all(sub, consumers, permits=1000, total_messages=500 * 200)
    # every entry once, and a few read ahead while the average was being learnt
    assert topic.entries_read <= 200 + 10
    delivered = sorted(e for c in consumers for e in c.connection.sent)
    assert delivered == list(range(200))


def test_single_messages_still_fill_the_permits() -> None:
    topic = CountingTopic([1] * 1000)
    sub, (consumer,) = subscribe(topic, SubType.Exclusive)
    sub.flow(consumer, 300)
    pump(sub)
    assert consumer.connection.sent == list(range(300))
    assert topic.entries_read == 300


def test_the_read_size_follows_a_change_of_batch_size() -> None:
    topic = CountingTopic([1000] * 20 + [1] * 500)
    sub, (consumer,) = subscribe(topic, SubType.Exclusive)
    consume_all(sub, [consumer], permits=1000, total_messages=1000 * 20 + 500)
    assert consumer.connection.sent == list(range(520))
    assert topic.entries_read <= 520 + 10


def test_a_flow_that_leaves_the_consumer_without_permits_runs_no_dispatch() -> None:
    """The official consumer grants half its queue (500) at a time; an entry of 975 messages costs
    more, so every other FLOW leaves it at or below zero: no dispatch run is scheduled for it."""
    topic = CountingTopic([975] * 6)
    sub, (consumer,) = subscribe(topic, SubType.Exclusive)
    dispatcher = sub.dispatcher
    assert dispatcher is not None
    sub.flow(consumer, 1000)
    pump(sub)
    assert (consumer.connection.sent, consumer.permits) == ([0, 1], 1000 - 2 * 975)
    runs = []
    for _ in range(4):
        sub.flow(consumer, 500)
        runs.append(dispatcher._scheduled)
        pump(sub)
    # -950 -> -450 (nothing to run), -450 -> 50 (one entry: -925), -925 -> -425, -425 -> 75 (one entry)
    assert runs == [False, True, False, True]
    assert (consumer.connection.sent, consumer.permits) == ([0, 1, 2, 3], 75 - 975)
