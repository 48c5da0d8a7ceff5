"""The Key_Shared dispatcher against an in-memory topic: holding, order per key, joins, limits.

No sockets and no event loop: consumers' connections record MESSAGE frames, and the dispatch
loop is run by hand whenever it asked to be scheduled.
"""

from __future__ import annotations

import pytest

from magnetar.broker.config import BrokerConfig, ConfigError
from magnetar.broker.errors import BrokerError
from magnetar.broker.policies.resolution import TopicPolicies
from magnetar.broker.subscriptions.consumer import Consumer
from magnetar.broker.subscriptions.dispatchers import key_shared
from magnetar.broker.subscriptions.dispatchers.key_shared import KeySharedDispatcher, sticky_key
from magnetar.broker.subscriptions.subscription import Subscription
from magnetar.protocol.enums import KeySharedMode, ServerError, SubType
from magnetar.protocol.framing import encode_entry
from magnetar.protocol.hashing import key_shared_hash
from magnetar.protocol.schema import KeySharedMeta, MessageIdData, MessageMetadata
from magnetar.storage import CursorState, CursorStore, Entry, ManagedCursor

# keys by the half of the hash range their slot falls in (auto-split with two consumers:
# the first consumer keeps [32768, 65535], the second takes [0, 32767])
LOW = [k for k in (f"low-{i}" for i in range(200)) if key_shared_hash(k) < 32768][:4]
HIGH = [k for k in (f"high-{i}" for i in range(200)) if key_shared_hash(k) >= 32768][:4]


class FakeTopic:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.name = "persistent://public/default/t"
        self.ledger_id = 7
        self.partition_index = -1
        self.compacted = None
        self.terminated = False
        self.entries: list[Entry] = []
        self.policies = TopicPolicies()
        self.subscriptions: dict[str, Subscription] = {}

    @property
    def first_entry_id(self) -> int:
        return 0

    @property
    def last_readable_id(self) -> int:
        return len(self.entries) - 1

    last_entry_id = last_readable_id

    def cache_for_readers(self) -> None:
        pass  # no ledger cache here

    def append(self, key: str | None = None, messages: int = 1, ordering_key: bytes | None = None) -> int:
        meta = MessageMetadata(producer_name="p", sequence_id=len(self.entries), publish_time=1)
        if key is not None:
            meta.partition_key = key
        if ordering_key is not None:
            meta.ordering_key = ordering_key
        if messages > 1:
            meta.num_messages_in_batch = messages
        self.entries.append(Entry(len(self.entries), encode_entry(meta, b"x"), 0))
        return len(self.entries) - 1

    def read_entries(self, first: int, last: int) -> list[Entry]:
        return self.entries[first : last + 1]

    # the ledger the subscription's cursor reads from
    def read(self, entry_id: int) -> Entry:
        return self.entries[entry_id]

    def read_range(self, first: int, last: int, max_bytes: int | None = None) -> list[Entry]:
        return self.entries[first : last + 1]

    def bytes_from(self, entry_id: int) -> int:
        return sum(len(e.data) for e in self.entries[entry_id:])

    def read_entry_list(self, ids: list[int]) -> list[Entry]:
        return [self.entries[i] for i in ids if 0 <= i < len(self.entries)]

    def remove_subscription(self, name: str) -> None:
        pass


class FakeConnection:
    writable = True

    def __init__(self) -> None:
        self.sent: list[tuple[int, int]] = []  # (entry id, redelivery count)

    def send_message(self, consumer_id, ledger_id, partition, entry, redelivery_count, ack_set) -> None:  # noqa: ANN001
        self.sent.append((entry.entry_id, redelivery_count))


class Harness:
    def __init__(self, config: BrokerConfig) -> None:
        self.topic = FakeTopic(config)
        cursor = ManagedCursor(self.topic, self.topic.name, "ks", CursorState(-1), store=CursorStore(None))  # type: ignore[arg-type]
        self.sub = Subscription(self.topic, "ks", cursor)
        self.topic.subscriptions["ks"] = self.sub
        self.consumers: dict[str, Consumer] = {}

    def join(self, name: str, permits: int = 100, meta: KeySharedMeta | None = None) -> Consumer:
        c = Consumer(FakeConnection(), len(self.consumers), name, self.sub, SubType.Key_Shared)
        c.key_shared_meta = meta
        self.sub.add_consumer(c)
        self.consumers[name] = c
        if permits:
            self.sub.flow(c, permits)
        self.pump()
        return c

    def leave(self, name: str) -> None:
        self.sub.remove_consumer(self.consumers.pop(name))
        self.pump()

    @property
    def dispatcher(self) -> KeySharedDispatcher:
        d = self.sub.dispatcher
        assert isinstance(d, KeySharedDispatcher)
        return d

    def pump(self) -> None:
        d = self.sub.dispatcher
        for _ in range(100):
            if d is None or not getattr(d, "_wanted", False):
                return
            d._wanted = False
            d._dispatch()
        raise AssertionError("dispatcher keeps rescheduling itself")

    def sent(self, name: str) -> list[int]:
        return [e for e, _ in self.consumers[name].connection.sent]

    def send(self, *keys: str | None) -> list[int]:
        ids = [self.topic.append(k) for k in keys]
        self.sub.schedule_dispatch()
        self.pump()
        return ids

    def ack(self, *entry_ids: int, cumulative: bool = False) -> None:
        ids = [MessageIdData(ledger_id=7, entry_id=e) for e in entry_ids]
        any_consumer = next(iter(self.consumers.values()))
        self.sub.acknowledge(any_consumer, cumulative, ids)
        self.pump()


