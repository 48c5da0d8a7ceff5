"""The durable log of one transaction coordinator (Pulsar's ``MLTransactionLogImpl``).

The log is a ledger of :mod:`magnetar.storage` like a topic's (Pulsar keeps it in
``__transaction_log_<tc>``): records are appended on the loop and made durable by the broker's
group committer with everything else, so group commit, fencing and repair cover it. Each record is
one JSON object: a transaction opened (``new``), partitions or subscriptions added, a state
change (``state``: COMMITTING, COMMITTED, ABORTING, ABORTED), a block of ids reserved
(``reserve``), or a checkpoint. Replaying the records in order rebuilds every transaction's
metadata (:func:`replay`).

After a failed sync the ledger is fenced; the next record recovers it (:meth:`ManagedLedger.recover_later
<magnetar.storage.ManagedLedger.recover_later>`: the wait for the syncs begun and the cut on the read
thread, the ledger reopened on the loop) and waits, with every record that comes meanwhile, in order,
until the ledger takes appends again (or fails with the recovery's StorageError).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from magnetar.storage import ManagedLedger, StorageError

log = logging.getLogger("magnetar.broker.transactions.log")

#: entries read at once when the log is replayed
_REPLAY_CHUNK = 1000


class Committer(Protocol):
    """The broker's group committer, as the log uses it."""

    def appended(self, topic: Any) -> None:
        """``topic`` appended at least one entry that is not durable yet."""
        ...


def log_name(tc_id: int) -> str:
    """The name the log of coordinator ``tc_id`` is stored under, as in Pulsar."""
    return f"persistent://pulsar/system/__transaction_log_{tc_id}"


class TransactionLog:
    """Appends records to a coordinator's ledger; each append completes once it is durable.

    It is what the group committer calls a committed topic (``name``, ``closed``, ``ledger``,
    ``on_durable``, ``on_sync_failed``).
    """

    def __init__(self, tc_id: int, ledger: ManagedLedger, committer: Committer) -> None:
        self.tc_id = tc_id
        self.name = log_name(tc_id)
        self.ledger = ledger
        self.closed = False
        self._committer = committer
        self._waiting: deque[tuple[int, asyncio.Future[int]]] = deque()
        #: while the fenced ledger is recovered: the records that came meanwhile (and their futures,
        #: None for a lazy one), appended in order once it takes appends again
        self._held: list[tuple[dict[str, Any], asyncio.Future[int] | None]] | None = None

    def append(self, record: dict[str, Any]) -> asyncio.Future[int]:
        """Append one record; the future gives its entry id once durable (or the storage error)."""
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        if self.ledger.fenced or self._held is not None:
            self._hold(record, future)
        else:
            self._append(record, future)
        return future

    def append_lazily(self, record: dict[str, Any]) -> None:
        """Append one record nobody waits for: it is written and synced with the next record that
        is waited for (a log is synced in order), or when the log closes; a crash before may lose
        it, which the caller allows (coordinator.py says which records and why)."""
        if self.ledger.fenced or self._held is not None:
            self._hold(record, None)
        else:
            self.ledger.append(json.dumps(record, separators=(",", ":")).encode())

    def _append(self, record: dict[str, Any], future: asyncio.Future[int] | None) -> None:
        entry_id = self.ledger.append(json.dumps(record, separators=(",", ":")).encode())
        if future is not None:
            self._waiting.append((entry_id, future))
            self._committer.appended(self)

    def _hold(self, record: dict[str, Any], future: asyncio.Future[int] | None) -> None:
        """Keep a record for after the recovery of the fenced ledger (started by the first one held)."""
        if self._held is not None:
            self._held.append((record, future))
            return
        self._held = [(record, future)]
        try:
            self.ledger.recover_later(self._recovered)  # at once without a read thread
        except StorageError as exc:  # closed
            self._recovered(exc)

    def _recovered(self, outcome: int | BaseException) -> None:
        """(the loop) The recovery ended: the held records are appended in order, or fail with its error."""
        held, self._held = self._held or [], None
        if isinstance(outcome, BaseException):
            error = outcome if isinstance(outcome, StorageError) else StorageError(str(outcome))
            for _, future in held:
                if future is None:
                    log.warning("transaction log %s: a record was not written: %s", self.name, error)
                elif not future.done():
                    future.set_exception(error)
            return
        self._cut(outcome)
        for record, future in held:
            try:
                self._append(record, future)
            except StorageError as exc:  # closed, or fenced again
                if future is not None and not future.done():
                    future.set_exception(exc)

    def _cut(self, kept: int) -> None:
        """The ledger was recovered before the failure's report: the appends it cut fail now (the report,
        once it comes, finds the ledger recovered and is passed over: commit_rounds.report)."""
        cut = [future for entry_id, future in self._waiting if entry_id > kept]
        self._waiting = deque(item for item in self._waiting if item[0] <= kept)
        for future in cut:
            if not future.done():
                future.set_exception(StorageError(f"transaction log {self.name}: a sync failed, the record was not kept"))

    def on_durable(self, last_durable_id: int) -> None:
        """Entries up to ``last_durable_id`` are durable: complete their appends."""
        waiting = self._waiting
        while waiting and waiting[0][0] <= last_durable_id:
            entry_id, future = waiting.popleft()
            if not future.done():
                future.set_result(entry_id)

    def on_sync_failed(self, error: BaseException) -> None:
        """A sync failed (the ledger fenced itself): every append still waiting fails."""
        while self._waiting:
            _, future = self._waiting.popleft()
            if not future.done():
                future.set_exception(StorageError(f"transaction log {self.name}: {error}"))

    def close(self) -> None:
        """Close the ledger (after the committer drained)."""
        self.closed = True
        self.ledger.close()


