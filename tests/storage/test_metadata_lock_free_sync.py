"""No fsync and no checkpoint under the metadata store's write lock: a write (the loop's, within
deferring_sync) never waits for another thread's fsync or checkpoint, and what a write returned
from survives kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from magnetar.storage import metadata as metadata_module
from magnetar.storage.health import storage_health
from magnetar.storage.metadata import MetadataStore, deferring_sync
from magnetar.storage.metadata_wal import WalSync


def test_a_write_does_not_wait_for_another_threads_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entered, release = threading.Event(), threading.Event()
    original = WalSync.fsync_wal

    def slow_fsync(self: WalSync) -> int:
        if threading.current_thread().name == "slow-writer":
            entered.set()
            assert release.wait(10)
        return original(self)

    monkeypatch.setattr(WalSync, "fsync_wal", slow_fsync)
    with MetadataStore(tmp_path) as store:
        store.ensure_defaults()
        store.on_deferred_commit = lambda: None
        returned: list[float] = []
        writer = threading.Thread(
            target=lambda: (store.create_tenant("slow", {}), returned.append(time.monotonic())), name="slow-writer")
        writer.start()
        assert entered.wait(10)  # the other thread committed and is in its fsync
        started = time.monotonic()
        with deferring_sync():  # as the loop writes
            store.create_namespace("public/fast")
        assert time.monotonic() - started < 1.0
        assert store.get_namespace("public/fast") == {}
        assert store.deferred_commits == 1
        assert returned == []  # the slow write has not returned: it is not durable yet
        release.set()
        writer.join(10)
        assert len(returned) == 1 and returned[0] >= started
        assert store.get_tenant("slow") == {}


def test_the_checkpoint_does_not_take_the_write_lock(tmp_path: Path) -> None:
    db = tmp_path / metadata_module.DB_FILE_NAME
    with MetadataStore(tmp_path) as store:
        store.wal.checkpoint_bytes = 0  # every sync checkpoints
        store.on_deferred_commit = lambda: None
        with deferring_sync():
            store.put_kv("big", b"x" * 200_000)  # in the log only: no automatic checkpoint
        size_before = db.stat().st_size
        assert size_before < 200_000
        synced: list[int] = []
        with store._lock:  # a writer holds the lock all along
            syncer = threading.Thread(target=lambda: synced.append(store.sync_wal()))
            syncer.start()
            syncer.join(10)
            assert synced == [1]
        assert db.stat().st_size > 200_000  # the checkpoint copied the log into the database


def test_a_failed_fsync_of_a_direct_write_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(self: WalSync) -> int:
        raise OSError(5, "Input/output error")

    storage_health.reset()
    with MetadataStore(tmp_path) as store:
        monkeypatch.setattr(WalSync, "fsync_wal", failing)
        try:
            with pytest.raises(metadata_module.sqlite3.OperationalError, match="not made durable"):
                store.create_tenant("t1", {})
            assert storage_health.metadata_write_errors == 1
        finally:
            storage_health.reset()
        monkeypatch.undo()
        store.create_tenant("t2", {})  # the store writes on
        assert store.list_tenants() == ["t1", "t2"]


_CHILD = """
import sys
from magnetar.storage.metadata import MetadataStore, deferring_sync
from magnetar.storage.metadata_wal import WalSync
store = MetadataStore(sys.argv[1])
store.ensure_defaults()
store.create_tenant("direct", {})
store.on_deferred_commit = lambda: None
with deferring_sync():
    store.create_namespace("public/deferred")
store.sync_wal()
store.save_cursors([("persistent://public/default/t", "sub", b"state")])
print("written", flush=True)
sys.stdin.read()
"""


def test_confirmed_writes_survive_kill_9(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(metadata_module.__file__).parents[2])}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(tmp_path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, env=env, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "written"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    with MetadataStore(tmp_path) as store:
        assert store.get_tenant("direct") == {}
        assert store.get_namespace("public/deferred") == {}
        assert store.load_cursors("persistent://public/default/t") == {"sub": b"state"}
