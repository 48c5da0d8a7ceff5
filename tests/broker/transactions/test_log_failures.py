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


def open_log(tmp_path: Path, reads: ReadThread | None = None) -> tuple[FaultyFileLayer, ManagedLedger, TransactionLog]:
    """A coordinator's log on a synced ledger whose file layer takes faults."""
    files = FaultyFileLayer()
    ledger = ManagedLedger.open(tmp_path / "log", 1, files=files, reads=reads)
    ledger.sync()
    return files, ledger, TransactionLog(0, ledger, HandCommitter())


def failed_sync(ledger: ManagedLedger, files: FaultyFileLayer) -> LedgerFencedError:
    """Run a sync of ``ledger`` whose fdatasync fails: the ledger is fenced; the failure's report."""
    files.inject("datasync", errno.EIO, times=1)
    pending = ledger.begin_sync()
    pending.run()
    with pytest.raises(LedgerFencedError) as failed:
        ledger.end_sync(pending)
    return failed.value


def test_an_append_that_recovers_the_ledger_before_the_failure_is_reported_fails_only_what_was_cut(
    tmp_path: Path,
) -> None:
    """A record appended after a failed fdatasync and before its report recovers the fenced ledger: the
    record the failure cut fails then, the report that comes later is passed over, and the new record,
    made durable by the next round, succeeds (the report used to fail it as well)."""
    storage_health.reset()

    async def run() -> None:
        files, ledger, log = open_log(tmp_path)
        cut = log.append({"txn": 1})
        failed = failed_sync(ledger, files)
        kept = log.append({"txn": 2})  # recovers the ledger: record 1 is cut
        assert cut.done() and isinstance(cut.exception(), StorageError) and not kept.done()
        report(log, failed)  # the failed round's report reaches the loop now
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
        files, ledger, log = open_log(tmp_path, reads)
        cut = log.append({"txn": 1})
        failed_sync(ledger, files)
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
    """A recovery that fails (the cut cannot be written: the ledger stays fenced) fails every record held
    for it, and appends nothing."""
    storage_health.reset()

    async def run() -> None:
        files, ledger, log = open_log(tmp_path)
        log.append({"txn": 1})
        failed_sync(ledger, files)
        files.inject("truncate", errno.EIO, times=5)  # the cut fails: the ledger stays fenced
        held = log.append({"txn": 2})
        assert isinstance(held.exception(), StorageError) and ledger.fenced
        ledger.close()

    asyncio.run(run())
    storage_health.reset()
