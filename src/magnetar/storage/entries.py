"""The values a managed ledger hands out and shares: stored entries, sealed-segment facts and the
byte budget of the tail caches."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

#: an entry's bytes: ``bytes``, or a read-only view of the one buffer it was read or received in (a
#: record read back from a segment file is a view of that read, not a copy)
EntryData = bytes | memoryview

#: a view is kept as an entry's bytes, not copied, only when it holds at least this many bytes ...
VIEW_MIN_BYTES = 16 * 1024
#: ... and its buffer holds at most this many bytes besides (what keeping the view pins for nothing)
VIEW_MAX_SLACK = 1024


def owned_entry(data: bytes | bytearray | memoryview) -> EntryData:
    """``data`` as a ledger may keep it: ``bytes`` as they are; a read-only view of ``bytes`` as it is
    when it is large and its buffer is little more than the entry (a received SEND joined from the
    reads it spanned: the view pins that frame only, and a 100 KB copy is saved); anything else
    copied into ``bytes`` (a small entry, a view of a larger read buffer or of mutable memory)."""
    if data.__class__ is bytes:
        return data  # type: ignore[return-value]
    if (
        data.__class__ is memoryview
        and data.readonly  # type: ignore[union-attr]
        and data.obj.__class__ is bytes  # type: ignore[union-attr]
        and data.nbytes >= VIEW_MIN_BYTES  # type: ignore[union-attr]
        and len(data.obj) - data.nbytes <= VIEW_MAX_SLACK  # type: ignore[union-attr, arg-type]
        and data.c_contiguous  # type: ignore[union-attr]
    ):
        return data  # type: ignore[return-value]
    return bytes(data)


class Entry:
    """One stored entry: its id, its bytes and the CRC32C of those bytes."""

    __slots__ = ("entry_id", "data", "crc")

    def __init__(self, entry_id: int, data: EntryData, crc: int) -> None:
        """Bundle an entry id with its data and checksum."""
        self.entry_id = entry_id
        self.data = data
        self.crc = crc

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Entry):
            return NotImplemented
        return (self.entry_id, self.data, self.crc) == (other.entry_id, other.data, other.crc)

    def __repr__(self) -> str:
        return f"Entry(entry_id={self.entry_id}, size={len(self.data)}, crc={self.crc:#010x})"


@dataclass(frozen=True)
class SegmentInfo:
    """What retention needs to know of a sealed segment."""

    base_entry_id: int
    last_entry_id: int
    size_bytes: int
    #: when the segment was last written (seconds since the epoch)
    modified: float


class AgingCache(Protocol):
    """A cache whose entries leave by age (:class:`~magnetar.storage.tail_cache.TailCache`)."""

    def age_out(self, now: float, max_age: float) -> None:
        """Note what is cached at ``now``; drop what was cached ``max_age`` seconds ago or earlier."""


class CacheBudget:
    """A byte budget shared by the tail caches of many ledgers.

    A ledger whose append would take the shared total over ``limit`` evicts its own oldest
    cached entries first, so the total stays near the limit however many ledgers are open.
    :meth:`age_out` also drops, from every cache, the entries cached longer ago than a threshold
    (Pulsar's managedLedgerCacheEvictionTimeThresholdMillis): a reader keeping up finds an entry
    in memory, a reader behind reads it from its segment file.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        #: the caches sharing the budget (a closed ledger's leaves with it)
        self.caches: weakref.WeakSet[AgingCache] = weakref.WeakSet()
        #: called when a cache takes an entry while none held any (the ager sleeps until then)
        self.on_filled: Callable[[], None] | None = None

    def age_out(self, now: float, max_age: float) -> None:
        """Drop from every cache the entries cached ``max_age`` seconds before ``now`` or earlier
        (called on the thread that uses the caches, a few times per ``max_age``)."""
        for cache in list(self.caches):
            cache.age_out(now, max_age)
