"""What two writers on one data directory leave behind, found by ``magnetar repair``.

Two brokers appending to the same ledger (before the data directory lock, or with a lock file
removed by hand) leave segments whose entry ids overlap, one writer having rolled to a new segment
at an id the other kept writing past, or gaps between segments; and cursors acknowledging entries
the ledger no longer holds (a mark-delete position or acknowledged ranges past its last entry).
Such a cursor would silently acknowledge the next messages given those ids, so a repair cuts it
back to the ledger's last entry. Entry ids are positions (a record stores no id), so two writers
overwriting the same bytes with records of the same size leave no trace here: the lock prevents it.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from magnetar.storage.cursor import CursorState
from magnetar.storage.metadata import DB_FILE_NAME, MetadataStore

__all__ = ["LedgerExtent", "SegmentSpan", "SpanFindings", "check_segment_spans", "check_cursors"]


@dataclass(frozen=True)
class SegmentSpan:
    """One segment file as scanned: its first entry id (from its name) and its intact records."""

    name: str
    base: int
    count: int

    @property
    def end(self) -> int:
        """The id after its last entry."""
        return self.base + self.count


@dataclass
class SpanFindings:
    """What :func:`check_segment_spans` found in one ledger."""

    lines: list[str] = field(default_factory=list)
    repeated: int = 0
    missing: int = 0


@dataclass(frozen=True)
class LedgerExtent:
    """The entry ids a ledger holds on disk: ``first..last`` (``last < first`` when it holds none)."""

    first: int
    last: int


def check_segment_spans(ledger_id: int, spans: list[SegmentSpan], torn: set[str]) -> SpanFindings:
    """Ids that repeat (a segment starting before the previous one ends: the ids go backwards) or
    are missing between consecutive segments of a ledger (``torn``: segments whose loss is reported
    already, by the scan)."""
    found = SpanFindings()
    for before, after in zip(spans, spans[1:], strict=False):
        if before.end > after.base:
            repeated = min(before.end, after.end) - after.base
            found.repeated += repeated
            found.lines.append(
                f"ledger {ledger_id} segment {after.name}: starts at entry {after.base} but {before.name} holds entries "
                f"up to {before.end - 1}: {repeated} entry ids repeat (the ids go backwards; two writers?)"
            )
        elif before.end < after.base and before.name not in torn:
            missing = after.base - before.end
            found.missing += missing
            found.lines.append(
                f"ledger {ledger_id} segment {after.name}: entries {before.end}..{after.base - 1} ({missing}) "
                f"are missing before it"
            )
    return found


def ledger_extent(spans: list[SegmentSpan]) -> LedgerExtent:
    """The ids a ledger's scanned segments hold."""
    if not spans:
        return LedgerExtent(0, -1)
    return LedgerExtent(spans[0].base, max(span.end for span in spans) - 1)


def _read_rows(meta_dir: Path) -> tuple[dict[str, int], list[tuple[str, str, bytes]]]:
    """The topics' ledger ids and every stored cursor, read without changing the database."""
    conn = sqlite3.connect(f"file:{meta_dir / DB_FILE_NAME}?mode=ro", uri=True)
    try:
        ledgers = {str(name): int(ledger) for name, ledger in conn.execute("SELECT name, ledger_id FROM topics")}
        cursors = [(str(t), str(s), bytes(b)) for t, s, b in conn.execute("SELECT topic, subscription, state FROM cursors")]
    finally:
        conn.close()
    return ledgers, cursors


def check_cursors(
    meta_dir: Path, extents: dict[int, LedgerExtent], *, fix: bool
) -> tuple[list[str], int, list[str]]:
    """Cursors acknowledging entries past their ledger's last one: (found lines, entries acknowledged
    but missing, repaired lines). With ``fix`` each such cursor is cut back to the ledger's last entry."""
    if not (meta_dir / DB_FILE_NAME).exists():
        return [], 0, []
    ledgers, cursors = _read_rows(meta_dir)
    found: list[str] = []
    fixed: list[tuple[str, str, bytes]] = []
    missing = 0
    for topic, subscription, blob in cursors:
        ledger_id = ledgers.get(topic)
        if ledger_id is None:
            continue
        try:
            state = CursorState.from_bytes(blob)
        except ValueError as exc:
            found.append(f"cursor {subscription} of {topic}: unreadable ({exc})")
            continue
        extent = extents.get(ledger_id, LedgerExtent(0, -1))
        mark_delete = state.mark_delete
        dropped = state.forget_after(extent.last)
        if not dropped:
            continue
        missing += dropped
        found.append(
            f"cursor {subscription} of {topic} (mark-delete {mark_delete}): {dropped} entries acknowledged "
            f"but missing from ledger {ledger_id}, whose last entry is {extent.last}"
        )
        fixed.append((topic, subscription, state.to_bytes()))
    repaired: list[str] = []
    if fix and fixed:
        with MetadataStore(meta_dir) as store:
            store.save_cursors(fixed)
        repaired = [f"cursor {sub} of {topic}: cut back to its ledger's last entry" for topic, sub, _ in fixed]
    return found, missing, repaired
