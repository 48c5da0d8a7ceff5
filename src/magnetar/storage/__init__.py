"""Storage layer of magnetar: managed ledgers, managed cursors, compacted ledgers and broker metadata."""

from __future__ import annotations

from magnetar.storage.compacted import CompactedEntry, CompactedView, CompactedWriter, compacted_root
from magnetar.storage.cursor import CursorState, longs_to_mask, mask_to_longs
from magnetar.storage.ledger import CacheBudget, Entry, LedgerFencedError, ManagedLedger
from magnetar.storage.managed_cursor import CursorBatch, CursorStore, EntrySource, ManagedCursor, NoEntries
from magnetar.storage.metadata import (
    MetadataConflictError,
    MetadataError,
    MetadataNotFoundError,
    MetadataStore,
    topic_namespace,
)
from magnetar.storage.rangeset import RangeSet
from magnetar.storage.segment import CorruptEntryError, EntryNotFoundError, Segment, StorageError

__all__ = [
    "CacheBudget",
    "CompactedEntry",
    "CompactedView",
    "CompactedWriter",
    "CorruptEntryError",
    "CursorBatch",
    "CursorState",
    "CursorStore",
    "Entry",
    "EntryNotFoundError",
    "EntrySource",
    "LedgerFencedError",
    "ManagedCursor",
    "ManagedLedger",
    "MetadataConflictError",
    "MetadataError",
    "MetadataNotFoundError",
    "MetadataStore",
    "NoEntries",
    "RangeSet",
    "Segment",
    "StorageError",
    "compacted_root",
    "longs_to_mask",
    "mask_to_longs",
    "topic_namespace",
]
