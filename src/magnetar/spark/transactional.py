"""Exactly-once writes through transactions (``pulsar.producer.transactional=true``).

Spark's DataSource V2 commit protocol, with Pulsar transactions as the unit of visibility:

- each task (attempt) opens a transaction, sends its rows in it and returns the transaction id in
  its commit message, without committing; a task that fails aborts its transaction, so a failed or
  retried attempt's rows are never visible. A streaming task also records its transaction as open
  (``<checkpointLocation>/pulsar-transactions/open/<batchId>/<most>-<least>``) before it sends: the
  driver aborts the recorded ones no commit message names when it commits or aborts the
  micro-batch, so a task whose process died holds the topic's later messages until then, not until
  its transaction times out;
- the driver commits every transaction of a job or micro-batch in ``commit()`` and aborts them in
  ``abort()``;
- a micro-batch is committed once, even when a restarted query runs it again: the driver records in
  the checkpoint directory (``<checkpointLocation>/pulsar-transactions/<batchId>.json``) the
  transactions it is about to commit, then that they are committed. A replayed micro-batch whose
  record says committed has its new transactions aborted; one whose record says committing (the
  driver died in the middle) has the recorded transactions committed (the ones already committed
  are no longer known to the coordinator) and the new ones aborted.

The record is written with plain file I/O on the driver (not on an event loop), atomically (a
temporary file renamed over the record).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from magnetar.spark.options import ClientSettings, PulsarOptionError

log = logging.getLogger("magnetar.spark")

#: default transaction timeout of a task (the driver must commit within it)
DEFAULT_TIMEOUT_MS = 600_000
TxnId = tuple[int, int]


@dataclass
class TxnPlan:
    """How a write uses transactions (picklable)."""

    timeout_ms: int
    #: directory of the committed micro-batch records (streaming writes)
    record_dir: str | None


def plan_transactions(
    producer: dict[str, Any], settings: ClientSettings, checkpoint: str | None, streaming: bool
) -> tuple[dict[str, Any], ClientSettings, TxnPlan | None]:
    """Take the transaction options out of the producer options: (producer options, client
    settings with transactions enabled when asked, the transaction plan or None)."""
    producer = dict(producer)
    enabled = producer.pop("transactional", False)
    timeout_ms = producer.pop("transaction_timeout_ms", DEFAULT_TIMEOUT_MS)
    if not enabled:
        return producer, settings, None
    record_dir = None
    if streaming:
        if not checkpoint:
            raise PulsarOptionError(
                "pulsar.producer.transactional=true on a streaming write needs the checkpointLocation option"
                " (committed micro-batches are recorded there)"
            )
        parts = urlsplit(checkpoint)
        if parts.scheme not in ("", "file"):
            raise PulsarOptionError(
                f"pulsar.producer.transactional=true needs a local checkpointLocation, not {checkpoint!r}"
            )
        record_dir = str(Path(parts.path if parts.scheme else checkpoint) / "pulsar-transactions")
    settings = dataclasses.replace(settings, client={**settings.client, "enable_transaction": True})
    return producer, settings, TxnPlan(int(timeout_ms), record_dir)


def open_transaction(client: Any, plan: TxnPlan | None, batch_id: int | None = None) -> Any:
    """A task's transaction (a sync Transaction), or None without transactions; recorded as open
    for micro-batch ``batch_id`` of a streaming write (see the module's note)."""
    if plan is None:
        return None
    txn = client.new_transaction(timeout_ms=plan.timeout_ms)
    if plan.record_dir is not None and batch_id is not None:
        CommitRecords(plan.record_dir).opened(batch_id, txn.id())
    return txn


async def register_partitions(txn: Any, partitions: list[str]) -> None:
    """Register a topic's partitions in a task's transaction (before sending batches to them)."""
    for partition in partitions:
        await txn.core.register_partition(partition)


def abort_quietly(txn: Any) -> None:
    """A failed task's transaction: aborted, whatever happens (the coordinator times it out else)."""
    if txn is None:
        return
    try:
        txn.abort()
    except Exception as exc:  # noqa: BLE001 - the task's own error is the one to report
        log.warning("pulsar sink: aborting transaction %s of a failed task failed: %s", txn.id(), exc)


def end_transactions(settings: ClientSettings, txns: list[TxnId], commit: bool, known_only: bool = False) -> None:
    """(driver) Commit or abort transactions by id; ``known_only``: a transaction the coordinator
    no longer knows (committed before) is not an error."""
    if not txns:
        return
    # the client, when a query runs, not when the module loads: 200-350 ms CPU (python -X importtime)
    from magnetar.client import TransactionNotFound

    client = settings.make()
    try:
        tc = client.async_client.tc_client

        async def end() -> None:
            for txn in txns:
                try:
                    await tc.end_txn((int(txn[0]), int(txn[1])), commit)
                except TransactionNotFound:
                    if not known_only:
                        raise

        asyncio.run_coroutine_threadsafe(end(), client.loop).result(client.async_client.operation_timeout * 2 + 10)
    finally:
        client.close()


class CommitRecords:
    """The driver's record of micro-batches: ``<dir>/<batchId>.json`` = {"state", "txns"}."""

    def __init__(self, directory: str) -> None:
        self.dir = Path(directory)

    def read(self, batch_id: int) -> dict[str, Any] | None:
        """The record of ``batch_id`` (None: never committed)."""
        try:
            return json.loads((self.dir / f"{batch_id}.json").read_text())
        except FileNotFoundError:
            return None

    def opened(self, batch_id: int, txn: TxnId) -> None:
        """(a task, before it sends) Record ``txn`` as a transaction of micro-batch ``batch_id``."""
        directory = self.dir / "open" / str(batch_id)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{txn[0]}-{txn[1]}"
        with open(path, "w") as f:
            f.flush()
            os.fsync(f.fileno())

    def opened_txns(self, batch_id: int) -> list[TxnId]:
        """The transactions tasks of micro-batch ``batch_id`` recorded as open."""
        out = []
        for path in sorted((self.dir / "open" / str(batch_id)).glob("*-*")):
            most, _, least = path.name.partition("-")
            if most.isdigit() and least.isdigit():
                out.append((int(most), int(least)))
        return out

    def forget_opened(self, batch_id: int) -> None:
        """Drop the open records of micro-batch ``batch_id`` (every one of them is ended)."""
        directory = self.dir / "open" / str(batch_id)
        for path in directory.glob("*"):
            with contextlib.suppress(OSError):
                path.unlink()
        with contextlib.suppress(OSError):
            directory.rmdir()

    def write(self, batch_id: int, state: str, txns: list[TxnId]) -> None:
        """Record ``batch_id`` durably (fsynced, renamed into place)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.dir / f".{batch_id}.json.tmp"
        with open(tmp, "w") as f:
            json.dump({"state": state, "txns": [list(t) for t in txns]}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.dir / f"{batch_id}.json")
        with contextlib.suppress(OSError):
            fd = os.open(self.dir, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def txns_of(messages: list[Any]) -> list[TxnId]:
    """The transactions of the tasks' commit messages."""
    return [m.txn for m in messages if getattr(m, "txn", None) is not None]


def commit_micro_batch(settings: ClientSettings, plan: TxnPlan, batch_id: int, messages: list[Any]) -> None:
    """(driver) Commit the transactions of micro-batch ``batch_id`` once, whatever ran before."""
    assert plan.record_dir is not None
    records = CommitRecords(plan.record_dir)
    new = txns_of(messages)
    record = records.read(batch_id)
    if record is not None and record["state"] == "committed":
        log.info("pulsar sink: micro-batch %d was committed before; its %d new transactions are aborted", batch_id, len(new))
        end_transactions(settings, new, commit=False)
        abort_dead_attempts(settings, plan, batch_id, [tuple(t) for t in record["txns"]])
        return
    if record is not None:  # the driver died while committing it: finish what it recorded
        end_transactions(settings, [tuple(t) for t in record["txns"]], commit=True, known_only=True)
        end_transactions(settings, new, commit=False)
        records.write(batch_id, "committed", [tuple(t) for t in record["txns"]])
        abort_dead_attempts(settings, plan, batch_id, [tuple(t) for t in record["txns"]])
        return
    records.write(batch_id, "committing", new)
    end_transactions(settings, new, commit=True)
    records.write(batch_id, "committed", new)
    abort_dead_attempts(settings, plan, batch_id, new)


def abort_micro_batch(settings: ClientSettings, plan: TxnPlan, batch_id: int, messages: list[Any]) -> None:
    """(driver) Spark aborts micro-batch ``batch_id``: every transaction of its tasks is aborted, those
    of the commit messages and those recorded as open."""
    end_transactions(settings, txns_of(messages), commit=False)
    abort_dead_attempts(settings, plan, batch_id, [])


def abort_dead_attempts(settings: ClientSettings, plan: TxnPlan, batch_id: int, kept: list[TxnId]) -> None:
    """(driver) Abort the transactions tasks of micro-batch ``batch_id`` recorded as open that are not
    in ``kept`` (attempts that failed, or whose process died before any commit message), then drop
    the records. Ones already ended (an attempt that aborted its own) are no error."""
    if plan.record_dir is None:
        return
    records = CommitRecords(plan.record_dir)
    keep = {tuple(t) for t in kept}
    dead = [t for t in records.opened_txns(batch_id) if t not in keep]
    if dead:
        log.info("pulsar sink: micro-batch %d: aborting %d transactions of attempts that did not finish", batch_id, len(dead))
        end_transactions(settings, dead, commit=False, known_only=True)
    records.forget_opened(batch_id)


__all__ = [
    "DEFAULT_TIMEOUT_MS", "CommitRecords", "TxnPlan", "abort_dead_attempts", "abort_micro_batch", "abort_quietly", "commit_micro_batch",
    "end_transactions",
    "open_transaction", "plan_transactions", "register_partitions", "txns_of",
]
