"""One process per data directory: the lock file, its holder's pid, its release."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from magnetar.storage.dir_lock import LOCK_FILE_NAME, DataDirLock, DataDirLockedError


def test_a_second_lock_is_refused_naming_the_holder_until_the_first_is_released(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    first = DataDirLock.acquire(data_dir)
    assert (data_dir / LOCK_FILE_NAME).read_text() == f"{os.getpid()}\n"
    with pytest.raises(DataDirLockedError) as refused:
        DataDirLock.acquire(data_dir)
    assert refused.value.pid == os.getpid()
    assert str(refused.value) == f"data directory {data_dir} is in use by process {refused.value.pid}"
    first.release()
    first.release()  # idempotent
    with DataDirLock.acquire(data_dir) as again:
        assert again.held
    assert not again.held


def test_the_lock_of_another_process_is_seen_and_dropped_when_it_dies(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys; from magnetar.storage.dir_lock import DataDirLock; "
         f"DataDirLock.acquire({str(tmp_path)!r}); print('held', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        before = (tmp_path / LOCK_FILE_NAME).read_bytes()
        with pytest.raises(DataDirLockedError) as refused:
            DataDirLock.acquire(tmp_path)
        assert refused.value.pid == holder.pid
        assert (tmp_path / LOCK_FILE_NAME).read_bytes() == before
    finally:
        holder.kill()
        holder.wait()
    # a killed holder leaves no stale lock
    DataDirLock.acquire(tmp_path).release()


def test_without_create_a_missing_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        DataDirLock.acquire(tmp_path / "missing", create=False)
    assert not (tmp_path / "missing").exists()
