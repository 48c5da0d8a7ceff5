"""Storage layer of magnetar: managed ledgers, cursor state and broker metadata."""

from magnetar.storage.cursor import CursorState, longs_to_mask, mask_to_longs
from magnetar.storage.ledger import CacheBudget, Entry, ManagedLedger
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
    "CorruptEntryError",
    "CursorState",
    "Entry",
    "EntryNotFoundError",
    "ManagedLedger",
    "MetadataConflictError",
    "MetadataError",
    "MetadataNotFoundError",
    "MetadataStore",
    "RangeSet",
    "Segment",
    "StorageError",
    "longs_to_mask",
    "mask_to_longs",
    "topic_namespace",
]