@pytest.fixture
def h(monkeypatch: pytest.MonkeyPatch) -> Harness:
    def schedule(self) -> None:  # noqa: ANN001
        self._wanted = True

    monkeypatch.setattr(KeySharedDispatcher, "schedule", schedule)
    return Harness(BrokerConfig(max_unacked_messages_per_consumer=0, max_unacked_messages_per_subscription=0))


def sticky_meta(*ranges: tuple[int, int]) -> KeySharedMeta:
    meta = KeySharedMeta(key_shared_mode=KeySharedMode.STICKY)
    for s, e in ranges:
        meta.hash_ranges.add(start=s, end=e)
    return meta


def test_sticky_key_precedence() -> None:
    meta = MessageMetadata(partition_key="p", ordering_key=b"o")
    assert sticky_key(meta) == b"o"
    assert sticky_key(MessageMetadata(partition_key="p")) == b"p"
    assert sticky_key(MessageMetadata(partition_key="aGk=", partition_key_b64_encoded=True)) == b"hi"
    assert sticky_key(MessageMetadata()) == b"NONE_KEY"
    assert sticky_key(None) == b"NONE_KEY"


def test_each_key_goes_to_its_owner(h: Harness) -> None:
    h.join("first")
    h.join("second")
    ids = h.send(*LOW, *HIGH)
    assert h.sent("second") == ids[: len(LOW)]
    assert h.sent("first") == ids[len(LOW) :]


def test_ordering_key_wins_over_partition_key(h: Harness) -> None:
    h.join("first")
    h.join("second")
    e = h.topic.append(HIGH[0], ordering_key=LOW[0].encode())
    h.sub.schedule_dispatch()
    h.pump()
    assert h.sent("second") == [e]


def test_full_consumer_holds_its_keys_while_others_flow(h: Harness) -> None:
    h.join("first", permits=2)  # upper half, room for two messages
    h.join("second")
    ids = h.send(*[HIGH[0], LOW[0]] * 5)
    high_ids, low_ids = ids[0::2], ids[1::2]
    assert h.sent("second") == low_ids  # never stalled by the full consumer
    assert h.sent("first") == high_ids[:2]
    assert h.sub.redelivery == set(high_ids[2:])
    assert h.sub.read_position == len(ids)
    h.sub.flow(h.consumers["first"], 2)
    h.pump()
    assert h.sent("first") == high_ids[:4]  # held entries go out in order, one key at a time
    h.sub.flow(h.consumers["first"], 10)
    h.pump()
    assert h.sent("first") == high_ids
    assert not h.sub.redelivery


def test_new_consumer_waits_until_older_entries_are_acked(h: Harness) -> None:
    h.join("first")
    before = h.send(LOW[0], LOW[1], HIGH[0])  # all to "first", not acked yet
    h.join("second")  # takes the lower half; join position = 3
    assert h.dispatcher.recently_joined() == {h.consumers["second"]: 3}
    after = h.send(LOW[0], HIGH[0], LOW[2])
    assert h.sent("first") == [*before, after[1]]
    assert h.sent("second") == []  # its keys wait: "first" may still be processing LOW[0]
    h.ack(before[0], before[1])
    assert h.sent("second") == []
    h.ack(before[2])  # everything before the join position is acknowledged
    assert h.sent("second") == [after[0], after[2]]
    assert h.dispatcher.recently_joined() == {}


def test_join_position_is_first_entry_never_sent(h: Harness) -> None:
    h.join("first", permits=1)
    h.join("other-low")  # takes the lower half
    sent_ids = h.send(HIGH[0], HIGH[1], LOW[0])  # HIGH[1] is held: "first" has no permits left
    assert h.sent("first") == [sent_ids[0]]
    h.join("third")  # splits "first"'s half: [32768, 49151] to "third"
    assert h.dispatcher.recently_joined()[h.consumers["third"]] == sent_ids[1]


