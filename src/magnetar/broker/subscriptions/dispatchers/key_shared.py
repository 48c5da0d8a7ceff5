"""Key_Shared subscriptions: every entry goes to the consumer owning its sticky key.

The sticky key of an entry is the ``ordering_key`` of its MessageMetadata when set, else its
``partition_key`` (base64-decoded when ``partition_key_b64_encoded``), else ``b"NONE_KEY"``,
as Pulsar's ``Commands.peekStickyKey``. A batch is one entry and goes by the key in its
MessageMetadata: key-based batching (``BatchingType.KeyBased``) puts one key per batch and
copies it there; the batch payload (possibly compressed) is never opened.

The consumer is chosen by a selector (see :mod:`magnetar.broker.subscriptions.selectors`) from the key's
hash. An entry whose consumer cannot take it now is *held*: it goes to the subscription's
redelivery set and the read position moves on, so other keys keep flowing to other consumers.
Held and redelivered entries are tried again first, lowest entry id first, and while a key
hash has an entry waiting, later entries of that hash wait too (order per key). Reading new
entries stops while the held set is at its look-ahead limit.

Order when consumers join (Pulsar's "recently joined consumers"): a consumer that joins while
earlier entries are unacknowledged records the *join position*, the first entry not yet
dispatched to anyone (entries before it were all sent, to the consumers then present). Until
every entry before its join position is acknowledged (the mark-delete position reaches it),
the new consumer receives only entries below that position (redeliveries of entries sent
before it joined); its newer entries are held. A consumer subscribing with
``allow_out_of_order_delivery`` (the whole subscription then allows it) skips this rule.
"""

from __future__ import annotations

import base64
import binascii
import heapq
import time
from typing import TYPE_CHECKING

from magnetar.broker.errors import BrokerError
from magnetar.broker.subscriptions.dispatchers.base import DispatchedSubscription, Dispatcher, entry_metadata
from magnetar.broker.subscriptions.selectors import (
    ConsumerSelector,
    make_selector,
    sticky_key_hash,
    validate_ranges,
)
from magnetar.protocol.enums import KeySharedMode, ServerError

if TYPE_CHECKING:
    from magnetar.broker.subscriptions.consumer import Consumer
    from magnetar.protocol.schema import MessageMetadata
    from magnetar.storage import Entry

#: the sticky key of entries that carry neither an ordering key nor a partition key
NONE_KEY = b"NONE_KEY"

#: held/redelivered entries beyond which no new entries are read (per consumer, and overall);
#: Pulsar's keySharedLookAheadMsgInReplayThresholdPerConsumer / ...PerSubscription
LOOKAHEAD_PER_CONSUMER = 2000
LOOKAHEAD_PER_SUBSCRIPTION = 20000


def sticky_key(meta: MessageMetadata | None) -> bytes:
    """The sticky key of an entry's metadata (ordering key, else partition key, else NONE_KEY)."""
    if meta is None:
        return NONE_KEY
    if meta.HasField("ordering_key"):
        return meta.ordering_key
    if meta.HasField("partition_key"):
        if meta.partition_key_b64_encoded:
            try:
                return base64.b64decode(meta.partition_key, validate=False)
            except (binascii.Error, ValueError):
                return meta.partition_key.encode("utf-8", "replace")
        return meta.partition_key.encode("utf-8", "replace")
    return NONE_KEY


def key_shared_mode(meta: object | None) -> KeySharedMode:
    """The mode a SUBSCRIBE asked for (AUTO_SPLIT without a KeySharedMeta)."""
    if meta is None:
        return KeySharedMode.AUTO_SPLIT
    try:
        return KeySharedMode(meta.key_shared_mode)  # type: ignore[attr-defined]
    except ValueError:
        raise BrokerError(
            ServerError.NotAllowedError,
            f"unknown Key_Shared mode {meta.key_shared_mode}",  # type: ignore[attr-defined]
        ) from None


def check_key_shared_meta(meta: object | None, consumer_name: str = "consumer") -> None:
    """Refuse a Key_Shared SUBSCRIBE whose KeySharedMeta is invalid on its own (before anything is created).

    Unknown modes get NotAllowedError; STICKY consumers without ranges, with ranges outside
    0..65535 or overlapping each other get ConsumerAssignError.
    """
    if key_shared_mode(meta) == KeySharedMode.STICKY:
        ranges = [(r.start, r.end) for r in meta.hash_ranges]  # type: ignore[union-attr]
        validate_ranges(ranges, f"consumer {consumer_name!r}")


def _describe(mode: KeySharedMode, allow_out_of_order: bool) -> str:
    return f"{mode.name}{' with' if allow_out_of_order else ' without'} out-of-order delivery"


