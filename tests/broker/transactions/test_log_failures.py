"""The coordinator's log when a sync of its ledger fails: which appends fail, and when."""

from __future__ import annotations

import asyncio
import errno
import json
from pathlib import Path

import pytest

from magnetar.broker.commit_rounds import report
from magnetar.broker.transactions.log import TransactionLog
from magnetar.storage import LedgerFencedError, ManagedLedger, StorageError
from magnetar.storage.files import FaultyFileLayer
from magnetar.storage.health import storage_health
from magnetar.storage.read_thread import ReadThread


class HandCommitter:
    """The test runs the rounds itself."""

    def appended(self, topic: object) -> None:
        pass


def test_an_append_that_recovers_the_ledger_before_the_failure_is_reported_fails_only_what_was_cut(
    tmp_path: Path,
) -> None:
    """A record appended after a failed fdatasync and before its report recovers the fenced ledger: the
    record the failure cut fails then, the report that comes later is passed over, and the new record,
    made durable by the next round, succeeds (the report used to fail it as well)."""
    storage_health.reset()

    async def run() -> None:
        files = FaultyFileLayer()
        ledger = ManagedLedger.open(tmp_path / "log", 1, files=files)
        ledger.sync()
        log = TransactionLog(0, ledger, HandCommitter())
        cut = log.append({"txn": 1})
        files.inject("datasync", errno.EIO, times=1)
        pending = ledger.begin_sync()
        pending.run()
        with pytest.raises(LedgerFencedError) as failed:
            ledger.end_sync(pending)
        kept = log.append({"txn": 2})  # recovers the ledger: record 1 is cut
        assert cut.done() and isinstance(cut.exception(), StorageError) and not kept.done()
        report(log, failed.value)  # the failed round's report reaches the loop now
        assert not kept.done()
        report(log, ledger.sync())
        assert kept.result() == 0
        ledger.close()

    asyncio.run(run())
    storage_health.reset()


def test_a_fenced_log_is_recovered_on_the_read_thread_and_the_records_that_came_meanwhile_follow_in_order(
    tmp_path: Path,
) -> None:
    """With a read thread, the recovery a record starts runs there: the append returns with nothing done
    on the loop (the cut record has not failed yet, nothing appended), every record that comes meanwhile
    (lazy or waited for) is held, and once the ledger is reopened the cut one fails and the held ones are
    appended in the order they came, and made durable by the next round."""
    storage_health.reset()

    async def run() -> None:
        loop = asyncio.get_running_loop()
        reads = ReadThread(loop.call_soon_threadsafe)
        files = FaultyFileLayer()
        ledger = ManagedLedger.open(tmp_path / "log", 1, files=files, reads=reads)
        ledger.sync()
        log = TransactionLog(0, ledger, HandCommitter())
        cut = log.append({"txn": 1})
        files.inject("datasync", errno.EIO, times=1)
        pending = ledger.begin_sync()
        pending.run()
        with pytest.raises(LedgerFencedError):
            ledger.end_sync(pending)
        first = log.append({"txn": 2})
        log.append_lazily({"txn": 3})
        second = log.append({"txn": 4})
        assert not cut.done() and ledger.fenced  # the recovery runs on the read thread
        while ledger.fenced:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0)
        assert isinstance(cut.exception(), StorageError) and not first.done() and not second.done()
        report(log, ledger.sync())
        assert (first.result(), second.result()) == (0, 2)
        assert [json.loads(bytes(e.data))["txn"] for e in ledger.read_intact(0, 2)] == [2, 3, 4]
        ledger.close()
        reads.shutdown()

    asyncio.run(run())
    storage_health.reset()


def test_when_the_recovery_fails_the_records_held_fail_with_its_error(tmp_path: Path) -> None:
    """A recovery that fails (the ledger closed meanwhile) fails every record held for it, and appends nothing."""
    storage_health.reset()

    async def run() -> None:
        files = FaultyFileLayer()
        ledger = ManagedLedger.open(tmp_path / "log", 1, files=files)
        ledger.sync()
        log = TransactionLog(0, ledger, HandCommitter())
        files.inject("datasync", errno.EIO, times=1)
        log.append({"txn": 1})
        pending = ledger.begin_sync()
        pending.run()
        with pytest.raises(LedgerFencedError):
            ledger.end_sync(pending)
        files.inject("truncate", errno.EIO, times=5)  # the cut fails: the ledger stays fenced
        held = log.append({"txn": 2})
        assert isinstance(held.exception(), StorageError) and ledger.fenced
        ledger.close()

    asyncio.run(run())
    storage_health.reset()
