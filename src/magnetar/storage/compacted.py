"""The compacted ledger of a topic: the latest message of every key, under the entries' original ids.

The broker's compaction job (``magnetar.broker.topics.compaction``) decides which messages win;
this module stores its output and reads it back:

* :class:`CompactedWriter` writes one new compacted ledger (used by a single worker thread);
* :class:`CompactedView` reads a finished one (dispatch, and the next compaction); given a read
  thread, its records can be read off the event loop (:meth:`ManagedLedger.read_later`, which a
  cursor's read-ahead uses for the view as for the topic's ledger).

Storage: ``<data_dir>/ledgers/<ledger id>-compacted/<n>/`` is a managed ledger whose records are
``[u64 original entry id][entry bytes]``, plus an ``index`` file (the original ids and, for
re-batched entries, which messages survived) that is rebuilt from the records when missing or
damaged. Storage does not parse messages: what it needs to know about an entry's batch comes from
a :class:`BatchInspector` the broker supplies.
"""

from __future__ import annotations

import logging
import os
import struct
from array import array
from bisect import bisect_left
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from magnetar.checksum import crc32c
from magnetar.storage.cursor import longs_to_mask
from magnetar.storage.files import fsync_path
from magnetar.storage.ledger import Entry, ManagedLedger
from magnetar.storage.read_thread import ReadThread
from magnetar.storage.segment import StorageError

log = logging.getLogger("magnetar.storage.compacted")

#: entries (and bytes) read from a ledger in one go on the event loop
CHUNK_ENTRIES = 1000
CHUNK_BYTES = 4 * 1024 * 1024
#: bytes read at once when dispatching from a compacted view
DISPATCH_BYTES = 8 * 1024 * 1024

_ID = struct.Struct(">Q")
_U32 = struct.Struct(">I")
_INDEX_MAGIC = b"MGCX"
_INDEX_HEADER = struct.Struct(">4sIqq")  # magic, version, record count, horizon
_INDEX_RECORD = struct.Struct(">qH")  # original entry id, words in the survivors mask (0: all)
_INDEX_VERSION = 1
INDEX_FILE = "index"

#: a message id inside the topic: (entry id, batch index or -1)
MessageKey = tuple[int, int]
#: one record of the index: (original entry id, survivors ack set or None when all survive)
IndexRecord = tuple[int, "list[int] | None"]


class BatchInspector(Protocol):
    """What the compacted ledger needs to know about an entry's messages (the broker parses them)."""

    def batch_size(self, data: bytes) -> int | None:
        """Messages in a batch entry; None for a single message or unreadable metadata."""
        ...

    def survivors(self, data: bytes) -> list[int] | None:
        """Ack set of the messages of a batch not compacted out; None when all (or none) survive."""
        ...


def compacted_root(data_dir: Path, ledger_id: int) -> Path:
    """Directory holding the compacted ledgers of one topic ledger."""
    return data_dir / "ledgers" / f"{ledger_id}-compacted"



def _encode_index(horizon: int, records: list[IndexRecord]) -> bytes:
    parts = [_INDEX_HEADER.pack(_INDEX_MAGIC, _INDEX_VERSION, len(records), horizon)]
    for entry_id, ack_set in records:
        words = ack_set or []
        parts.append(_INDEX_RECORD.pack(entry_id, len(words)))
        if words:
            parts.append(struct.pack(f">{len(words)}q", *words))
    body = b"".join(parts)
    return body + _U32.pack(crc32c(body))


def _decode_index(raw: bytes) -> tuple[int, list[IndexRecord]]:
    """(horizon, records) of an index file; ValueError when it is damaged."""
    if len(raw) < _INDEX_HEADER.size + 4 or crc32c(raw[:-4]) != _U32.unpack_from(raw, len(raw) - 4)[0]:
        raise ValueError("index checksum mismatch")
    magic, version, count, horizon = _INDEX_HEADER.unpack_from(raw, 0)
    if magic != _INDEX_MAGIC or version != _INDEX_VERSION:
        raise ValueError("not a compacted ledger index")
    pos = _INDEX_HEADER.size
    records: list[IndexRecord] = []
    try:
        for _ in range(count):
            entry_id, words = _INDEX_RECORD.unpack_from(raw, pos)
            pos += _INDEX_RECORD.size
            ack_set = list(struct.unpack_from(f">{words}q", raw, pos)) if words else None
            pos += 8 * words
            records.append((entry_id, ack_set))
    except struct.error as exc:
        raise ValueError(f"truncated index: {exc}") from None
    if pos != len(raw) - 4:
        raise ValueError("trailing bytes in index")
    return horizon, records


