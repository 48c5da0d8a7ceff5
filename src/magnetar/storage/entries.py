"""The values a managed ledger hands out and shares: stored entries, sealed-segment facts and the
byte budget of the tail caches."""

from __future__ import annotations

from dataclasses import dataclass


class Entry:
    """One stored entry: its id, its bytes and the CRC32C of those bytes."""

    __slots__ = ("entry_id", "data", "crc")

    def __init__(self, entry_id: int, data: bytes, crc: int) -> None:
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


class CacheBudget:
    """A byte budget shared by the tail caches of many ledgers.

    A ledger whose append would take the shared total over ``limit`` evicts its own oldest
    cached entries first, so the total stays near the limit however many ledgers are open.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
