"""Exactly-once writes through transactions (``pulsar.producer.transactional=true``).

Spark's DataSource V2 commit protocol, with Pulsar transactions as the unit of visibility:

- each task (attempt) opens a transaction, sends its rows in it and returns the transaction id in
  its commit message, without committing; a task that fails aborts its transaction (a task whose
  process dies leaves it to the coordinator's timeout), so a failed or retried attempt's rows are
  never visible;
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


def open_transaction(client: Any, plan: TxnPlan | None) -> Any:
    """A task's transaction (a sync Transaction), or None without transactions."""
    return None if plan is None else client.new_transaction(timeout_ms=plan.timeout_ms)


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
        return
    if record is not None:  # the driver died while committing it: finish what it recorded
        end_transactions(settings, [tuple(t) for t in record["txns"]], commit=True, known_only=True)
        end_transactions(settings, new, commit=False)
        records.write(batch_id, "committed", [tuple(t) for t in record["txns"]])
        return
    records.write(batch_id, "committing", new)
    end_transactions(settings, new, commit=True)
    records.write(batch_id, "committed", new)


__all__ = [
    "DEFAULT_TIMEOUT_MS", "CommitRecords", "TxnPlan", "abort_quietly", "commit_micro_batch", "end_transactions",
    "open_transaction", "plan_transactions", "register_partitions", "txns_of",
]
