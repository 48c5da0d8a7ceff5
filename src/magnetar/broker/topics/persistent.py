"""A persistent topic: its ledger, producers, subscriptions and the publish path."""

from __future__ import annotations

import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, ClassVar, Protocol

from magnetar.broker.errors import BrokerError
from magnetar.broker.subscriptions.subscription import EntryFilter, Subscription
from magnetar.broker.topics import lifecycle
from magnetar.broker.topics.base import Topic
from magnetar.broker.topics.no_space import NoSpaceGuard
from magnetar.broker.topics.recovery import LedgerRecovery
from magnetar.protocol.enums import InitialPosition, ServerError
from magnetar.protocol.framing import ProtocolError, crc32c, parse_entry_metadata
from magnetar.protocol.topic_name import TopicName
from magnetar.storage import (
    CursorState,
    Entry,
    EntryNotFoundError,
    LedgerFencedError,
    ManagedCursor,
    ManagedLedger,
    StorageError,
)
from magnetar.storage.health import is_disk_full

if TYPE_CHECKING:
    from magnetar.broker.commit import GroupCommitter
    from magnetar.broker.config import BrokerConfig
    from magnetar.broker.policies.resolution import TopicPolicies
    from magnetar.broker.topics.producer import Producer
    from magnetar.broker.transactions.buffer import TransactionBuffer
    from magnetar.broker.transport import PublishContext
    from magnetar.storage import CompactedView

log = logging.getLogger("magnetar.broker.topics.persistent")

#: the start message id a client sends for "earliest" (-1, -1 as uint64) and "latest"
EARLIEST_ID = (1 << 64) - 1
LATEST_ID = (1 << 63) - 1

__all__ = ["EARLIEST_ID", "LATEST_ID", "CursorListener", "PersistentTopic"]


def _is_partial_chunk(entry: bytes) -> bool:
    """Whether an entry is a chunk other than the last of its message. Deduplication records a
    chunked message's sequence id with its last chunk only, as Pulsar's MessageDeduplication does:
    every chunk carries the message's sequence id, so recording the first would drop the rest."""
    try:
        meta = parse_entry_metadata(entry)
    except ProtocolError:
        return False
    return meta.num_chunks_from_msg > 1 and meta.chunk_id < meta.num_chunks_from_msg - 1


def _original_producer(entry: bytes) -> str | None:
    """The producer name in an entry's metadata (None when unreadable; "" for a marker, which is
    never deduplicated: every marker has sequence id 0)."""
    try:
        meta = parse_entry_metadata(entry)
    except ProtocolError:
        return None
    return "" if meta.HasField("marker_type") else meta.producer_name


class CursorListener(Protocol):
    """Who opens a topic's durable cursors (they persist themselves) and trims its ledger (the service)."""

    def open_cursor(self, topic: PersistentTopic, name: str, mark_delete: int) -> ManagedCursor:
        """A new durable cursor of subscription ``name`` with entries up to ``mark_delete`` acknowledged."""

    def maybe_trim(self, topic: PersistentTopic) -> None:
        """Release whole segments every durable subscription has acknowledged, as retention allows."""


class _MarkerContext:
    """The completion of an appended marker: a duplicate's path (no receipt, no sequence id)."""

    __slots__ = ("_durable", "_failed")

    def __init__(self, durable: Callable[[], None], failed: Callable[[str], None]) -> None:
        self._durable = durable
        self._failed = failed

    def duplicate(self) -> None:
        """The marker is durable."""
        self._durable()

    def failed(self, code: ServerError, message: str) -> None:
        """The sync failed: the marker is written again when the transaction's end is retried."""
        self._failed(message)


class _InTurn:
    """What waits its turn in ``_receipts`` behind the publishes appended before it: a refusal of a
    publish made while they still wait for their round, and what goes with it (the producers closed
    for want of space, a termination ended). The official clients must get the receipts first: they
    close the connection on a SEND_ERROR (C++, and Java but for a few codes: the receipts behind it are
    lost, and the entries resent and stored twice), and fail everything pending once a closed producer
    is refused (the CI failure of c85a765: stored, dispatched entries counted as failed)."""

    __slots__ = ("_then", "_context", "_code", "_message")

    def __init__(
        self, then: Callable[[], None] | None, context: PublishContext | None = None,
        code: ServerError = ServerError.PersistenceError, message: str = "",
    ) -> None:
        self._then = then
        self._context = context
        self._code = code
        self._message = message

    def duplicate(self) -> None:
        """Every publish before it completed (a duplicate's path: no receipt of its own)."""
        self.failed(self._code, self._message)

    def failed(self, code: ServerError, message: str) -> None:
        """Its turn came (the round before failed, or completed): act, then refuse the publish."""
        if self._then is not None:
            self._then()
        if self._context is not None:
            self._context.failed(self._code, self._message)