class KeySharedDispatcher(Dispatcher):
    """Dispatches each entry to the consumer owning its sticky-key hash."""

    def __init__(self, subscription: DispatchedSubscription) -> None:
        super().__init__(subscription)
        self.mode = KeySharedMode.AUTO_SPLIT
        self.allow_out_of_order = False
        self.selector: ConsumerSelector | None = None
        #: recently joined consumers and their join positions, in joining order
        self._joined: dict[Consumer, int] = {}
        #: (key hash, messages) of entries in the redelivery set, to skip re-reading them
        self._keys: dict[int, tuple[int, int]] = {}
        #: held entries never dispatched to anyone yet
        self._unsent: set[int] = set()

    # -- membership ----------------------------------------------------------------------
    def add_consumer(self, consumer: Consumer) -> None:
        """Place the consumer with the selector (may raise BrokerError, leaving no trace)."""
        meta = consumer.key_shared_meta
        mode = key_shared_mode(meta)
        allow = bool(meta is not None and meta.allow_out_of_order_delivery)
        sub = self.subscription
        if self.consumers:
            if mode != self.mode or allow != self.allow_out_of_order:
                raise BrokerError(
                    ServerError.ConsumerBusy,
                    f"subscription {sub.name} is Key_Shared {_describe(self.mode, self.allow_out_of_order)}; "
                    f"consumer {consumer.name!r} asked for {_describe(mode, allow)}",
                )
            selector = self.selector
        else:
            selector = make_selector(mode, sub.topic.config.key_shared_selector)
        assert selector is not None
        selector.add_consumer(consumer)
        if not self.consumers:
            self.mode, self.allow_out_of_order, self.selector = mode, allow, selector
            self._joined.clear()
        elif not self.allow_out_of_order and sub.persistent:
            join = self._join_position()
            if join > sub.cursor.mark_delete + 1:
                self._joined[consumer] = join
        super().add_consumer(consumer)
        self.schedule()

    def remove_consumer(self, consumer: Consumer) -> None:
        if consumer in self.consumers and self.selector is not None:
            self.selector.remove_consumer(consumer)
        self._joined.pop(consumer, None)
        super().remove_consumer(consumer)

    def consumer_ranges(self) -> dict[Consumer, list[tuple[int, int]]]:
        """Hash ranges per consumer (for stats); ring segments with consistent hashing."""
        return self.selector.ranges() if self.selector is not None else {}

    def recently_joined(self) -> dict[Consumer, int]:
        """Consumers still waiting for older entries to be acknowledged, with their join positions."""
        return dict(self._joined)

    def acknowledged(self) -> None:
        """Acks may release recently joined consumers: look again."""
        if self._joined:
            self.schedule()

    def _join_position(self) -> int:
        """First entry not yet dispatched to anyone: everything before it was sent."""
        sub = self.subscription
        redelivery = sub.redelivery
        self._unsent = {e for e in self._unsent if e in redelivery}
        position = sub.read_position
        if self._unsent:
            position = min(position, min(self._unsent))
        return position

    def _release_joined(self) -> None:
        if not self._joined:
            return
        ready = self.subscription.cursor.mark_delete + 1
        for consumer, join in list(self._joined.items()):
            if join <= ready:
                del self._joined[consumer]

    # -- selection -----------------------------------------------------------------------
    def select(self, entry: Entry, messages: int, meta: MessageMetadata | None = None) -> Consumer | None:
        """The consumer owning the entry's key if it may take it now (live delivery on non-persistent topics)."""
        hash_, _ = self._key_of(entry)
        return self._target(hash_, messages, entry.entry_id, None)

    def _key_of(self, entry: Entry) -> tuple[int, int]:
        meta = entry_metadata(entry)
        messages = max(1, meta.num_messages_in_batch) if meta is not None else 1
        return sticky_key_hash(sticky_key(meta)), messages

    def _target(self, hash_: int, messages: int, entry_id: int, replay_limit: int | None) -> Consumer | None:
        consumer = self.selector.select(hash_) if self.selector is not None else None
        if consumer is None:
            return None
        join = self._joined.get(consumer)
        if join is not None:
            limit = join if replay_limit is None else min(join, replay_limit)
            if entry_id >= limit:
                return None
        if not consumer.can_take(messages) or not consumer.connection.writable:
            return None
        return consumer

    def _lookahead_limit(self) -> int:
        return min(LOOKAHEAD_PER_SUBSCRIPTION, LOOKAHEAD_PER_CONSUMER * max(1, len(self.consumers)))

    def _send(self, consumer: Consumer, entry: Entry, messages: int) -> None:
        sub = self.subscription
        eid = entry.entry_id
        ack_set = sub.cursor.unacked_batch_mask(eid) if sub.batch_index_ack_enabled else None
        consumer.deliver(entry, messages, sub.redelivery_counts.get(eid, 0), ack_set)

    def _forget(self, entry_id: int) -> None:
        self._keys.pop(entry_id, None)
        self._unsent.discard(entry_id)

    # -- the loop ------------------------------------------------------------------------
    def _dispatch_entries(self) -> None:
        sub = self.subscription
        if not self.consumers or self.selector is None:
            return
        self._release_joined()
        if sub.blocked_on_unacked() or not self.has_capacity():
            return
        budget, _ = self.turn_budget()  # entries sent or held this turn (the bytes follow from them)
        throttle = sub.dispatch_throttle
        if throttle is not None:  # the dispatch rates: entries limited per run, what went counted after it
            if not (budget := throttle.allowed(budget, self.schedule)):
                return
            sent_before = (sub.msg_out_counter, sub.bytes_out_counter)
        #: key hashes with an earlier entry still waiting: their later entries wait too
        blocked: set[int] = set()
        complete, budget = self._replay(blocked, budget)
        if complete and budget > 0:
            budget = self._read_new(blocked, budget)
        if throttle is not None:
            throttle.consume(sub.msg_out_counter - sent_before[0], sub.bytes_out_counter - sent_before[1])
        if len(self._keys) > 2 * len(sub.redelivery) + 1024:
            self._keys = {e: k for e, k in self._keys.items() if e in sub.redelivery}
        if budget <= 0:
            self.schedule()

    def _replay(self, blocked: set[int], budget: int) -> tuple[bool, int]:
        """Send what can go of the redelivery set, lowest entry first.

        Examines at most the lowest ``LOOKAHEAD_PER_SUBSCRIPTION`` entries; the budget counts
        entries sent. Returns (whole set examined, budget left).
        """
        sub = self.subscription
        redelivery = sub.redelivery
        if not redelivery:
            return True, budget
        cursor = sub.cursor
        delayed = sub.delayed
        now_ms = int(time.time() * 1000)
        replay_limit = next(iter(self._joined.values()), None)
        complete = len(redelivery) <= LOOKAHEAD_PER_SUBSCRIPTION
        ids = sorted(redelivery) if complete else heapq.nsmallest(LOOKAHEAD_PER_SUBSCRIPTION, redelivery)
        cursor.prefetch(ids[: min(budget, 200)])  # what is not in memory is read off the loop meanwhile
        for eid in ids:
            if budget <= 0:
                return False, budget
            if cursor.is_acked(eid):
                redelivery.discard(eid)
                self._forget(eid)
                continue
            known = self._keys.get(eid)
            entry = None
            if known is None:
                found = cursor.read_ids([eid])
                if found is None:  # read off the loop: replayed once it is in
                    return False, budget
                if not found:  # trimmed meanwhile
                    redelivery.discard(eid)
                    self._forget(eid)
                    continue
                entry = found[0]
                meta = entry_metadata(entry)
                if delayed is not None and meta is not None and meta.deliver_at_time > now_ms:
                    redelivery.discard(eid)
                    self._forget(eid)
                    delayed.add(eid, meta.deliver_at_time)
                    continue
                messages = max(1, meta.num_messages_in_batch) if meta is not None else 1
                known = (sticky_key_hash(sticky_key(meta)), messages)
                self._keys[eid] = known
            hash_, messages = known
            if hash_ in blocked:
                continue
            consumer = self._target(hash_, messages, eid, replay_limit)
            if consumer is None:
                blocked.add(hash_)
                if not self.has_capacity():
                    return False, budget
                continue
            if entry is None:
                found = cursor.read_ids([eid])
                if found is None:
                    return False, budget
                if not found:
                    redelivery.discard(eid)
                    self._forget(eid)
                    continue
                entry = found[0]
            redelivery.discard(eid)
            self._forget(eid)
            self._send(consumer, entry, messages)
            budget = 0 if self.turn_spent() else budget - 1
        return complete, budget

    def _read_new(self, blocked: set[int], budget: int) -> int:
        """Read entries from the read position on, sending or holding each; returns budget left."""
        sub = self.subscription
        topic = sub.topic
        cursor = sub.cursor
        redelivery = sub.redelivery
        delayed = sub.delayed
        batch = topic.config.dispatch_batch_entries
        limit = self._lookahead_limit()
        now_ms = int(time.time() * 1000)
        while budget > 0 and len(redelivery) < limit and self.has_capacity():
            entries = sub.read_new_entries(self.read_limit(batch))
            if not entries:
                return budget
            looked_at = seen_messages = 0
            for entry in entries:
                eid = entry.entry_id
                if cursor.is_acked(eid):
                    continue
                budget -= 1
                meta = entry_metadata(entry)
                if delayed is not None and meta is not None and meta.deliver_at_time > now_ms:
                    delayed.add(eid, meta.deliver_at_time)
                    continue
                messages = max(1, meta.num_messages_in_batch) if meta is not None else 1
                looked_at += 1
                seen_messages += messages
                hash_ = sticky_key_hash(sticky_key(meta))
                consumer = None if hash_ in blocked else self._target(hash_, messages, eid, None)
                if consumer is None:
                    blocked.add(hash_)
                    redelivery.add(eid)
                    self._keys[eid] = (hash_, messages)
                    self._unsent.add(eid)
                else:
                    self._send(consumer, entry, messages)
                    if self.turn_spent():
                        budget = 0  # this turn's time is used: the rest goes next turn
                if budget <= 0 or len(redelivery) >= limit or not self.has_capacity():
                    cursor.rewind_to(eid + 1)  # the entries after this one were read, not looked at
                    self._sampled(looked_at, seen_messages)
                    return budget
            self._sampled(looked_at, seen_messages)
        return budget