def test_out_of_order_delivery_allowed_skips_the_wait(h: Harness) -> None:
    meta = KeySharedMeta(key_shared_mode=KeySharedMode.AUTO_SPLIT, allow_out_of_order_delivery=True)
    h.join("first", meta=meta)
    h.send(LOW[0], HIGH[0])
    h.join("second", meta=meta)
    assert h.dispatcher.recently_joined() == {}
    ids = h.send(LOW[0])
    assert h.sent("second") == ids


def test_leaving_consumers_entries_go_first_to_new_owner(h: Harness) -> None:
    h.join("first")
    h.join("second")
    low = h.send(LOW[0], LOW[0])
    assert h.sent("second") == low
    h.sub.flow(h.consumers["second"], 0)
    h.leave("second")
    assert h.sent("first") == low
    assert h.consumers["first"].connection.sent[-2:] == [(low[0], 1), (low[1], 1)]  # counted as redelivered
    more = h.send(LOW[0])
    assert h.sent("first") == [*low, *more]


def test_redelivered_entries_before_new_ones_of_the_same_key(h: Harness) -> None:
    first = h.join("first", permits=3)
    h.join("second")
    ids = h.send(HIGH[0], HIGH[0], HIGH[0])
    h.sub.redeliver_unacknowledged(first, [MessageIdData(ledger_id=7, entry_id=ids[0])])
    h.pump()  # no permits: nothing goes
    newer = h.send(HIGH[0])
    assert h.sub.redelivery == {ids[0], newer[0]}
    h.sub.flow(first, 1)
    h.pump()
    assert h.sent("first") == [*ids, ids[0]]
    h.sub.flow(first, 1)
    h.pump()
    assert h.sent("first") == [*ids, ids[0], newer[0]]


def test_lookahead_limit_stops_reading(h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(key_shared, "LOOKAHEAD_PER_CONSUMER", 3)
    h.join("first", permits=0)  # stuck
    h.join("second")
    ids = h.send(*([HIGH[0]] * 10), LOW[0])
    assert h.sub.redelivery == set(ids[:6])  # 2 consumers x 3
    assert h.sent("second") == []
    assert h.sub.read_position == 6
    h.sub.flow(h.consumers["first"], 100)
    h.pump()
    assert h.sent("first") == ids[:10]
    assert h.sent("second") == [ids[10]]


def test_sticky_gap_waits_for_a_consumer(h: Harness) -> None:
    h.join("low", meta=sticky_meta((0, 32767)))
    ids = h.send(LOW[0], HIGH[0], LOW[1])
    assert h.sent("low") == [ids[0], ids[2]]
    assert h.sub.redelivery == {ids[1]}
    h.join("high", meta=sticky_meta((32768, 65535)))
    # a joining consumer waits for what was sent before it joined, whatever the mode
    assert h.dispatcher.recently_joined() == {h.consumers["high"]: ids[1]}
    assert h.sent("high") == []
    h.ack(ids[0])
    assert h.sent("high") == [ids[1]]


def test_refusals_leave_no_trace(h: Harness) -> None:
    h.join("a", meta=sticky_meta((0, 100)))
    for name, meta, code in [
        ("overlap", sticky_meta((100, 200)), ServerError.ConsumerAssignError),
        ("auto", None, ServerError.ConsumerBusy),
        ("empty", sticky_meta(), ServerError.ConsumerAssignError),
    ]:
        c = Consumer(FakeConnection(), 99, name, h.sub, SubType.Key_Shared)
        c.key_shared_meta = meta
        with pytest.raises(BrokerError) as exc:
            h.sub.add_consumer(c)
        assert exc.value.code == code, name
        assert h.sub.consumers == [h.consumers["a"]]
        assert list(h.dispatcher.consumer_ranges().values()) == [[(0, 100)]]


def test_mode_can_change_once_everyone_left(h: Harness) -> None:
    h.join("a", meta=sticky_meta((0, 100)))
    h.leave("a")
    h.join("b")  # AUTO_SPLIT now
    assert h.dispatcher.mode == KeySharedMode.AUTO_SPLIT
    assert h.dispatcher.consumer_ranges() == {h.consumers["b"]: [(0, 65535)]}


def test_selector_setting() -> None:
    assert BrokerConfig().key_shared_selector == "auto_split_hash_range"
    assert BrokerConfig.from_values({"key_shared_selector": "consistent_hashing"}).key_shared_selector == (
        "consistent_hashing"
    )
    with pytest.raises(ConfigError, match="key_shared_selector"):
        BrokerConfig.from_values({"key_shared_selector": "round_robin"})
