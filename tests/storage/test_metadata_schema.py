"""A new metadata database: made whole under another name with two fsyncs, then renamed into place."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from magnetar.storage import MetadataStore, metadata_schema
from magnetar.storage.metadata_schema import SCHEMA_V1, SCHEMA_VERSION


def _schema(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
    return sorted(conn.execute("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"))


def test_a_new_database_has_the_schema_the_version_and_wal_mode_in_its_file(tmp_path: Path) -> None:
    MetadataStore(tmp_path).close()
    reference = sqlite3.connect(":memory:")
    reference.executescript(SCHEMA_V1)
    conn = sqlite3.connect(tmp_path / "metadata.db")
    try:
        assert _schema(conn) == _schema(reference)
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        # read from the file's header: this connection never asked for WAL
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()
    assert sorted(os.listdir(tmp_path)) == ["metadata.db"]


def test_the_file_is_fsynced_before_its_rename_and_the_directory_after(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append("fsync " + os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    def replace(src: os.PathLike[str], dst: os.PathLike[str]) -> None:
        events.append(f"replace {Path(src).name} {Path(dst).name}")
        real_replace(src, dst)

    monkeypatch.setattr(metadata_schema.os, "fsync", fsync)
    monkeypatch.setattr(metadata_schema.os, "replace", replace)
    MetadataStore(tmp_path).close()
    assert events == [f"fsync {tmp_path / 'metadata.db.new'}", "replace metadata.db.new metadata.db",
                      f"fsync {tmp_path}"]
    events.clear()
    MetadataStore(tmp_path).close()  # an existing database is opened as it is
    assert events == []


def test_a_crash_while_it_is_made_leaves_no_database_and_the_next_start_makes_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(src: os.PathLike[str], dst: os.PathLike[str]) -> None:
        raise OSError("crashed before the rename")

    monkeypatch.setattr(metadata_schema.os, "replace", crash)
    with pytest.raises(OSError, match="crashed before the rename"):
        MetadataStore(tmp_path)
    assert not (tmp_path / "metadata.db").exists()
    (tmp_path / "metadata.db.new").write_bytes(b"half a database")
    monkeypatch.undo()
    with MetadataStore(tmp_path) as store:
        store.ensure_defaults()
        assert store.list_namespaces("public") == ["public/default"]
    assert sorted(os.listdir(tmp_path)) == ["metadata.db"]


def test_what_a_new_database_confirmed_survives_kill_9(tmp_path: Path) -> None:
    script = (
        "import os, signal, sys\n"
        "from magnetar.storage import MetadataStore\n"
        "store = MetadataStore(sys.argv[1])\n"
        "store.ensure_defaults('c1')\n"
        "store.create_tenant('acme', {'adminRoles': [], 'allowedClusters': ['c1']})\n"
        "store.create_namespace('acme/orders')\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    with MetadataStore(tmp_path) as store:
        assert store.list_clusters() == ["c1"]
        assert store.list_tenants() == ["acme", "public"]
        assert store.get_namespace("acme/orders") == {}
        assert store.list_namespaces("public") == ["public/default"]
