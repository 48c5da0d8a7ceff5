"""Checking and repairing a broker's data directory: the metadata database and the segment files.

Used by ``magnetar repair DATA_DIR`` and by the broker at start (a damaged ``metadata.db`` is set
aside and what can be read of it is salvaged, so the broker starts). What it cannot rebuild it
reports: entries lost to damaged segments, metadata rows that could not be read, ledgers no topic
refers to.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

from magnetar.storage.consistency import (
    LedgerExtent,
    SegmentSpan,
    check_cursors,
    check_segment_spans,
    ledger_extent,
)
from magnetar.storage.ledger import ManagedLedger
from magnetar.storage.metadata import DB_FILE_NAME, MetadataStore
from magnetar.storage.metadata_schema import metadata_problem
from magnetar.storage.segment import _scan, parse_segment_file_name, read_ledger_label

log = logging.getLogger("magnetar.storage.repair")

#: the tables salvaged from a damaged database, in an order that keeps references valid
_TABLES = ("clusters", "tenants", "namespaces", "topics", "partitioned_topics", "cursors", "kv")


@dataclass
class RepairReport:
    """What a check or repair found and did, line by line, and what was lost for good."""

    found: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
    lost_entries: int = 0
    damaged_entries: int = 0
    #: entry ids held twice by a ledger's segments (two writers)
    repeated_entries: int = 0
    #: entries a cursor acknowledges that its ledger does not hold
    acked_missing_entries: int = 0

    @property
    def clean(self) -> bool:
        """Whether nothing was wrong."""
        return not self.found


def salvage_metadata(data_dir: Path, report: RepairReport) -> None:
    """Set a damaged ``metadata.db`` aside and build a new one from every row still readable."""
    data_dir = Path(data_dir)
    path = data_dir / DB_FILE_NAME
    stamp = time.strftime("%Y%m%dT%H%M%S")
    damaged = path.with_name(f"{DB_FILE_NAME}.damaged-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        src = Path(f"{path}{suffix}")
        if src.exists():
            os.replace(src, f"{damaged}{suffix}")
    report.repaired.append(f"set the damaged database aside as {damaged.name}")
    store = MetadataStore(data_dir)
    try:
        try:
            old = sqlite3.connect(f"file:{damaged}?mode=ro", uri=True)
        except sqlite3.DatabaseError as exc:
            report.found.append(f"nothing of the damaged database is readable: {exc}")
            old = None
        if old is not None:
            try:
                for table in _TABLES:
                    _copy_table(old, store, table, report)
            finally:
                old.close()
        store.ensure_defaults()
    finally:
        store.close()


def _copy_table(old: sqlite3.Connection, store: MetadataStore, table: str, report: RepairReport) -> None:
    try:
        rows = old.execute(f"SELECT * FROM {table}").fetchall()  # noqa: S608 - fixed table names
    except sqlite3.DatabaseError as exc:
        report.found.append(f"metadata table {table}: unreadable ({exc}); its rows are lost")
        return
    if not rows:
        return
    marks = ",".join("?" * len(rows[0]))
    conn = store._conn  # noqa: SLF001 - the repair writes raw rows of the store's own schema
    with store._lock:  # noqa: SLF001
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(f"INSERT OR IGNORE INTO {table} VALUES ({marks})", rows)  # noqa: S608
        conn.execute("COMMIT")
    report.repaired.append(f"metadata table {table}: salvaged {len(rows)} rows")


def check_ledgers(data_dir: Path, report: RepairReport) -> dict[int, LedgerExtent]:
    """Scan every segment of every ledger; returns {ledger id: the ids it holds} and reports damage:
    damaged records, torn segments, ids that repeat or are missing between segments."""
    root = Path(data_dir) / "ledgers"
    extents: dict[int, LedgerExtent] = {}
    if not root.is_dir():
        return extents
    for directory in sorted(root.iterdir()):
        if not directory.is_dir() or not directory.name.isdigit():
            continue
        spans, torn = _scan_ledger(directory, report)
        findings = check_segment_spans(int(directory.name), spans, torn)
        report.found.extend(findings.lines)
        report.repeated_entries += findings.repeated
        report.lost_entries += findings.missing
        extents[int(directory.name)] = ledger_extent(spans)
    return extents


def _scan_ledger(directory: Path, report: RepairReport) -> tuple[list[SegmentSpan], set[str]]:
    """The segments of one ledger as scanned, and the names of those whose torn end was reported."""
    bases = sorted(b for n in os.listdir(directory) if (b := parse_segment_file_name(n)) is not None)
    spans: list[SegmentSpan] = []
    torn: set[str] = set()
    for i, base in enumerate(bases):
        path = directory / f"{base:020d}.log"
        fd = os.open(path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            offsets, end, problem, damaged = _scan(fd, size)
        finally:
            os.close(fd)
        spans.append(SegmentSpan(path.name, base, len(offsets)))
        if damaged:
            report.damaged_entries += damaged
            report.found.append(f"ledger {directory.name} segment {path.name}: {damaged} damaged entries (skipped when read)")
        if problem is None:
            continue
        torn.add(path.name)
        if i + 1 < len(bases):
            lost = bases[i + 1] - base - len(offsets)
            report.lost_entries += max(lost, 0)
            report.found.append(
                f"ledger {directory.name} segment {path.name}: {problem} at byte {end}; "
                f"entries {base + len(offsets)}..{bases[i + 1] - 1} ({lost}) are lost"
            )
        else:
            report.found.append(
                f"ledger {directory.name} segment {path.name}: {problem} at byte {end}; "
                f"{size - end} bytes of an unconfirmed tail are cut when the ledger opens"
            )
    return spans, torn


def repair_data_dir(data_dir: Path, *, fix: bool = True) -> RepairReport:
    """Check a (stopped) broker's data directory and, with ``fix``, repair what can be repaired:
    a damaged metadata database is rebuilt from its readable rows, topics whose rows were lost are
    registered again from their ledgers' labels, torn segment tails are cut, cursors acknowledging
    entries their ledger does not hold are cut back to its last entry."""
    data_dir = Path(data_dir)
    # The broker keeps its database at DATA_DIR/metadata.db/metadata.db.
    meta_dir = data_dir / DB_FILE_NAME if (data_dir / DB_FILE_NAME).is_dir() else data_dir
    report = RepairReport()
    problem = metadata_problem(meta_dir)
    if problem is not None:
        report.found.append(f"{DB_FILE_NAME} is damaged: {problem}")
        if fix:
            salvage_metadata(meta_dir, report)
    extents = check_ledgers(data_dir, report)
    if problem is None or fix:
        found, missing, repaired = check_cursors(meta_dir, extents, fix=fix)
        report.found.extend(found)
        report.acked_missing_entries += missing
        report.repaired.extend(repaired)
    if not fix or not extents:
        return report
    counts = {ledger_id: max(extent.last - extent.first + 1, 0) for ledger_id, extent in extents.items()}
    with MetadataStore(meta_dir) as store:
        store.reserve_ledger_ids(max(counts))
        known = {store.get_topic(name): name for name in store.list_topics()}
        for ledger_id in sorted(counts):
            if ledger_id in known:
                continue
            label = read_ledger_label(data_dir / "ledgers" / str(ledger_id))
            if label is not None and fix and store.register_topic(label, ledger_id):
                report.repaired.append(f"topic {label} registered again on its ledger {ledger_id}")
            else:
                report.found.append(f"ledger {ledger_id} ({counts[ledger_id]} entries) belongs to no known topic")
        for ledger_id in sorted(counts):
            if ledger_id in known or read_ledger_label(data_dir / "ledgers" / str(ledger_id)):
                ManagedLedger.open(data_dir / "ledgers" / str(ledger_id), ledger_id).close()
    return report
