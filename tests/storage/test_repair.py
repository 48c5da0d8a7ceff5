"""Damaged data directories: a damaged metadata.db, damaged segments; ``repair_data_dir`` and the
``magnetar repair`` command rebuild what can be rebuilt and report what is lost."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from magnetar.cli.repair import repair
from magnetar.storage import CursorState, ManagedLedger, MetadataStore
from magnetar.storage.health import storage_health
from magnetar.storage.repair import metadata_problem, repair_data_dir
from magnetar.storage.segment import segment_file_name

TOPIC = "persistent://public/default/repaired"


def _data_dir(tmp_path: Path) -> tuple[Path, int]:
    """A broker-like data directory: metadata.db/metadata.db and one labelled ledger of 3 segments."""
    data = tmp_path / "data"
    with MetadataStore(data / "metadata.db") as store:
        store.ensure_defaults()
        ledger_id = store.get_or_create_topic(TOPIC)
        store.save_cursors([(TOPIC, "sub", CursorState(-1).to_bytes())])
    with ManagedLedger.open(data / "ledgers" / str(ledger_id), ledger_id, segment_max_bytes=100, label=TOPIC) as ledger:
        for i in range(6):
            ledger.append(b"entry-%d" % i + bytes(40))
    return data, ledger_id


def _damage_database(data: Path) -> None:
    db = data / "metadata.db" / "metadata.db"
    raw = bytearray(db.read_bytes())
    raw[:100] = b"\xde\xad" * 50  # the header: SQLite no longer recognises the file
    db.write_bytes(bytes(raw))


def test_a_damaged_database_is_set_aside_and_topics_come_back_from_their_ledgers(tmp_path: Path) -> None:
    data, ledger_id = _data_dir(tmp_path)
    _damage_database(data)
    assert metadata_problem(data / "metadata.db") is not None
    report = repair_data_dir(data)
    assert any("metadata.db is damaged" in line for line in report.found)
    assert any(f"topic {TOPIC} registered again on its ledger {ledger_id}" in line for line in report.repaired)
    assert list((data / "metadata.db").glob("metadata.db.damaged-*"))
    with MetadataStore(data / "metadata.db") as store:
        assert store.get_topic(TOPIC) == ledger_id
        assert store.get_namespace("public/default") is not None
    with ManagedLedger.open(data / "ledgers" / str(ledger_id), ledger_id) as ledger:
        assert [e.data[:7] for e in ledger.read_range(0, 5)] == [b"entry-%d" % i for i in range(6)]
    assert repair_data_dir(data).clean


def test_a_readable_database_with_damage_inside_keeps_every_readable_row(tmp_path: Path) -> None:
    data, ledger_id = _data_dir(tmp_path)
    db = data / "metadata.db" / "metadata.db"
    conn = sqlite3.connect(db)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'kv'").fetchone()[0]
    conn.close()
    with db.open("r+b") as f:  # the kv table's page is overwritten: that table is lost, not the rest
        f.seek((root - 1) * page_size)
        f.write(b"\xa5" * page_size)
    report = repair_data_dir(data)
    assert any("metadata table kv: unreadable" in line for line in report.found), report.found
    with MetadataStore(data / "metadata.db") as store:
        assert store.get_topic(TOPIC) == ledger_id
        assert store.load_cursors(TOPIC) == {"sub": CursorState(-1).to_bytes()}


def test_damaged_segments_are_reported_with_what_is_lost(tmp_path: Path) -> None:
    data, ledger_id = _data_dir(tmp_path)
    directory = data / "ledgers" / str(ledger_id)
    first = directory / segment_file_name(0)
    raw = bytearray(first.read_bytes())
    raw[0] ^= 0x7F  # framing lost: the first segment's entries are gone
    first.write_bytes(bytes(raw))
    report = repair_data_dir(data, fix=False)
    assert report.lost_entries >= 1
    assert any("are lost" in line for line in report.found)


def test_the_repair_command(tmp_path: Path) -> None:
    data, _ = _data_dir(tmp_path)
    app = typer.Typer()
    app.command()(repair)
    runner = CliRunner()
    clean = runner.invoke(app, [str(data)])
    assert clean.exit_code == 0 and "clean" in clean.output
    _damage_database(data)
    done = runner.invoke(app, [str(data)])
    assert done.exit_code == 1
    assert "found: metadata.db is damaged" in done.output
    assert "registered again" in done.output
    assert runner.invoke(app, [str(tmp_path / "missing")]).exit_code == 2


def test_a_failed_commit_rolls_back_and_the_store_stays_usable(tmp_path: Path) -> None:
    """A full disk at COMMIT: the transaction is rolled back, the next write works."""
    storage_health.reset()
    store = MetadataStore(tmp_path)
    real = store._conn

    class FullDisk:
        def __init__(self) -> None:
            self.fail = True

        def execute(self, sql: str, *args: object) -> object:
            if sql == "COMMIT" and self.fail:
                self.fail = False
                raise sqlite3.OperationalError("database or disk is full")
            return real.execute(sql, *args)

        def __getattr__(self, name: str) -> object:
            return getattr(real, name)

    store._conn = FullDisk()  # type: ignore[assignment]
    with pytest.raises(sqlite3.OperationalError):
        store.put_kv("k", b"v")
    assert not real.in_transaction
    assert storage_health.disk_full and storage_health.metadata_write_errors == 1
    storage_health.reset()
    store.put_kv("k", b"v2")
    assert store.get_kv("k") == b"v2"
    store._conn = real
    store.close()