class PersistentTopic(Topic):
    """One persistent topic (or one partition of a partitioned topic).

    Publishing appends to the ledger at once; the publish context completes (the session
    sends the SEND_RECEIPT) when the group commit covering the entry completes
    (``on_durable``), which is also when subscriptions may read it.
    """

    persistent: ClassVar[bool] = True
    #: the latest message per key up to a horizon, when the topic was compacted (compaction.py)
    compacted: CompactedView | None = None
    #: while a compaction runs: the first entry it still has to read (not trimmed meanwhile)
    compaction_pin: int | None = None
    #: the transactions of this topic (transactions/buffer.py), once one sent a message here
    txn_buffer: TransactionBuffer | None = None
    #: the markers hidden from consumers, on a replicated topic (set by broker/replication)
    marker_filter: EntryFilter | None = None

    def __init__(
        self,
        topic_name: TopicName,
        ledger: ManagedLedger,
        *,
        config: BrokerConfig,
        committer: GroupCommitter,
        cursors: CursorListener,
        producer_name_prefix: str,
    ) -> None:
        super().__init__(topic_name, ledger.ledger_id, config, producer_name_prefix)
        self.ledger = ledger
        #: when this broker opened the ledger (epoch ms): where Pulsar starts a new ledger at every load
        self.ledger_opened_ms = int(time.time() * 1000)
        self.subscriptions: dict[str, Subscription] = {}  # type: ignore[assignment]
        ledger.cache.paused = True  # until a subscription reads: see cache_for_readers
        self._committer = committer
        self.loop_urgency = committer.urgency
        self._cursors = cursors
        #: highest entry id covered by a completed sync
        self.durable_id = ledger.last_entry_id
        #: highest entry id consumers may read: durable, and before the first open transaction
        self.last_readable_id = ledger.last_entry_id
        #: (publish context, producer name, entry id gating its completion, duplicate?)
        self._receipts: deque[tuple[PublishContext, str, int, bool]] = deque()
        #: highest sequence id appended per producer name (deduplication state)
        self.last_sequence_ids: dict[str, int] = {}
        #: entry id up to which ``last_sequence_ids`` was last persisted
        self.dedup_snapshot_entry_id = -1
        #: while the disk is full: producers closed and refused (no_space.py)
        self.no_space = NoSpaceGuard(self.name, ledger.directory, self._close_producers)
        self.recovery = LedgerRecovery(self.name, self._ledger_recovered)  # after a failed sync
        self.dedup_enabled = False
        #: the backlog quota policy in force while a quota is exceeded (producers are refused)
        self.quota_blocked: str | None = None
        #: per producer, the highest sequence id whose entry is durable (what snapshots persist)
        self.durable_sequence_ids: dict[str, int] = {}
        #: terminated, waiting for the publishes accepted before to complete (``terminated`` then)
        self._terminating = False
        #: the first entry whose sequence ids are not in the state yet (None: all are)
        self._dedup_replay_from: int | None = None

    def apply_policies(self, policies: TopicPolicies) -> None:
        """Take newly resolved policies (deduplication among them); they apply at once."""
        self.dedup_enabled = policies.deduplication
        if self.dedup_enabled and self._dedup_replay_from is not None:
            self._replay_sequence_ids()
        super().apply_policies(policies)

    def check_quota_for_producer(self) -> None:
        """Refuse new producers while no space is left for the ledger, or while a backlog quota with a
        producer-blocking policy is exceeded."""
        self.no_space.check_producer()
        blocked = self.quota_blocked or lifecycle.quota_exceeded(self)
        if blocked in ("producer_request_hold", "producer_exception"):
            self.quota_blocked = blocked
            code = (
                ServerError.ProducerBlockedQuotaExceededError
                if blocked == "producer_request_hold"
                else ServerError.ProducerBlockedQuotaExceededException
            )
            raise BrokerError(code, f"cannot create producer on {self.name}: backlog quota exceeded ({blocked})")

    # -- publishing ----------------------------------------------------------------------
    def publish(self, producer: Producer, entry: bytes, crc: int, context: PublishContext) -> bool:
        """Append one entry; ``context`` completes once it is durable. Raises StorageError.

        With deduplication enabled, an entry whose (highest) sequence id is not above the last
        one stored for its producer name is not stored; its context completes as a duplicate
        (the receipt carries message id -1:-1), after everything before it.
        """
        if self.terminated or self._terminating:
            self._refuse(context, None, ServerError.TopicTerminatedError, f"topic {self.name} was terminated")
            return False
        if self.ledger.fenced and not self._receipts:
            self.recovery.start(self.ledger)
        sequence_id = context.sequence_id
        highest = context.highest_sequence_id
        sequence = highest if highest > sequence_id else sequence_id
        name = producer.name
        if producer.remote_cluster is not None:
            # a replicated entry: deduplicated by its original producer, as Pulsar's MessageDeduplication
            original = _original_producer(entry)
            name = name if original is None else original
        last = self.last_sequence_ids.get(name, -1)
        if self.dedup_enabled and sequence <= last and name:
            gate = self.ledger.last_entry_id
            if not self._receipts and gate <= self.durable_id:
                context.duplicate()
            else:
                self._receipts.append((context, name, gate, True))
            return False
        try:
            entry_id = self.ledger.append(entry, crc)
        except StorageError as exc:
            full = is_disk_full(exc)
            if not full and not (self._receipts and isinstance(exc, LedgerFencedError)):
                raise  # nothing waits: the session answers at once
            # the producers closed for want of space only after the publishes waiting completed
            then = partial(self.no_space.enter, exc) if full else None
            self._refuse(context, then, ServerError.PersistenceError, f"storage failure: {exc}")
            return False
        if self.dedup_enabled and _is_partial_chunk(entry):
            name = ""  # its sequence id is recorded with the message's last chunk
        elif sequence > last:
            self.last_sequence_ids[name] = sequence
        self._receipts.append((context, name, entry_id, False))
        num_messages, size = context.num_messages, len(entry)
        producer.msg_in_counter += num_messages
        producer.bytes_in_counter += size
        self.count_published(num_messages, size)
        self._committer.appended(self)
        return True

    def last_sequence_id(self, producer_name: str) -> int:
        """What PRODUCER_SUCCESS reports: the producer's last stored sequence id under dedup, else -1."""
        return self.last_sequence_ids.get(producer_name, -1) if self.dedup_enabled else -1

    def after_publishes(self, then: Callable[[], None]) -> None:
        """Call ``then`` once every publish accepted so far completed (or failed), in turn with their
        receipts (a producer's close is answered after them, as Pulsar's Producer.close)."""
        if self._receipts:
            self._receipts.append((_MarkerContext(then, lambda _why: then()), "", self.ledger.last_entry_id, True))  # type: ignore[arg-type]
        else:
            then()

    def _refuse(self, context: PublishContext, then: Callable[[], None] | None, code: ServerError, message: str) -> None:
        """Refuse a publish (and run ``then`` first) once the publishes before it completed: at once
        when none waits, else in its turn (:class:`_InTurn`)."""
        if self._receipts:
            refusal = _InTurn(then, context, code, message)
            self._receipts.append((refusal, "", self.ledger.last_entry_id, True))  # type: ignore[arg-type]
            return
        if then is not None:
            then()
        context.failed(code, message)

    def terminate(self, done: Callable[[int, int], None]) -> None:
        """Accept no more messages; ``done`` gets (ledger id, entry id) of the last one.

        Publishes accepted before complete first (as Pulsar's terminate waits for the ledger's close):
        then the producers are closed, subscriptions that acknowledged everything tell their consumers
        that they reached the end of the topic, the others when they have (REACHED_END_OF_TOPIC).
        Publishes made meanwhile are refused with TopicTerminatedError after them.
        """
        self._terminating = True
        if not self._receipts:
            self._terminated(self.ledger.last_entry_id, done)
            return
        last = self.ledger.last_entry_id
        # the round failed: its entries were cut, the topic ends at what is durable
        ended = _MarkerContext(lambda: self._terminated(last, done), lambda _why: self._terminated(self.durable_id, done))
        self._receipts.append((ended, "", last, True))  # type: ignore[arg-type]

    def _terminated(self, last_entry_id: int, done: Callable[[int, int], None]) -> None:
        self.terminated = True
        for producer in list(self.producers.values()):
            producer.close_by_broker()
        for sub in self.subscriptions.values():
            sub.check_end_of_topic()
        done(self.ledger_id, last_entry_id)

    def restore_sequence_ids(self, snapshot: dict[str, int], snapshot_entry_id: int) -> None:
        """Rebuild deduplication state: a persisted snapshot plus the entries after it, replayed once
        deduplication is on (now, or when a policy turns it on: no snapshot is written while off)."""
        self.last_sequence_ids = dict(snapshot)
        self.durable_sequence_ids = dict(snapshot)
        self.dedup_snapshot_entry_id = snapshot_entry_id
        self._dedup_replay_from = snapshot_entry_id + 1
        if self.dedup_enabled:
            self._replay_sequence_ids()

    def _replay_sequence_ids(self) -> None:
        """Fold the sequence ids of the entries after the restored snapshot into the state (the durable
        ones into what snapshots persist too)."""
        first = max(self._dedup_replay_from, self.ledger.first_entry_id)
        self._dedup_replay_from = None
        last = self.ledger.last_entry_id
        seqs, durable, durable_id = self.last_sequence_ids, self.durable_sequence_ids, self.durable_id
        for start in range(first, last + 1, 1000):
            for entry in self.ledger.read_intact(start, min(last, start + 999)):
                try:
                    meta = parse_entry_metadata(entry.data)
                except ProtocolError:
                    continue
                if meta.num_chunks_from_msg > 1 and meta.chunk_id < meta.num_chunks_from_msg - 1:
                    continue  # a chunk before the last: its message may not be complete
                seq = max(meta.sequence_id, meta.highest_sequence_id)
                name = meta.producer_name
                if seq > seqs.get(name, -1):
                    seqs[name] = seq
                if entry.entry_id <= durable_id and seq > durable.get(name, -1):
                    durable[name] = seq
        self.dedup_dirty = True  # the state now bounds the next replay: persisted with the next round

    def dedup_snapshot(self) -> tuple[int, dict[str, int]] | None:
        """(entry id, sequence ids durable up to it) to persist, or None when unchanged."""
        if not self.dedup_dirty:
            return None
        self.dedup_dirty = False
        return self.durable_id, dict(self.durable_sequence_ids)

    def on_durable(self, last_durable_id: int) -> None:
        """Entries up to ``last_durable_id`` are safe: complete their publishes, let consumers read them."""
        receipts = self._receipts
        ledger_id = self.ledger_id
        durable = self.durable_sequence_ids
        while receipts and receipts[0][2] <= last_durable_id:
            context, name, entry_id, duplicate = receipts.popleft()
            if duplicate:
                context.duplicate()
            else:
                if name:
                    durable[name] = max(context.sequence_id, context.highest_sequence_id)
                    self.dedup_dirty = self.dedup_enabled  # no snapshot while off (restore_sequence_ids)
                context.completed(ledger_id, entry_id)
        if last_durable_id > self.durable_id:
            self.durable_id = last_durable_id
            self.last_publish_ms = int(time.time() * 1000)  # once per group commit, not per entry
            self.txn_visibility_changed()

    def txn_visibility_changed(self) -> None:
        """Recompute the last readable entry (the transaction buffer's max-read position) and
        dispatch what became readable."""
        buffer = self.txn_buffer
        readable = self.durable_id if buffer is None else buffer.max_read(self.durable_id)
        if readable > self.last_readable_id:
            self.last_readable_id = readable
            for sub in self.subscriptions.values():
                sub.schedule_dispatch()

    def append_marker(self, entry: bytes, durable: Callable[[], None], failed: Callable[[str], None]) -> int:
        """Append an entry no producer sent (a transaction marker); ``durable`` is called once it is
        durable, in order with the receipts, ``failed`` if its sync failed. Raises StorageError."""
        if self.ledger.fenced and not self._receipts:
            self.recovery.start(self.ledger)
        entry_id = self.ledger.append(entry, crc32c(entry))
        self._receipts.append((_MarkerContext(durable, failed), "", entry_id, True))  # type: ignore[arg-type]
        self._committer.appended(self)
        return entry_id

    def on_sync_failed(self, error: BaseException) -> None:
        """A sync failed (the ledger fenced itself): the producers are closed first, as Pulsar's
        ``PersistentTopic.addFailed`` disconnects them, so every publish still waiting fails without a
        SEND_ERROR and the clients resend what they have pending once they re-registered (without space
        their re-registration is refused, see no_space.py); deduplication forgets the sequence ids of
        entries that were not durable, and the ledger is reopened from what is durable (recovery.py, off
        the loop), so a resend is stored once and nothing unconfirmed is dispatched. (A SEND_ERROR made
        the official clients close the connection: SENDs on their way were resent, stored twice without dedup.)"""
        if is_disk_full(error):
            self.no_space.enter(error)
        else:
            self._close_producers()
        while self._receipts:
            context = self._receipts.popleft()[0]
            context.failed(ServerError.PersistenceError, f"storage failure: {error}")
        self.last_sequence_ids = dict(self.durable_sequence_ids)
        self.recovery.start(self.ledger)

    def _close_producers(self) -> None:
        """Close every producer (CLOSE_PRODUCER): their clients re-register."""
        for producer in list(self.producers.values()):
            producer.close_by_broker()

    def _ledger_recovered(self, kept: int) -> None:
        """The ledger takes appends again after ``kept``: the transaction buffer forgets what was cut."""
        if self.txn_buffer is not None and not self.closed:
            self.txn_buffer.forget_from(kept + 1)

    def add_producer(self, producer: Producer) -> bool:
        """Topic.add_producer; while the ledger is recovered, ready only once it takes appends (False)."""
        ready = super().add_producer(producer)
        if not self._receipts:
            self.recovery.start(self.ledger)  # when it is fenced
        return ready and not self.recovery.hold(producer)

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
        buffer = self.txn_buffer
        while buffer is not None and last >= self.ledger.first_entry_id and buffer.hidden(last):
            last -= 1  # a marker or an aborted message is not a message anyone receives
        markers = self.marker_filter
        with contextlib.suppress(StorageError):
            while markers is not None and last >= self.ledger.first_entry_id and markers.is_marker(self.ledger.read(last)):
                last -= 1  # nor a replicated subscription's marker
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
            mark_delete = self.start_position(*start_message_id, earliest=earliest) - 1
        elif initial_position == InitialPosition.Earliest:
            mark_delete = earliest - 1
        else:
            mark_delete = self.last_readable_id
        if durable:
            cursor = self._cursors.open_cursor(self, name, mark_delete)
        else:
            cursor = ManagedCursor(self.ledger, self.name, name, CursorState(mark_delete))
        sub = Subscription(self, name, cursor)
        self.subscriptions[name] = sub
        self.cache_for_readers()
        return sub

    def start_position(self, ledger_id: int, entry_id: int, earliest: int | None = None) -> int:
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

    def restore_subscription(self, cursor: ManagedCursor) -> None:
        """Recreate a durable subscription from its persisted cursor."""
        self.subscriptions[cursor.name] = Subscription(self, cursor.name, cursor)
        self.cache_for_readers()

    def remove_subscription(self, name: str) -> None:
        """Forget a subscription (unsubscribe, or the last reader of a non-durable one left)."""
        self.last_active = time.time()
        sub = self.subscriptions.pop(name, None)
        if sub is not None:
            sub.cursor.delete()
            self.subscription_removed(sub)
            self.cache_for_readers()
        self._cursors.maybe_trim(self)

    def cache_for_readers(self) -> None:
        """Recent entries are cached only while a subscription reads (has a consumer, or is a replicator's
        cursor), as Pulsar caches for active cursors only, a cursor going inactive with its last
        consumer: entries appended meanwhile are read from the files. Called when consumers change."""
        self.ledger.cache.paused = not any(s.consumers or s.reads_without_consumers for s in self.subscriptions.values())

    def trim_position(self) -> int:
        """Entries below this id are acknowledged by every durable subscription (and, on a compacted
        topic, compacted: like Pulsar's ``__compaction`` cursor, without showing as a subscription)."""
        positions = [s.cursor.trim_position for s in self.subscriptions.values() if s.cursor.durable]
        if self.compacted is not None:
            positions.append(self.compacted.horizon + 1)
        if self.compaction_pin is not None:
            positions.append(self.compaction_pin)
        return min(positions) if positions else self.last_readable_id + 1

    # -- lifecycle -----------------------------------------------------------------------
    def close(self) -> None:
        """Close the ledger (the service persists cursors first)."""
        self.closed = True
        self._abandon_receipts()
        self.no_space.close()
        self.ledger.close()
        if self.compacted is not None:
            self.compacted.close()

    def delete_ledger(self) -> None:
        """The topic is deleted (its producers closed by the service): delete its ledger."""
        self.closed = True
        self._abandon_receipts()
        self.no_space.close()
        self.ledger.delete()

    def _abandon_receipts(self) -> None:
        """The publishes still waiting as the topic closes fail (the committer reports nothing to a
        closed topic): their producers are closed, so no SEND_ERROR goes out, but the backpressure
        bytes their connections hold are released."""
        while self._receipts:
            context = self._receipts.popleft()[0]
            context.failed(ServerError.ServiceNotReady, f"topic {self.name} was closed")

    def stats_storage_size(self) -> int:
        """Bytes of segment files this topic holds."""
        return self.ledger.size_bytes
