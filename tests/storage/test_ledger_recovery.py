"""A fenced ledger recovered off its owner's thread (storage/ledger_recovery.py): the wait for the syncs
begun before and the cut run on the read thread, the ledger reopens on the owner's thread, and a close
or delete meanwhile waits for the cut instead of racing it."""

from __future__ import annotations

import errno
import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from magnetar.storage import ManagedLedger
from magnetar.storage.files import FaultyFileLayer
from magnetar.storage.ledger import LedgerFencedError, StorageError
from magnetar.storage.read_thread import ReadThread


class Owner:
    """The owner's thread (here the test's): what the read thread posts waits in a queue until run."""

    def __init__(self) -> None:
        self.posted: queue.Queue[tuple[Callable[[Any], None], Any]] = queue.Queue()
        self.reads = ReadThread(lambda callback, arg: self.posted.put((callback, arg)))

    def run_posted(self) -> None:
        """Run the next completion the read thread posted (waits for it)."""
        callback, arg = self.posted.get(timeout=5)
        callback(arg)


class ThreadLayer(FaultyFileLayer):
    """Records the thread of every truncate and fsync; truncates wait for ``gate``."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[tuple[str, str]] = []
        self.gate = threading.Event()
        self.gate.set()

    def truncate(self, fd: int, length: int) -> None:
        self.threads.append(("truncate", threading.current_thread().name))
        assert self.gate.wait(5)
        super().truncate(fd, length)

    def fsync(self, fd: int) -> None:
        self.threads.append(("fsync", threading.current_thread().name))
        super().fsync(fd)


def _fenced(tmp_path: Path, owner: Owner, files: ThreadLayer) -> ManagedLedger:
    """A ledger with entries 0 and 1 durable and 2, 3 written and failed by their fdatasync."""
    ledger = ManagedLedger.open(tmp_path / "l", 1, files=files, reads=owner.reads)
    ledger.append(b"a")
    ledger.append(b"b")
    assert ledger.sync() == 1
    ledger.append(b"c")
    ledger.append(b"d")
    files.inject("datasync", errno.EIO, times=1)
    with pytest.raises(LedgerFencedError):
        ledger.sync()
    files.threads.clear()
    return ledger


def test_the_cut_runs_on_the_read_thread_and_the_ledger_reopens_on_the_owners(tmp_path: Path) -> None:
    owner, files = Owner(), ThreadLayer()
    ledger = _fenced(tmp_path, owner, files)
    outcomes: list[int | BaseException] = []
    files.gate.clear()
    ledger.recover_later(outcomes.append)
    ledger.recover_later(outcomes.append)  # a second caller joins the recovery under way
    assert outcomes == [] and ledger.fenced
    assert ledger.trim_before(2) == 0  # nothing released while the read thread cuts
    with pytest.raises(LedgerFencedError):
        ledger.append(b"refused")
    files.gate.set()
    owner.run_posted()
    assert outcomes == [1, 1] and not ledger.fenced and ledger.last_entry_id == 1
    assert [what for what, _ in files.threads] == ["truncate", "fsync"]
    assert {thread for _, thread in files.threads} == {"magnetar-read_0"}
    assert ledger.append(b"e") == 2 and ledger.sync() == 2
    assert [e.data for e in ledger.read_range(0, 2)] == [b"a", b"b", b"e"]
    ledger.close()
    owner.reads.shutdown()
    with ManagedLedger.open(tmp_path / "l", 1) as reopened:
        assert [e.data for e in reopened.read_range(0, reopened.last_entry_id)] == [b"a", b"b", b"e"]


def test_a_close_during_the_cut_waits_for_it_and_the_recovery_reports_it(tmp_path: Path) -> None:
    owner, files = Owner(), ThreadLayer()
    ledger = _fenced(tmp_path, owner, files)
    outcomes: list[int | BaseException] = []
    files.gate.clear()
    ledger.recover_later(outcomes.append)
    reaped = threading.Event()
    closing = threading.Thread(target=lambda: (ledger._sync_and_close(list(ledger._chain.segments)), reaped.set()))
    ledger._closed = True  # what close() sets before it hands the files to its reaper
    closing.start()
    assert not reaped.wait(0.2)  # the reaper's close waits for the cut under way
    files.gate.set()
    closing.join(5)
    assert reaped.is_set()
    owner.run_posted()
    assert len(outcomes) == 1 and isinstance(outcomes[0], StorageError)
    owner.reads.shutdown()
    with ManagedLedger.open(tmp_path / "l", 1) as reopened:
        assert reopened.last_entry_id == 1  # the cut was made whole before the files closed


def test_a_recovery_begun_after_the_close_touches_no_file(tmp_path: Path) -> None:
    owner, files = Owner(), ThreadLayer()
    ledger = _fenced(tmp_path, owner, files)
    outcomes: list[int | BaseException] = []
    busy = threading.Event()
    owner.reads.submit(lambda: busy.wait(5), lambda _: None)  # the read thread is busy with a read
    ledger.recover_later(outcomes.append)
    ledger._closed = True  # closed before the read thread took the cut
    busy.set()
    owner.run_posted()  # the read's completion
    owner.run_posted()
    owner.reads.shutdown()
    ledger._sync_and_close(list(ledger._chain.segments))
    assert len(outcomes) == 1 and isinstance(outcomes[0], StorageError)
    assert files.threads == []  # no truncate, no fsync


def test_a_failed_cut_keeps_the_ledger_fenced_and_the_next_recovery_succeeds(tmp_path: Path) -> None:
    owner, files = Owner(), ThreadLayer()
    ledger = _fenced(tmp_path, owner, files)
    outcomes: list[int | BaseException] = []
    files.inject("truncate", errno.EIO, times=1)
    ledger.recover_later(outcomes.append)
    owner.run_posted()
    assert isinstance(outcomes[0], StorageError) and ledger.fenced
    ledger.recover_later(outcomes.append)
    owner.run_posted()
    assert outcomes[1] == 1 and not ledger.fenced
    ledger.close()
    owner.reads.shutdown()


def test_without_a_read_thread_the_recovery_ends_at_once(tmp_path: Path) -> None:
    files = FaultyFileLayer()
    with ManagedLedger.open(tmp_path / "l", 1, files=files) as ledger:
        ledger.append(b"a")
        ledger.sync()
        ledger.append(b"b")
        files.inject("datasync", errno.EIO, times=1)
        with pytest.raises(LedgerFencedError):
            ledger.sync()
        outcomes: list[int | BaseException] = []
        ledger.recover_later(outcomes.append)
        assert outcomes == [0] and not ledger.fenced