class CompactedWriter:
    """Writes one new compacted ledger; used by a single (worker) thread until finished."""

    def __init__(self, directory: Path, ledger_id: int, segment_max_bytes: int) -> None:
        """Start an empty compacted ledger in ``directory`` (whatever was there is removed)."""
        import shutil  # with a deletion only: shutil loads bz2, lzma and zlib, 4-5 ms of every broker start

        shutil.rmtree(directory, ignore_errors=True)
        self.directory = directory
        self.ledger = ManagedLedger.open(
            directory, ledger_id, segment_max_bytes=segment_max_bytes, cache_max_bytes=0, write_behind=False
        )
        self.records: list[IndexRecord] = []

    def add(self, entry_id: int, data: bytes, ack_set: list[int] | None) -> None:
        """Append one compacted entry (ids must increase)."""
        if self.records and entry_id <= self.records[-1][0]:
            raise StorageError(f"compacted entries out of order: {entry_id} after {self.records[-1][0]}")
        self.ledger.append(_ID.pack(entry_id) + data)
        self.records.append((entry_id, ack_set))

    def finish(self, horizon: int) -> None:
        """Make everything durable: the records, then the index, then the directory entries."""
        self.ledger.close()  # syncs
        tmp = self.directory / (INDEX_FILE + ".tmp")
        with open(tmp, "wb") as f:
            f.write(_encode_index(horizon, self.records))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.directory / INDEX_FILE)
        fsync_path(self.directory)
        fsync_path(self.directory.parent)

    def abort(self) -> None:
        """Forget the half-written ledger."""
        self.ledger.delete()


class CompactedEntry(Entry):
    """An entry read from a compacted view: its original id, bytes, and which messages survived."""

    __slots__ = ("ack_set", "batch_size")

    def __init__(self, entry_id: int, data: bytes, crc: int, ack_set: list[int] | None, batch_size: int) -> None:
        """An entry whose survivors are ``ack_set`` (None: all) out of ``batch_size`` messages."""
        super().__init__(entry_id, data, crc)
        #: the messages to deliver of a batch some of whose messages were compacted out, else None
        self.ack_set = ack_set
        self.batch_size = batch_size


