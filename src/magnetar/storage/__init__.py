"""Storage layer of magnetar: managed ledgers, managed cursors, compacted ledgers and broker metadata.

Names load on first use (PEP 562): importing one submodule does not load its siblings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magnetar.lazy_names import lazy_names

if TYPE_CHECKING:
    from magnetar.storage.compacted import CompactedEntry, CompactedView, CompactedWriter, compacted_root
    from magnetar.storage.cursor import CursorState, longs_to_mask, mask_to_longs
    from magnetar.storage.ledger import CacheBudget, Entry, LedgerFencedError, ManagedLedger
    from magnetar.storage.managed_cursor import (
        CursorBatch,
        CursorStore,
        EntrySource,
        ManagedCursor,
        NoEntries,
    )
    from magnetar.storage.metadata import (
        MetadataConflictError,
        MetadataError,
        MetadataNotFoundError,
        MetadataStore,
        topic_namespace,
    )
    from magnetar.storage.rangeset import RangeSet
    from magnetar.storage.segment import CorruptEntryError, EntryNotFoundError, Segment, StorageError

#: public name -> the module of this package that defines it
_MODULES = {
    "CompactedEntry": "compacted",
    "CompactedView": "compacted",
    "CompactedWriter": "compacted",
    "compacted_root": "compacted",
    "CursorState": "cursor",
    "longs_to_mask": "cursor",
    "mask_to_longs": "cursor",
    "CacheBudget": "ledger",
    "Entry": "ledger",
    "LedgerFencedError": "ledger",
    "ManagedLedger": "ledger",
    "CursorBatch": "managed_cursor",
    "CursorStore": "managed_cursor",
    "EntrySource": "managed_cursor",
    "ManagedCursor": "managed_cursor",
    "NoEntries": "managed_cursor",
    "MetadataConflictError": "metadata",
    "MetadataError": "metadata",
    "MetadataNotFoundError": "metadata",
    "MetadataStore": "metadata",
    "topic_namespace": "metadata",
    "RangeSet": "rangeset",
    "CorruptEntryError": "segment",
    "EntryNotFoundError": "segment",
    "Segment": "segment",
    "StorageError": "segment",
}

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


__getattr__, __dir__ = lazy_names(__name__, _MODULES)