def read_records(ledger: ManagedLedger) -> Iterator[dict[str, Any]]:
    """Every record of a log in order (in a load thread); undecodable ones are skipped."""
    first, last = ledger.first_entry_id, ledger.last_entry_id
    for chunk in range(first, last + 1, _REPLAY_CHUNK):
        for entry in ledger.read_intact(chunk, min(last, chunk + _REPLAY_CHUNK - 1)):
            try:
                record = json.loads(bytes(entry.data))
            except ValueError:
                log.error("%s: entry %d is not a transaction log record: skipped", ledger, entry.entry_id)
                continue
            if isinstance(record, dict):
                yield record


#: how far a state is along (a replayed record never moves a transaction back)
_RANK = {"OPEN": 0, "COMMITTING": 1, "ABORTING": 1, "COMMITTED": 2, "ABORTED": 2}


def replay(records: Iterable[dict[str, Any]]) -> tuple[dict[tuple[int, int], dict[str, Any]], int]:
    """The transactions a log's records describe, by id, each as its newest metadata
    (``state``, ``timeout_ms``, ``opened_ms``, ``partitions``, ``subscriptions``), and the highest
    sequence used (-1 when none).

    The last checkpoint gives the starting state; every other record still in the log (those before
    the checkpoint that a trim kept, and those after it) is applied onto it, idempotently: partitions
    and subscriptions are sets, and a state never moves back. The highest sequence counts the ids
    ``reserve`` records made durable (NEW_TXN's own record is not waited for). A record after the
    checkpoint of a transaction whose ``new`` record was lost (a failed sync) still counts: the
    transaction is taken as opened then (a restart aborts it, or commits it from COMMITTING).
    """
    records = list(records)
    txns: dict[tuple[int, int], dict[str, Any]] = {}
    highest = -1
    at = next((i for i in range(len(records) - 1, -1, -1) if records[i].get("op") == "checkpoint"), None)
    if at is not None:
        checkpoint = records[at]
        highest = int(checkpoint.get("next_sequence", 0)) - 1
        for meta in checkpoint.get("txns", []):
            txns[(int(meta["txn"][0]), int(meta["txn"][1]))] = {**meta, "partitions": list(meta["partitions"])}
        for most, least, state in checkpoint.get("ended", []):
            txns[(int(most), int(least))] = {"state": state, "partitions": [], "subscriptions": []}
    for i, record in enumerate(records):
        op = record.get("op")
        if op == "reserve":
            highest = max(highest, int(record.get("upto", -1)))
            continue
        txn_field = record.get("txn")
        if op == "checkpoint" or not isinstance(txn_field, list) or len(txn_field) != 2:
            continue
        txn = (int(txn_field[0]), int(txn_field[1]))
        highest = max(highest, txn[1]) if op == "new" else highest
        _apply(txns, txn, record, at is None or i > at)
    return txns, highest


def _apply(txns: dict[tuple[int, int], dict[str, Any]], txn: tuple[int, int], record: dict[str, Any],
           recent: bool) -> None:
    op = record.get("op")
    meta = txns.get(txn)
    if meta is None and recent and op in ("partitions", "subscriptions", "state"):
        meta = txns[txn] = {"state": "OPEN", "timeout_ms": 0, "opened_ms": 0, "partitions": [], "subscriptions": []}
    if op == "new":
        if meta is None:
            txns[txn] = {
                "state": "OPEN",
                "timeout_ms": int(record.get("timeout_ms", 0)),
                "opened_ms": int(record.get("opened_ms", 0)),
                "partitions": [],
                "subscriptions": [],
            }
    elif meta is None:
        return
    elif op == "partitions":
        meta["partitions"].extend(p for p in record.get("partitions", []) if p not in meta["partitions"])
    elif op == "subscriptions":
        for pair in record.get("subscriptions", []):
            if list(pair) not in meta["subscriptions"]:
                meta["subscriptions"].append(list(pair))
    elif op == "state":
        state = str(record.get("state"))
        if _RANK.get(state, -1) > _RANK.get(meta["state"], -1):
            meta["state"] = state
            meta["timed_out"] = bool(record.get("timed_out", False)) or meta.get("timed_out", False)
