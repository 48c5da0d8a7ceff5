"""``backup_data_dir`` on a directory at rest: an exact copy; and its refusals."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from magnetar.cli.main import build_app
from magnetar.storage.backup import BackupError, backup_data_dir
from magnetar.storage.data_format import FORMAT_FILE_NAME, FORMAT_VERSION
from magnetar.storage.dir_lock import DataDirLock
from magnetar.storage.repair import repair_data_dir

from .test_repair_two_writers import write_segment

FIXTURE = Path(__file__).parent / "fixtures" / "data-dir-v1"


def rows(db: Path) -> dict[str, list[tuple[object, ...]]]:
    conn = sqlite3.connect(db)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall()) for t in tables}  # noqa: S608
    finally:
        conn.close()


def test_a_directory_at_rest_is_copied_exactly(tmp_path: Path) -> None:
    source, copy = tmp_path / "data", tmp_path / "copy"
    shutil.copytree(FIXTURE, source)
    report = backup_data_dir(source, copy)
    assert (report.topics, report.ledgers, report.entries, report.notes) == (4, 4, 17, [])
    assert rows(copy / "metadata.db" / "metadata.db") == rows(source / "metadata.db" / "metadata.db")
    originals = sorted(p.relative_to(source) for p in (source / "ledgers").rglob("*") if p.is_file())
    assert sorted(p.relative_to(copy) for p in (copy / "ledgers").rglob("*") if p.is_file()) == originals
    for relative in originals:
        assert (copy / relative).read_bytes() == (source / relative).read_bytes()
    assert report.bytes == sum((source / r).stat().st_size for r in originals if r.suffix == ".log")
    assert (copy / FORMAT_FILE_NAME).read_text() == f"magnetar-data {FORMAT_VERSION}\n"
    assert repair_data_dir(copy, fix=False).clean


def test_refusals(tmp_path: Path) -> None:
    source = tmp_path / "data"
    shutil.copytree(FIXTURE, source)
    with pytest.raises(BackupError, match="is not a magnetar data directory"):
        backup_data_dir(tmp_path / "nothing", tmp_path / "copy")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(BackupError, match="exists and is not an empty directory"):
        backup_data_dir(source, tmp_path / "full")
    with DataDirLock.acquire(tmp_path / "held"), pytest.raises(BackupError, match="held exists and is not an empty"):
        backup_data_dir(source, tmp_path / "held")  # its LOCK file: a broker (or another backup) owns it
    command = build_app(["backup"])
    refused = CliRunner().invoke(command, ["backup", str(source), str(tmp_path / "full")])
    assert refused.exit_code == 2
    assert refused.output == f"error: {tmp_path / 'full'} exists and is not an empty directory\n"
    made = CliRunner().invoke(command, ["backup", str(source), str(tmp_path / "fresh")])
    assert made.exit_code == 0
    assert made.output == f"backed up 4 topics: 4 ledgers, 17 entries, {1137} bytes into {tmp_path / 'fresh'}\n"


def test_compacted_ledgers_of_copied_topics_come_along_and_strangers_stay(tmp_path: Path) -> None:
    source, copy = tmp_path / "data", tmp_path / "copy"
    shutil.copytree(FIXTURE, source)
    compacted = source / "ledgers" / "3-compacted" / "1"  # ledger 3: topic orders
    write_segment(compacted, 0, 4)
    (compacted / "index").write_bytes(b"MGCX-index")
    stranger = source / "ledgers" / "99-compacted" / "1"  # no topic has ledger 99
    write_segment(stranger, 0, 2)
    report = backup_data_dir(source, copy)
    assert report.notes == []
    for name in ("00000000000000000000.log", "index"):
        assert (copy / "ledgers" / "3-compacted" / "1" / name).read_bytes() == (compacted / name).read_bytes()
    assert not (copy / "ledgers" / "99-compacted").exists()
    assert report.entries == 17 + 4
