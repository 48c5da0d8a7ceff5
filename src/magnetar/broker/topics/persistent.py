"""A persistent topic: its ledger, producers, subscriptions and the publish path."""

from __future__ import annotations

import itertools
import logging
import time
from collections import deque
from typing import TYPE_CHECKING

from magnetar.broker.errors import BrokerError
from magnetar.broker.policies import TopicPolicies
from magnetar.broker.subscriptions.subscription import Subscription
from magnetar.broker.topics import lifecycle
from magnetar.protocol.enums import InitialPosition, ProducerAccessMode, ServerError
from magnetar.protocol.framing import ProtocolError, parse_entry_metadata
from magnetar.protocol.topic_name import TopicName
from magnetar.storage import CursorState, Entry, EntryNotFoundError, ManagedLedger, StorageError

if TYPE_CHECKING:
    from magnetar.broker.service import BrokerService
    from magnetar.broker.topics.compaction import CompactedView
    from magnetar.broker.topics.producer import Producer

log = logging.getLogger("magnetar.broker.topics.persistent")

#: the start message id a client sends for "earliest" (-1, -1 as uint64) and "latest"
EARLIEST_ID = (1 << 64) - 1
LATEST_ID = (1 << 63) - 1

_producer_names = itertools.count()


class Topic:
    """One persistent topic (or one partition of a partitioned topic).

    Publishing appends to the ledger at once; the SEND_RECEIPT goes out when the group commit
    covering the entry completes (``on_durable``), which is also when subscriptions may read it.
    """

    #: the latest message per key up to a horizon, when the topic was compacted (compaction.py)
    compacted: CompactedView | None = None
    #: while a compaction runs: the first entry it still has to read (not trimmed meanwhile)
    compaction_pin: int | None = None

    def __init__(self, service: BrokerService, topic_name: TopicName, ledger: ManagedLedger) -> None:
        self.service = service
        self.topic_name = topic_name
        self.name = str(topic_name)
        #: index of this partition of a partitioned topic (-1 when not a partition)
        self.partition_index = topic_name.partition_index
        self.ledger = ledger
        self.ledger_id = ledger.ledger_id
        self.producers: dict[str, Producer] = {}
        self.subscriptions: dict[str, Subscription] = {}
        #: highest entry id consumers may read (covered by a completed sync)
        self.last_readable_id = ledger.last_entry_id
        #: (producer, sequence id, highest sequence id, entry id gating the receipt, duplicate?, bytes)
        self._receipts: deque[tuple[Producer, int, int, int, bool, int]] = deque()
        #: highest sequence id appended per producer name (deduplication state)
        self.last_sequence_ids: dict[str, int] = {}
        #: entry id up to which ``last_sequence_ids`` was last persisted
        self.dedup_snapshot_entry_id = -1
        self.dedup_enabled = False
        self.policies = TopicPolicies()
        #: the backlog quota policy in force while a quota is exceeded (producers are refused)
        self.quota_blocked: str | None = None
        #: a terminated topic accepts no more messages
        self.terminated = False
        #: when a producer or subscription last came or went (inactive-topic expiry)
        self.last_active = time.time()
        #: per producer, the highest sequence id whose entry is durable (what snapshots persist)
        self.durable_sequence_ids: dict[str, int] = {}
        self.dedup_dirty = False
        #: the Exclusive / ExclusiveWithFencing / promoted WaitForExclusive producer, if any
        self.exclusive_producer: Producer | None = None
        self._waiting: list[Producer] = []
        #: bumped each time a producer takes exclusive access; fenced producers carry an older one
        self.topic_epoch = 0
        self.closed = False
        self.msg_in_counter = 0
        self.bytes_in_counter = 0

    # -- producers -----------------------------------------------------------------------
    def add_producer(self, producer: Producer) -> bool:
        """Attach a producer, enforcing names and access modes.

        Returns False when a WaitForExclusive producer was queued behind the current holder
        (it is attached later, and told so through its connection); raises BrokerError when
        the producer is refused.
        """
        if producer.name in self.producers or any(p.name == producer.name for p in self._waiting):
            raise BrokerError(
                ServerError.ProducerBusy, f"producer with name {producer.name!r} is already connected to {self.name}"
            )
        if self.terminated:
            raise BrokerError(ServerError.TopicTerminatedError, f"topic {self.name} was terminated")
        limit = self.policies.max_producers
        if limit > 0 and len(self.producers) >= limit:
            raise BrokerError(ServerError.ProducerBusy, f"topic {self.name} reached its maximum of {limit} producers")
        blocked = self.quota_blocked or lifecycle.quota_exceeded(self)
        if blocked in ("producer_request_hold", "producer_exception"):
            self.quota_blocked = blocked
            code = (
                ServerError.ProducerBlockedQuotaExceededError
                if blocked == "producer_request_hold"
                else ServerError.ProducerBlockedQuotaExceededException
            )
            raise BrokerError(code, f"cannot create producer on {self.name}: backlog quota exceeded ({blocked})")
        mode = producer.access_mode
        holder = self.exclusive_producer
        if mode == ProducerAccessMode.Shared:
            if holder is not None or self._waiting:
                name = holder.name if holder is not None else self._waiting[0].name
                raise BrokerError(ServerError.ProducerBusy, f"topic {self.name} has an exclusive producer {name!r}")
        elif mode == ProducerAccessMode.Exclusive:
            if holder is not None or self.producers:
                raise BrokerError(
                    ServerError.ProducerFenced,
                    f"topic {self.name} has existing producers; exclusive access refused",
                )
            self._take_exclusive(producer)
        elif mode == ProducerAccessMode.ExclusiveWithFencing:
            for waiting in self._waiting:
                waiting.connection.refuse_waiting_producer(waiting, f"fenced by producer {producer.name!r}")
            self._waiting.clear()
            for old in list(self.producers.values()):
                old.connection.close_producer_by_broker(old)
            self._take_exclusive(producer)
        elif mode == ProducerAccessMode.WaitForExclusive:
            if holder is not None or self.producers:
                self._waiting.append(producer)
                return False
            self._take_exclusive(producer)
        self.producers[producer.name] = producer
        return True

    def _take_exclusive(self, producer: Producer) -> None:
        if producer.topic_epoch is not None and producer.topic_epoch < self.topic_epoch:
            raise BrokerError(
                ServerError.ProducerFenced,
                f"producer {producer.name!r} was fenced: topic epoch {producer.topic_epoch} < {self.topic_epoch}",
            )
        self.topic_epoch = max(self.topic_epoch + 1, producer.topic_epoch or 0)
        self.exclusive_producer = producer

    def remove_producer(self, producer: Producer) -> None:
        """Detach a producer; a waiting exclusive producer may take over."""
        producer.closed = True
        self.last_active = time.time()
        if producer in self._waiting:
            self._waiting.remove(producer)
            return
        if self.producers.get(producer.name) is producer:
            del self.producers[producer.name]
        if self.exclusive_producer is producer:
            self.exclusive_producer = None
        while self._waiting and not self.producers:
            nxt = self._waiting.pop(0)
            if nxt.closed:
                continue
            self._take_exclusive(nxt)
            self.producers[nxt.name] = nxt
            nxt.connection.producer_ready(nxt)

    def generate_producer_name(self) -> str:
        """A producer name unique on this broker, for producers that did not choose one."""
        return f"standalone-{self.service.instance_id}-{next(_producer_names)}"

    # -- publishing ----------------------------------------------------------------------
    def publish(
        self, producer: Producer, sequence_id: int, highest_sequence_id: int, num_messages: int, entry: bytes, crc: int
    ) -> None:
        """Append one entry; its receipt is sent once it is durable. Raises StorageError.

        With deduplication enabled, an entry whose (highest) sequence id is not above the last
        one stored for its producer name is not stored; its receipt (with message id -1:-1)
        still goes out, after the receipts of everything before it.
        """
        if self.terminated:
            producer.connection.send_send_error(
                producer.producer_id, sequence_id, ServerError.TopicTerminatedError, f"topic {self.name} was terminated"
            )
            return
        sequence = highest_sequence_id if highest_sequence_id > sequence_id else sequence_id
        last = self.last_sequence_ids.get(producer.name, -1)
        if self.dedup_enabled and sequence <= last:
            gate = self.ledger.last_entry_id
            if not self._receipts and gate <= self.last_readable_id:
                producer.connection.send_receipt(producer.producer_id, sequence_id, highest_sequence_id, -1, -1)
            else:
                self._receipts.append((producer, sequence_id, highest_sequence_id, gate, True, 0))
            return
        entry_id = self.ledger.append(entry, crc)
        if sequence > last:
            self.last_sequence_ids[producer.name] = sequence
        self._receipts.append((producer, sequence_id, highest_sequence_id, entry_id, False, len(entry)))
        producer.connection.publish_started(len(entry))
        producer.msg_in_counter += num_messages
        producer.bytes_in_counter += len(entry)
        self.msg_in_counter += num_messages
        self.bytes_in_counter += len(entry)
        self.service.committer.appended(self)

    def last_sequence_id(self, producer_name: str) -> int:
        """What PRODUCER_SUCCESS reports: the producer's last stored sequence id under dedup, else -1."""
        return self.last_sequence_ids.get(producer_name, -1) if self.dedup_enabled else -1

    def terminate(self) -> tuple[int, int]:
        """Accept no more messages; returns (ledger id, entry id) of the last one."""
        self.terminated = True
        for producer in list(self.producers.values()):
            producer.connection.close_producer_by_broker(producer)
        return self.ledger_id, self.ledger.last_entry_id

    def restore_sequence_ids(self, snapshot: dict[str, int], snapshot_entry_id: int) -> None:
        """Rebuild deduplication state: a persisted snapshot plus the entries appended after it."""
        self.last_sequence_ids = dict(snapshot)
        self.durable_sequence_ids = self.last_sequence_ids
        self.dedup_snapshot_entry_id = snapshot_entry_id
        first = max(snapshot_entry_id + 1, self.ledger.first_entry_id)
        last = self.ledger.last_entry_id
        seqs = self.last_sequence_ids
        for start in range(first, last + 1, 1000):
            for entry in self.ledger.read_range(start, min(last, start + 999)):
                try:
                    meta = parse_entry_metadata(entry.data)
                except ProtocolError:
                    continue
                seq = max(meta.sequence_id, meta.highest_sequence_id)
                if seq > seqs.get(meta.producer_name, -1):
                    seqs[meta.producer_name] = seq
        self.durable_sequence_ids = dict(seqs)

    def dedup_snapshot(self) -> tuple[int, dict[str, int]] | None:
        """(entry id, sequence ids durable up to it) to persist, or None when unchanged."""
        if not self.dedup_dirty:
            return None
        self.dedup_dirty = False
        return self.last_readable_id, dict(self.durable_sequence_ids)

    def on_durable(self, last_durable_id: int) -> None:
        """Entries up to ``last_durable_id`` are safe: send their receipts, let consumers read them."""
        receipts = self._receipts
        ledger_id = self.ledger_id
        while receipts and receipts[0][3] <= last_durable_id:
            producer, sequence_id, highest, entry_id, duplicate, size = receipts.popleft()
            if size:
                producer.connection.publish_done(size)
            if not duplicate:
                self.durable_sequence_ids[producer.name] = max(sequence_id, highest)
                self.dedup_dirty = True
            if not producer.closed:
                if duplicate:
                    producer.connection.send_receipt(producer.producer_id, sequence_id, highest, -1, -1)
                else:
                    producer.connection.send_receipt(producer.producer_id, sequence_id, highest, ledger_id, entry_id)
        if last_durable_id > self.last_readable_id:
            self.last_readable_id = last_durable_id
            for sub in self.subscriptions.values():
                sub.schedule_dispatch()

    def on_sync_failed(self, error: BaseException) -> None:
        """A sync failed: every producer still waiting gets a PersistenceError."""
        while self._receipts:
            producer, sequence_id, _, _, _, size = self._receipts.popleft()
            if size:
                producer.connection.publish_done(size)
            if not producer.closed:
                producer.connection.send_send_error(
                    producer.producer_id, sequence_id, ServerError.PersistenceError, f"storage failure: {error}"
                )

    # -- reading -------------------------------------------------------------------------
    @property
    def first_entry_id(self) -> int:
        """Oldest entry still stored."""
        return self.ledger.first_entry_id

    @property
    def last_entry_id(self) -> int:
        """Newest entry readable by consumers (-1 when none)."""
        return self.last_readable_id

    def read_entries(self, first: int, last: int) -> list[Entry]:
        """Entries first..last that are still stored."""
        first = max(first, self.ledger.first_entry_id)
        if first > last:
            return []
        return self.ledger.read_range(first, last)

    def read_entry_list(self, entry_ids: list[int]) -> list[Entry]:
        """The given entries, skipping any no longer stored."""
        out = []
        for entry_id in entry_ids:
            try:
                out.append(self.ledger.read(entry_id))
            except EntryNotFoundError:
                continue
        return out

    def entry_publish_time(self, entry_id: int) -> int:
        """Publish time (ms) of an entry, from its metadata."""
        try:
            return parse_entry_metadata(self.ledger.read(entry_id).data).publish_time
        except (ProtocolError, StorageError):
            return 0

    def find_entry_by_time(self, publish_time_ms: int) -> int:
        """First entry published at or after ``publish_time_ms`` (one past the last if none)."""
        lo, hi = self.first_entry_id, self.last_readable_id + 1
        while lo < hi:
            mid = (lo + hi) // 2
            if self.entry_publish_time(mid) < publish_time_ms:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def last_message_id(self) -> tuple[int, int, int]:
        """(ledger id, entry id, batch index) of the last readable message; entry -1 when empty."""
        last = self.last_readable_id
        if last < self.ledger.first_entry_id:
            return self.ledger_id, -1, -1
        try:
            meta = parse_entry_metadata(self.ledger.read(last).data)
        except (ProtocolError, StorageError):
            return self.ledger_id, last, -1
        batch_index = meta.num_messages_in_batch - 1 if meta.HasField("num_messages_in_batch") else -1
        return self.ledger_id, last, batch_index

    # -- subscriptions -------------------------------------------------------------------
    def subscribe(
        self,
        name: str,
        *,
        durable: bool,
        initial_position: InitialPosition,
        start_message_id: tuple[int, int] | None,
        read_compacted: bool = False,
    ) -> Subscription:
        """The subscription ``name``, created at its start position if it does not exist.

        For a ``read_compacted`` subscriber "earliest" is the first entry of the compacted view
        when the topic's own ledger no longer holds it.
        """
        sub = self.subscriptions.get(name)
        if sub is not None:
            return sub
        earliest = self.ledger.first_entry_id
        view = self.compacted
        if read_compacted and view is not None and view.first_id is not None:
            earliest = min(earliest, view.first_id)
        if start_message_id is not None:
            mark_delete = self._start_position(*start_message_id, earliest=earliest) - 1
        elif initial_position == InitialPosition.Earliest:
            mark_delete = earliest - 1
        else:
            mark_delete = self.last_readable_id
        cursor = CursorState(mark_delete=mark_delete)
        sub = Subscription(self, name, cursor, durable=durable)
        self.subscriptions[name] = sub
        if durable:
            self.service.cursor_dirty(self, sub)
        return sub

    def _start_position(self, ledger_id: int, entry_id: int, earliest: int | None = None) -> int:
        """First entry to deliver for a start message id (earliest, latest or a real id)."""
        if earliest is None:
            earliest = self.ledger.first_entry_id
        if ledger_id == EARLIEST_ID and entry_id == EARLIEST_ID:
            return earliest
        if ledger_id >= LATEST_ID:
            return self.last_readable_id + 1
        if ledger_id < self.ledger_id:
            return earliest
        if ledger_id > self.ledger_id:
            return self.last_readable_id + 1
        return min(max(entry_id, earliest), self.last_readable_id + 1)

    def restore_subscription(self, name: str, state: bytes) -> None:
        """Recreate a durable subscription from its persisted cursor."""
        cursor = CursorState.from_bytes(state)
        self.subscriptions[name] = Subscription(self, name, cursor, durable=True)

    def remove_subscription(self, name: str) -> None:
        """Forget a subscription (unsubscribe, or the last reader of a non-durable one left)."""
        self.last_active = time.time()
        sub = self.subscriptions.pop(name, None)
        if sub is not None and sub.durable:
            self.service.cursor_deleted(self, name)
        self.service.maybe_trim(self)

    def cursor_moved(self, sub: Subscription) -> None:
        """A subscription acknowledged something: persist it soon, maybe free segments."""
        if sub.durable:
            self.service.cursor_dirty(self, sub)

    def trim_position(self) -> int:
        """Entries below this id are acknowledged by every durable subscription (and, on a compacted
        topic, compacted: like Pulsar's ``__compaction`` cursor, without showing as a subscription)."""
        positions = [s.cursor.mark_delete + 1 for s in self.subscriptions.values() if s.durable]
        if self.compacted is not None:
            positions.append(self.compacted.horizon + 1)
        if self.compaction_pin is not None:
            positions.append(self.compaction_pin)
        return min(positions) if positions else self.last_readable_id + 1

    def unsubscribe(self, consumer_sub: Subscription, force: bool, requester) -> None:  # noqa: ANN001
        """Delete a subscription on a consumer's request (refused while others are attached)."""
        others = [c for c in consumer_sub.consumers if c is not requester]
        if others and not force:
            raise BrokerError(
                ServerError.ConsumerBusy, f"subscription {consumer_sub.name} has other connected consumers"
            )
        for c in list(consumer_sub.consumers):
            if c is not requester:
                c.connection.close_consumer_by_broker(c)
        consumer_sub.remove_consumer(requester)
        if consumer_sub.name in self.subscriptions:
            self.remove_subscription(consumer_sub.name)

    # -- lifecycle -----------------------------------------------------------------------
    def close(self) -> None:
        """Close the ledger (the service persists cursors first)."""
        self.closed = True
        self.ledger.close()
        if self.compacted is not None:
            self.compacted.close()

    def stats_storage_size(self) -> int:
        """Bytes of segment files this topic holds."""
        return self.ledger.size_bytes

    def __repr__(self) -> str:
        return f"Topic({self.name})"
