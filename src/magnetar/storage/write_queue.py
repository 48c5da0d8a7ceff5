"""Records a ledger accepted but has not written yet: the event loop queues, the commit thread writes.

A write that extends a file can block for milliseconds (tens when the disk is congested: ext4 makes
it wait for the journal commit of a concurrent fdatasync). :meth:`ManagedLedger.append
<magnetar.storage.ledger.ManagedLedger.append>` therefore only assigns the entry id and queues the
record here; the ledger's next :meth:`~magnetar.storage.ledger.ManagedLedger.sync` (or ``flush``),
run by the commit thread, writes each segment's queued records with one writev before its
fdatasync. Until then the entries are read from :attr:`WriteQueue.entries`.
"""

from __future__ import annotations

from magnetar.storage.entries import EntryData
from magnetar.storage.segment import RECORD_OVERHEAD, Segment

#: the records queued for one segment: (segment, entry id of the first, [(data, crc), ...])
Batch = tuple[Segment, int, list[tuple[EntryData, int]]]


class WriteQueue:
    """The entries of one ledger not yet written, grouped by segment in append order.

    Not thread-safe by itself: the ledger guards every call with its lock; :attr:`entries` may be
    read without it (one dict lookup), because the writer indexes a record in its segment before it
    leaves this dict.
    """

    def __init__(self) -> None:
        """An empty queue."""
        #: entry id -> (data, crc) of every queued entry (what readers get until it is written)
        self.entries: dict[int, tuple[EntryData, int]] = {}
        #: bytes the queued records will take in their files (headers included)
        self.bytes = 0
        #: base entry id of a segment -> bytes queued for it
        self.segment_bytes: dict[int, int] = {}
        self._batches: list[Batch] = []

    def add(self, segment: Segment, entry_id: int, data: EntryData, crc: int) -> None:
        """Queue the record of entry ``entry_id`` for ``segment`` (ids must follow each other)."""
        batches = self._batches
        if not batches or batches[-1][0] is not segment:
            batches.append((segment, entry_id, []))
        batches[-1][2].append((data, crc))
        self.entries[entry_id] = (data, crc)
        size = RECORD_OVERHEAD + len(data)
        self.bytes += size
        base = segment.base_entry_id
        self.segment_bytes[base] = self.segment_bytes.get(base, 0) + size

    def take(self) -> list[Batch]:
        """Every batch queued so far, oldest first; they stay readable until :meth:`written`."""
        batches, self._batches = self._batches, []
        return batches

    def written(self, segment: Segment, first: int, records: list[tuple[EntryData, int]]) -> None:
        """The records of a taken batch for ``segment`` starting at entry ``first`` are written and
        indexed (or dropped)."""
        entries = self.entries
        size = 0
        for offset, (data, _) in enumerate(records):
            if entries.pop(first + offset, None) is not None:
                size += RECORD_OVERHEAD + len(data)
        self.bytes -= size
        base = segment.base_entry_id
        left = self.segment_bytes.get(base, 0) - size
        if left > 0:
            self.segment_bytes[base] = left
        else:
            self.segment_bytes.pop(base, None)

    def drop(self, segments: list[Segment]) -> None:
        """Forget the records queued for ``segments`` (trimmed: the oldest of the ledger)."""
        doomed = {id(segment) for segment in segments}
        kept: list[Batch] = []
        for batch in self._batches:
            if id(batch[0]) in doomed:
                self.written(*batch)
            else:
                kept.append(batch)
        self._batches = kept

    def clear(self) -> None:
        """Forget every queued record (the ledger was deleted, or cut back after a failure)."""
        self._batches = []
        self.entries = {}
        self.bytes = 0
        self.segment_bytes = {}