class CompactedView:
    """A finished compacted ledger (dispatch reads it, and the next compaction). Its records are
    numbered 0.. in its own ledger (the record's *index*); each carries the original entry id."""

    def __init__(
        self,
        directory: Path,
        ledger: ManagedLedger,
        horizon: int,
        records: list[IndexRecord],
        inspector: BatchInspector,
    ) -> None:
        """A view over ``ledger`` whose index is ``records``; use :meth:`open`."""
        self.directory = directory
        self.ledger = ledger
        #: last entry id of the topic this view covers
        self.horizon = horizon
        self.ids = array("q", (entry_id for entry_id, _ in records))
        self.ack_sets = {entry_id: ack_set for entry_id, ack_set in records if ack_set}
        self._inspector = inspector
        self._last: MessageKey | None = None

    @classmethod
    def open(
        cls, directory: Path, ledger_id: int, horizon: int, inspector: BatchInspector, reads: ReadThread | None = None
    ) -> CompactedView:
        """Open a finished compacted ledger; its index is rebuilt if missing or damaged. ``reads``: the
        read thread its records may be read on (:meth:`ManagedLedger.read_later`)."""
        if not (directory / INDEX_FILE).exists() and not any(directory.glob("*.log")):
            raise StorageError(f"compacted ledger {directory} is missing")
        ledger = ManagedLedger.open(directory, ledger_id, cache_max_bytes=0, reads=reads)
        try:
            records = None
            try:
                stored_horizon, records = _decode_index((directory / INDEX_FILE).read_bytes())
                if stored_horizon != horizon or len(records) != ledger.entry_count:
                    raise ValueError("index does not match the ledger")
            except (OSError, ValueError) as exc:
                log.warning("compacted ledger %s: rebuilding its index (%s)", directory, exc)
                records = cls._scan(ledger, inspector)
            view = cls(directory, ledger, horizon, records, inspector)
            view._last = view._find_last()
        except BaseException:
            ledger.close()
            raise
        return view

    @staticmethod
    def _scan(ledger: ManagedLedger, inspector: BatchInspector) -> list[IndexRecord]:
        records: list[IndexRecord] = []
        first, last = ledger.first_entry_id, ledger.last_entry_id
        position = first
        while position <= last:
            chunk = ledger.read_range(position, min(last, position + CHUNK_ENTRIES - 1), CHUNK_BYTES)
            for entry in chunk:
                data = entry.data
                records.append((_ID.unpack_from(data, 0)[0], inspector.survivors(data[_ID.size :])))
            position += len(chunk)
        return records

    @property
    def name(self) -> str:
        """The directory name (``n``) that the metadata pointer records."""
        return self.directory.name

    @property
    def first_id(self) -> int | None:
        """Original id of the first compacted entry, None when the view is empty."""
        return self.ids[0] if self.ids else None

    def __len__(self) -> int:
        return len(self.ids)

    def _entry(self, record: Entry) -> CompactedEntry:
        data = record.data
        entry_id = _ID.unpack_from(data, 0)[0]
        body = data[_ID.size :]
        ack_set = self.ack_sets.get(entry_id)
        batch_size = 0
        if ack_set is not None:
            size = self._inspector.batch_size(body)
            if size is None:
                ack_set = None
            else:
                batch_size = size
        return CompactedEntry(entry_id, body, crc32c(body), ack_set, batch_size)

    def index_of(self, entry_id: int) -> int:
        """The index of the first record whose original id is ``>= entry_id`` (``len(self)``: none)."""
        return bisect_left(self.ids, entry_id)

    def entries_of(self, records: list[Entry]) -> list[CompactedEntry]:
        """The compacted entries of records read from this view's ledger (by index)."""
        return [self._entry(r) for r in records]

    def read_from(self, entry_id: int, count: int, max_bytes: int | None = DISPATCH_BYTES) -> list[CompactedEntry]:
        """Up to ``count`` compacted entries whose ids are ``>= entry_id``, in order."""
        index = bisect_left(self.ids, entry_id)
        if index >= len(self.ids) or count <= 0:
            return []
        last = min(len(self.ids), index + count) - 1
        return [self._entry(r) for r in self.ledger.read_range(index, last, max_bytes)]

    def read_records(self, index: int, count: int) -> list[tuple[int, bytes]]:
        """Records ``index..`` as (original id, entry bytes): the input of the next compaction."""
        last = min(len(self.ids), index + count) - 1
        if last < index:
            return []
        return self.records_of(self.ledger.read_range(index, last, CHUNK_BYTES))

    @staticmethod
    def records_of(entries: list[Entry]) -> list[tuple[int, bytes]]:
        """Records read from a view's ledger as (original id, entry bytes)."""
        return [(_ID.unpack_from(e.data, 0)[0], e.data[_ID.size :]) for e in entries]

    def indexes_of(self, entry_ids: Iterable[int]) -> list[int]:
        """The record indexes of those of ``entry_ids`` the view holds, in their order."""
        out = []
        ids = self.ids
        for entry_id in entry_ids:
            index = bisect_left(ids, entry_id)
            if index < len(ids) and ids[index] == entry_id:
                out.append(index)
        return out

    def read_ids(self, entry_ids: Iterable[int]) -> list[CompactedEntry]:
        """The compacted entries with these ids (those that exist)."""
        out = []
        ids = self.ids
        for entry_id in entry_ids:
            index = bisect_left(ids, entry_id)
            if index < len(ids) and ids[index] == entry_id:
                out.append(self._entry(self.ledger.read(index)))
        return out

    def last_message(self) -> MessageKey | None:
        """(entry id, batch index or -1) of the last message of the view, None when it is empty."""
        return self._last

    def _find_last(self) -> MessageKey | None:
        if not self.ids:
            return None
        entry = self._entry(self.ledger.read(len(self.ids) - 1))
        size = self._inspector.batch_size(entry.data)
        if size is None:
            return entry.entry_id, -1
        if entry.ack_set is not None:
            return entry.entry_id, longs_to_mask(entry.ack_set).bit_length() - 1
        return entry.entry_id, size - 1

    def close(self) -> None:
        """Close the ledger files."""
        self.ledger.close()

    def __repr__(self) -> str:
        return f"CompactedView({self.directory}, horizon={self.horizon}, entries={len(self.ids)})"
