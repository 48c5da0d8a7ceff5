"""A subscription's cursor over a ledger (Pulsar's ManagedCursor), and the persistence of cursors.

:class:`ManagedCursor` is the one owner of a cursor's state: what is acknowledged (a
:class:`~magnetar.storage.cursor.CursorState`), the read position (the next entry never read for
dispatch), whether the state changed since it was last persisted, and the position below which the
ledger may be trimmed. Dispatchers read entries through it.

:class:`CursorStore` persists durable cursors in the metadata store: a cursor that changes registers
itself there, and one flush takes a snapshot of every changed cursor (and the deletions) on the
event loop and writes them in one SQLite transaction in a worker thread. The persisted bytes are
:meth:`CursorState.to_bytes`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Protocol

from magnetar.storage.compacted import CompactedView
from magnetar.storage.cursor import CursorState
from magnetar.storage.health import storage_health
from magnetar.storage.ledger import Entry
from magnetar.storage.metadata import MetadataStore
from magnetar.storage.rangeset import RangeSet
from magnetar.storage.read_ahead import DetachedSource, ReadAhead
from magnetar.storage.segment import CorruptEntryError, EntryNotFoundError

log = logging.getLogger("magnetar.storage.cursor")

#: a cursor's key in the metadata store: (topic name, subscription name)
CursorKey = tuple[str, str]


class EntrySource(Protocol):
    """What a cursor reads from: a :class:`~magnetar.storage.ledger.ManagedLedger`, or nothing."""

    @property
    def first_entry_id(self) -> int:
        """Oldest entry still stored."""
        ...

    def read(self, entry_id: int) -> Entry:
        """One entry; EntryNotFoundError when it is not stored."""
        ...

    def read_range(self, first: int, last: int, max_bytes: int | None = None) -> list[Entry]:
        """Entries ``first..last`` (all stored)."""
        ...

    def bytes_from(self, entry_id: int) -> int:
        """Bytes stored from ``entry_id`` on."""
        ...


class NoEntries:
    """The entry source of a cursor on a topic that stores nothing (non-persistent topics)."""

    first_entry_id = 0

    def read(self, entry_id: int) -> Entry:
        """Nothing is stored."""
        raise EntryNotFoundError(f"entry {entry_id} is not stored")

    def read_range(self, first: int, last: int, max_bytes: int | None = None) -> list[Entry]:
        """Nothing is stored."""
        return []

    def bytes_from(self, entry_id: int) -> int:
        """Nothing is stored."""
        return 0


class ManagedCursor:
    """One subscription's acknowledgements and read position over one ledger.

    ``store`` is where a durable cursor persists itself (None: a non-durable cursor, never
    persisted). The read position only moves through :meth:`read_entries` (past what it returned),
    :meth:`rewind_to` (entries read but not dispatched), :meth:`seek` and :meth:`skip_acknowledged`.
    """

    __slots__ = ("topic", "name", "_source", "_state", "_read_position", "_store", "_dirty", "_reads", "_view_reads")

    def __init__(
        self,
        source: EntrySource,
        topic: str,
        name: str,
        state: CursorState | None = None,
        *,
        store: CursorStore | None = None,
    ) -> None:
        """A cursor of subscription ``name`` of ``topic``, reading ``source`` from its first unacked entry."""
        self.topic = topic
        self.name = name
        self._source = source
        self._state = state if state is not None else CursorState()
        self._read_position = self._state.first_unacked()
        self._store = store
        self._dirty = False
        #: reads of entries no longer in memory, off the loop (None: every read on the spot)
        self._reads: ReadAhead | None = None
        #: the same for the compacted view last read (read_compacted), with that view
        self._view_reads: tuple[CompactedView, ReadAhead] | None = None

    def read_off_loop(self, on_read: Callable[[], None]) -> None:
        """Read entries that are no longer in memory on the ledger's read thread: :meth:`read_entries`
        answers [] meanwhile and ``on_read`` runs on the loop once they are in (a source that cannot
        read off the loop, or has no read thread, is still read on the spot)."""
        source = self._source
        if hasattr(source, "read_later") and hasattr(source, "in_memory"):
            detached: DetachedSource = source  # type: ignore[assignment]
            self._reads = ReadAhead(detached, on_read)

    # -- identity and persistence ------------------------------------------------------------
    @property
    def key(self) -> CursorKey:
        """(topic, subscription): the cursor's key in the metadata store."""
        return self.topic, self.name

    @property
    def durable(self) -> bool:
        """Whether the cursor is persisted (and holds back trimming)."""
        return self._store is not None

    @property
    def dirty(self) -> bool:
        """Whether a durable cursor changed since its last snapshot."""
        return self._dirty

    def mark_dirty(self) -> None:
        """Persist a durable cursor at the next flush even if it did not change (new, or closing)."""
        if self._store is not None:
            self._dirty = True
            self._store.cursor_changed(self)

    def snapshot(self) -> bytes:
        """The persisted form of the ack state (CursorState bytes); the cursor is clean afterwards."""
        self._dirty = False
        self._state.mark_clean()
        return self._state.to_bytes()

    def delete(self) -> None:
        """The subscription is gone: delete the persisted cursor, and never persist this one again."""
        store, self._store = self._store, None
        self._dirty = False
        if store is not None:
            store.cursor_deleted(self.key)

    def _changed(self) -> None:
        if not self._dirty and self._store is not None:
            self._dirty = True
            self._store.cursor_changed(self)

    # -- ack state (read) --------------------------------------------------------------------
    @property
    def state(self) -> CursorState:
        """The acknowledgement state (treat as read-only: change it through the cursor)."""
        return self._state

    @property
    def mark_delete(self) -> int:
        """Every entry id ``<=`` this value is acknowledged."""
        return self._state.mark_delete

    @property
    def individually_acked(self) -> RangeSet:
        """Acknowledged entry ids above ``mark_delete`` (treat as read-only)."""
        return self._state.individually_acked

    @property
    def batch_ack_sets(self) -> dict[int, list[int]]:
        """Partially acknowledged entries mapped to their unacked-message ack set (a copy)."""
        return self._state.batch_ack_sets

    @property
    def trim_position(self) -> int:
        """Entries below this id are acknowledged: as far as this cursor goes, the ledger may drop them."""
        return self._state.mark_delete + 1

    def is_acked(self, entry_id: int) -> bool:
        """Whether the whole entry is acknowledged (a partially acked batch is not)."""
        return self._state.is_acked(entry_id)

    def is_behind(self, entry_id: int) -> bool:
        """Whether an entry before ``entry_id`` is still above the mark-delete position."""
        return self._state.mark_delete + 1 < entry_id

    def next_unacked(self, entry_id: int) -> int:
        """Smallest entry id ``>= entry_id`` that is not fully acknowledged."""
        return self._state.next_unacked(entry_id)

    def first_unacked(self) -> int:
        """Smallest entry id that is not fully acknowledged."""
        return self._state.first_unacked()

    def acked_count_between(self, lo: int, hi: int) -> int:
        """How many entries in ``[lo, hi]`` are individually acknowledged (above mark_delete)."""
        return self._state.acked_count_between(lo, hi)

    def backlog(self, last_entry_id: int) -> int:
        """Number of entries up to ``last_entry_id`` not yet fully acknowledged."""
        return self._state.backlog(last_entry_id)

    def backlog_bytes(self) -> int:
        """Bytes stored after the mark-delete position."""
        return self._source.bytes_from(self._state.mark_delete + 1)

    def unacked_batch_mask(self, entry_id: int) -> list[int] | None:
        """Ack set to send with a redelivered entry, or None when it is not partially acked."""
        return self._state.unacked_batch_mask(entry_id)

    def batch_size(self, entry_id: int) -> int | None:
        """Batch size recorded for a partially acknowledged entry, else None."""
        return self._state.batch_size(entry_id)

    # -- ack state (change) ------------------------------------------------------------------
    def ack(self, entry_id: int) -> bool:
        """Acknowledge a whole entry; return False when it was already acknowledged."""
        changed = self._state.ack(entry_id)
        if changed:
            self._changed()
        return changed

    def ack_many(self, entry_ids: Iterable[int]) -> bool:
        """Acknowledge whole entries (an ACK command's individual acks) one run of consecutive ids
        at a time; return False when they all were already acknowledged."""
        ids = sorted(set(entry_ids))
        if not ids:
            return False
        runs: list[tuple[int, int]] = []
        lo = prev = ids[0]
        for entry_id in ids[1:]:
            if entry_id != prev + 1:
                runs.append((lo, prev))
                lo = entry_id
            prev = entry_id
        runs.append((lo, prev))
        changed = self._state.ack_runs(runs)
        if changed:
            self._changed()
        return changed

    def ack_cumulative(self, entry_id: int) -> bool:
        """Acknowledge every entry up to ``entry_id``; return False when nothing changed."""
        changed = self._state.ack_cumulative(entry_id)
        if changed:
            self._changed()
        return changed

    def ack_batch_indexes(self, entry_id: int, ack_set_longs: list[int], batch_size: int) -> bool:
        """Apply a batch-index acknowledgement; return True when the entry is now fully acked."""
        done = self._state.ack_batch_indexes(entry_id, ack_set_longs, batch_size)
        if self._state.dirty:
            self._changed()
        return done

    def seek(self, entry_id: int) -> None:
        """Reset: acknowledge exactly the entries below ``entry_id`` and read from it next."""
        self._state.reset(entry_id - 1)
        self._read_position = entry_id
        if self._reads is not None:
            self._reads.clear()
        self._view_reads = None
        self._changed()
        store = self._store
        if store is not None and store.on_structural_change is not None:
            store.on_structural_change()

    # -- reading -----------------------------------------------------------------------------
    @property
    def read_position(self) -> int:
        """The next entry to read for dispatch (entries before it were read already)."""
        return self._read_position

    def read_entries(self, count: int, last_readable: int, compacted: CompactedView | None = None) -> list[Entry]:
        """Up to ``count`` entries from the read position on, never beyond ``last_readable``; the read
        position moves past them.

        With a ``compacted`` view, entries at or below its horizon come from the view (their ids
        have gaps), then from the ledger. After :meth:`read_off_loop`, entries no longer in memory
        come from the read thread: [] until they are in.
        """
        position = self._read_position
        if compacted is not None and position <= compacted.horizon:
            viewed = self._read_view(compacted, position, count)
            if viewed is None:
                return []  # being read off the loop
            if viewed:
                self._read_position = viewed[-1].entry_id + 1
                return viewed
            self._read_position = compacted.horizon + 1
        while True:
            first = max(self._read_position, self._source.first_entry_id)
            last = min(last_readable, first + count - 1)
            if first > last:
                return []
            reads = self._reads
            if reads is not None:
                ahead = reads.read(first, last, last_readable)
                if ahead is not None:
                    if ahead:
                        self._read_position = ahead[-1].entry_id + 1
                    return ahead
            try:
                entries = self._source.read_range(first, last)
            except CorruptEntryError:
                # Damaged entries are skipped; read on when a whole range of them was.
                entries = self._read_around_damage(first, last)
                if not entries:
                    continue
            if entries:
                self._read_position = entries[-1].entry_id + 1
            return entries

    def _read_view(self, view: CompactedView, position: int, count: int) -> list[Entry] | None:
        """Up to ``count`` entries of a compacted view from ``position`` on; after :meth:`read_off_loop`,
        its records are read on the read thread as the ledger's are (None while they are read)."""
        index = view.index_of(position)
        if index >= len(view):
            return []
        view_reads = self._view_read_ahead(view)
        if view_reads is not None:
            last = len(view) - 1
            records = view_reads.read(index, min(last, index + count - 1), last)
            if records is not None:
                return view.entries_of(records) if records else None
        return list(view.read_from(position, count))

    def _read_view_ids(self, view: CompactedView, entry_ids: list[int]) -> list[Entry] | None:
        """The entries of a compacted view with these ids (those it holds), for redelivery; after
        :meth:`read_off_loop`, read on the read thread (None while they are read)."""
        if not entry_ids:
            return []
        view_reads = self._view_read_ahead(view)
        if view_reads is None:
            return list(view.read_ids(entry_ids))
        indexes = view.indexes_of(entry_ids)
        if view_reads.fetch(indexes):
            return None
        records = []
        for index in indexes:
            kept = view_reads.take(index)
            records.append(kept if kept is not None else view.ledger.read(index))
        return list(view.entries_of(records))

    def _view_read_ahead(self, view: CompactedView) -> ReadAhead | None:
        """The read-ahead over ``view``'s records (by index), None without :meth:`read_off_loop`."""
        reads = self._reads
        if reads is None:
            return None
        if self._view_reads is None or self._view_reads[0] is not view:
            self._view_reads = (view, ReadAhead(view.ledger, reads.on_read))
        return self._view_reads[1]

    def _read_around_damage(self, first: int, last: int) -> list[Entry]:
        """Entries ``first..last`` one by one, skipping (and acknowledging, as Pulsar does with
        non-recoverable ledger data) every entry damaged on disk: corrupt bytes are never served and
        the subscription does not stall on them. Stops before the first entry past a damaged one,
        so the read position moves past the damage."""
        out: list[Entry] = []
        for entry_id in range(first, last + 1):
            try:
                out.append(self._source.read(entry_id))
            except (CorruptEntryError, EntryNotFoundError) as exc:
                if out:
                    break  # skipped as the first entry of the next read
                self._skip_damaged(entry_id, exc)
                self._read_position = entry_id + 1
        return out

    def _skip_damaged(self, entry_id: int, exc: Exception) -> None:
        log.error("%s/%s: skipping entry %d, damaged on disk (%s)", self.topic, self.name, entry_id, exc)
        storage_health.entry_skipped()
        self.ack(entry_id)

    def read_ids(self, entry_ids: list[int], compacted: CompactedView | None = None) -> list[Entry] | None:
        """The given entries that are still stored (redelivery); the read position does not move.
        After :meth:`read_off_loop`, None while some of them are read off the loop (``on_read``
        follows; ask again then).

        With a ``compacted`` view, ids at or below its horizon come from the view.
        """
        if compacted is not None:
            rest = [e for e in entry_ids if e > compacted.horizon]
            more = self.read_ids(rest) if rest else []
            if more is None:
                return None
            viewed = self._read_view_ids(compacted, [e for e in entry_ids if e <= compacted.horizon])
            if viewed is None:
                return None
            viewed.extend(more)
            return viewed
        reads = self._reads
        if reads is not None and reads.fetch(entry_ids):
            return None
        out = []
        source = self._source
        for entry_id in entry_ids:
            if reads is not None:
                kept = reads.take(entry_id)
                if kept is not None:
                    out.append(kept)
                    continue
            try:
                out.append(source.read(entry_id))
            except EntryNotFoundError:
                continue
            except CorruptEntryError as exc:
                self._skip_damaged(entry_id, exc)
        return out

    def prefetch(self, entry_ids: list[int]) -> None:
        """Start reading off the loop those of ``entry_ids`` (redeliveries about to be read one by one)
        that are not in memory; no effect without :meth:`read_off_loop`."""
        if self._reads is not None:
            self._reads.fetch(entry_ids)

    def rewind_to(self, entry_id: int) -> None:
        """Entries from ``entry_id`` on were read but not dispatched: read them again next time."""
        if entry_id < self._read_position:
            self._read_position = entry_id

    def skip_acknowledged(self) -> None:
        """Move the read position past the mark-delete position when it is behind it."""
        first = self._state.mark_delete + 1
        if self._read_position < first:
            self._read_position = first

    def __repr__(self) -> str:
        return f"ManagedCursor({self.topic}/{self.name}, read={self._read_position}, {self._state!r})"


