"""The coordinator's log when a sync of its ledger fails: which appends fail, and when."""

from __future__ import annotations

import asyncio
import errno
from pathlib import Path

import pytest

from magnetar.broker.commit_rounds import report
from magnetar.broker.transactions.log import TransactionLog
from magnetar.storage import LedgerFencedError, ManagedLedger, StorageError
from magnetar.storage.files import FaultyFileLayer
from magnetar.storage.health import storage_health


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