class CursorBatch:
    """The cursor changes one flush writes: snapshots of changed cursors, and deleted cursors."""

    def __init__(
        self,
        saved: list[tuple[str, str, bytes]],
        deleted: list[CursorKey],
        cursors: list[ManagedCursor] | None = None,
    ) -> None:
        """Snapshots ``(topic, subscription, state bytes)`` to upsert and keys to delete; ``cursors``
        are the cursors the snapshots were taken of (marked changed again when the write fails)."""
        self.saved = saved
        self.deleted = deleted
        self.cursors = cursors if cursors is not None else []

    @property
    def topics(self) -> set[str]:
        """Names of the topics whose cursors were saved (their ledgers may be trimmed afterwards)."""
        return {topic for topic, _, _ in self.saved}

    def write(self, metadata: MetadataStore) -> None:
        """Write the batch (blocking: run it in a worker thread): every snapshot in one transaction."""
        if self.saved:
            metadata.save_cursors(self.saved)
        for topic, name in self.deleted:
            metadata.delete_cursor(topic, name)


class CursorStore:
    """The durable cursors of a metadata store: opening, restoring, and batched persistence."""

    def __init__(self, metadata: MetadataStore) -> None:
        """Persist cursors in ``metadata``."""
        self.metadata = metadata
        self._changed: dict[CursorKey, ManagedCursor] = {}
        self._deleted: set[CursorKey] = set()
        #: called when the store goes from nothing pending to something pending (schedules a flush)
        self.on_pending: Callable[[], None] | None = None
        #: called when a cursor is created, reset (seek) or deleted: persisted at once, never held
        #: back by a rate limit (as Pulsar writes those before it answers; only acknowledgements'
        #: mark-delete writes are rate-limited there)
        self.on_structural_change: Callable[[], None] | None = None

    def open(self, source: EntrySource, topic: str, name: str, mark_delete: int) -> ManagedCursor:
        """A new durable cursor with every entry up to ``mark_delete`` acknowledged (persisted soon)."""
        cursor = ManagedCursor(source, topic, name, CursorState(mark_delete), store=self)
        cursor.mark_dirty()
        if self.on_structural_change is not None:
            self.on_structural_change()
        return cursor

    def restore(self, source: EntrySource, topic: str, name: str, data: bytes) -> ManagedCursor:
        """A durable cursor from its persisted bytes (ValueError when they are malformed)."""
        return ManagedCursor(source, topic, name, CursorState.from_bytes(data), store=self)

    def load(self, source: EntrySource, topic: str) -> list[ManagedCursor]:
        """Every persisted cursor of ``topic``."""
        return [self.restore(source, topic, name, data) for name, data in self.metadata.load_cursors(topic).items()]

    def cursor_changed(self, cursor: ManagedCursor) -> None:
        """A durable cursor changed: it goes into the next batch."""
        was_pending = self.pending
        self._deleted.discard(cursor.key)
        self._changed[cursor.key] = cursor
        if not was_pending and self.on_pending is not None:
            self.on_pending()

    def cursor_deleted(self, key: CursorKey) -> None:
        """A durable cursor was deleted: its persisted state goes in the next batch."""
        was_pending = self.pending
        self._changed.pop(key, None)
        self._deleted.add(key)
        if not was_pending and self.on_pending is not None:
            self.on_pending()
        if self.on_structural_change is not None:
            self.on_structural_change()

    @property
    def pending(self) -> bool:
        """Whether a flush has something to write."""
        return bool(self._changed or self._deleted)

    def take_batch(self) -> CursorBatch:
        """Snapshot every changed cursor and take the deletions (on the loop, in one go)."""
        changed, self._changed = self._changed, {}
        deleted, self._deleted = self._deleted, set()
        cursors = list(changed.values())
        saved = [(cursor.topic, cursor.name, cursor.snapshot()) for cursor in cursors]
        return CursorBatch(saved, sorted(deleted), cursors)

    def write_failed(self, batch: CursorBatch) -> None:
        """Writing ``batch`` failed: its cursors and deletions go into the next batch again (unless a
        later change superseded them), so nothing is marked persisted that was not."""
        for cursor in batch.cursors:
            if cursor.durable and cursor.key not in self._deleted:
                cursor.mark_dirty()
        for key in batch.deleted:
            if key not in self._changed:
                self.cursor_deleted(key)

    def forget_topic(self, topic: str) -> None:
        """A topic is being deleted with its cursors: drop what is pending for it."""
        self._changed = {k: c for k, c in self._changed.items() if k[0] != topic}
        self._deleted = {k for k in self._deleted if k[0] != topic}
