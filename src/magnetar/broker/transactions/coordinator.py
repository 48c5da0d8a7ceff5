"""One transaction coordinator (Pulsar's ``TransactionMetadataStore`` with its log).

A coordinator owns the transactions whose most significant bits are its id: it hands out the
ids (the least significant bits count up), keeps each one's metadata (timeout, partitions produced
to, subscriptions acknowledged on) and state, and writes every change to its durable log. States:
OPEN -> COMMITTING -> COMMITTED and OPEN -> ABORTING -> ABORTED; an ended transaction is forgotten
(a second END_TXN gets TransactionNotFound, as in Pulsar).

What must be durable before an answer, and what need not (Pulsar writes every record to BookKeeper
before it answers; two of them carry nothing a crash could lose here):

- ADD_PARTITION_TO_TXN / ADD_SUBSCRIPTION_TO_TXN and COMMITTING / ABORTING: durable first. A
  restart must know every partition holding the transaction's messages (to end it there), and a
  marker may only be written once COMMITTING is durable (else a crash would abort a transaction
  whose commit marker some partitions have).
- NEW_TXN: its record is appended lazily (``append_lazily``: synced with the log's next record
  that is waited for, no sync round of its own). A restart aborts every transaction that was open
  anyway; what must not be lost is that the id was handed out, and that is made durable ahead, a
  block of ids at a time (a ``reserve`` record): ids are never given twice. The transaction's next
  durable record makes it durable too (a log is synced in order; if a failed sync lost it, the
  replay takes the later records as the transaction's).
- COMMITTED / ABORTED: appended lazily once every partition and subscription ended the
  transaction: a restart that does not find it ends the transaction again from COMMITTING /
  ABORTING, which is idempotent (markers already there are kept).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from magnetar.broker.errors import BrokerError
from magnetar.broker.transactions import TxnId
from magnetar.broker.transactions.log import TransactionLog
from magnetar.protocol.enums import ServerError

OPEN = "OPEN"
COMMITTING = "COMMITTING"
COMMITTED = "COMMITTED"
ABORTING = "ABORTING"
ABORTED = "ABORTED"
#: ended transactions remembered (for pending acknowledgements recovered after a restart)
_ENDED_KEPT = 100_000
#: records between two checkpoints of the log, and the ended transactions a checkpoint keeps
_CHECKPOINT_EVERY = 10_000
_CHECKPOINT_ENDED = 10_000
#: transaction ids reserved by one durable record (NEW_TXN then answers without waiting for the disk)
_RESERVE_BLOCK = 1000

log = logging.getLogger("magnetar.broker.transactions.coordinator")


def txn_text(txn: TxnId) -> str:
    """A transaction id as Pulsar prints it: ``(most,least)``."""
    return f"({txn[0]},{txn[1]})"


def not_found(txn: TxnId) -> BrokerError:
    """TransactionNotFound, worded as Pulsar's TransactionNotFoundException."""
    return BrokerError(ServerError.TransactionNotFound, f"The transaction with this txdID `{txn_text(txn)}`not found ")


@dataclass
class TxnMeta:
    """One transaction's metadata, as Pulsar's TxnMeta."""

    txn: TxnId
    timeout_ms: int
    opened_ms: int
    state: str = OPEN
    #: topics (partitions) the transaction produced to, in the order they were added
    partitions: list[str] = field(default_factory=list)
    #: (topic, subscription) pairs it acknowledged on
    subscriptions: list[tuple[str, str]] = field(default_factory=list)
    timed_out: bool = False

    @property
    def deadline_ms(self) -> int:
        """When the coordinator aborts it if it is still open."""
        return self.opened_ms + self.timeout_ms

    def to_admin(self, owner: str) -> dict[str, Any]:
        """Pulsar's TransactionMetadata (admin ``transactionMetadata``)."""
        acked: dict[str, dict[str, dict]] = {}
        for topic, sub in self.subscriptions:
            acked.setdefault(topic, {})[sub] = {"cumulativeAckPosition": None}
        return {
            "txnId": txn_text(self.txn),
            "status": self.state,
            "openTimestamp": self.opened_ms,
            "timeoutAt": self.timeout_ms,
            "producedPartitions": {p: {"startPosition": None, "aborted": False} for p in self.partitions},
            "ackedPartitions": acked,
            "owner": owner,
        }


class TransactionCoordinator:
    """The transactions of coordinator ``tc_id`` and their durable log."""

    def __init__(self, tc_id: int, log: TransactionLog, next_sequence: int = 0) -> None:
        self.tc_id = tc_id
        self.log = log
        self.next_sequence = next_sequence
        #: transactions not yet ended (OPEN, COMMITTING, ABORTING)
        self.txns: dict[TxnId, TxnMeta] = {}
        #: the final state of ended transactions, newest last (bounded)
        self.ended: OrderedDict[TxnId, str] = OrderedDict()
        self.created_count = 0
        self.committed_count = 0
        self.aborted_count = 0
        self.timeout_count = 0
        self.append_count = 0
        #: a checkpoint is written after this many records (and the log trimmed before it)
        self.checkpoint_every = _CHECKPOINT_EVERY
        self._since_checkpoint = 0
        self._checkpointing = False
        #: entry ids of records appended whose effect is not applied in memory yet
        self._unapplied: set[int] = set()
        #: the highest id a durable ``reserve`` record covers (ids up to it may be handed out)
        self.reserved = next_sequence - 1
        self._reserving: asyncio.Future[None] | None = None

    def restore(self, replayed: dict[TxnId, dict[str, Any]]) -> None:
        """Take the transactions a replay of the log found (recovery)."""
        for txn, meta in replayed.items():
            if meta["state"] in (COMMITTED, ABORTED):
                self._remember(txn, meta["state"])
                continue
            self.txns[txn] = TxnMeta(
                txn,
                meta["timeout_ms"],
                meta["opened_ms"],
                meta["state"],
                list(meta["partitions"]),
                [(t, s) for t, s in meta["subscriptions"]],
                meta.get("timed_out", False),
            )

    def get(self, txn: TxnId) -> TxnMeta:
        """The metadata of a transaction not yet ended (TransactionNotFound otherwise)."""
        meta = self.txns.get(txn)
        if meta is None:
            raise not_found(txn)
        return meta

    def final_state(self, txn: TxnId) -> str | None:
        """COMMITTED or ABORTED for an ended transaction still remembered, the state of one not
        ended, None when unknown."""
        meta = self.txns.get(txn)
        return meta.state if meta is not None else self.ended.get(txn)

    async def new_txn(self, timeout_ms: int) -> TxnId:
        """Open a transaction: its id is durably reserved first (a block at a time), its record is
        appended and not waited for (see the module's note)."""
        while self.next_sequence > self.reserved:
            await self._reserve()
        txn = (self.tc_id, self.next_sequence)
        self.next_sequence += 1
        now = int(time.time() * 1000)
        self.txns[txn] = TxnMeta(txn, timeout_ms, now)
        self.created_count += 1
        self.append_count += 1
        self._since_checkpoint += 1
        self.log.append_lazily({"op": "new", "txn": list(txn), "timeout_ms": timeout_ms, "opened_ms": now})
        self._checkpoint_due()
        return txn

    async def _reserve(self) -> None:
        """Make the next block of ids durable (one reservation at a time; the others wait for it)."""
        if self._reserving is None:
            upto = max(self.reserved, self.next_sequence - 1) + _RESERVE_BLOCK
            self._reserving = asyncio.ensure_future(self._append({"op": "reserve", "upto": upto}))
            self._reserving.add_done_callback(lambda f: self._reserved(f, upto))
        await asyncio.shield(self._reserving)

    def _reserved(self, done: asyncio.Future[None], upto: int) -> None:
        self._reserving = None
        if not done.cancelled() and done.exception() is None:
            self.reserved = max(self.reserved, upto)

    def _open(self, txn: TxnId) -> TxnMeta:
        meta = self.get(txn)
        if meta.state != OPEN:
            raise invalid_status(txn, OPEN, meta.state)
        return meta

    async def add_partitions(self, txn: TxnId, partitions: list[str]) -> None:
        """Record the partitions a transaction produces to (durable before it answers)."""
        meta = self._open(txn)
        new = [p for p in dict.fromkeys(partitions) if p not in meta.partitions]
        if new:
            await self._append({"op": "partitions", "txn": list(txn), "partitions": new})
            meta.partitions.extend(p for p in new if p not in meta.partitions)

    async def add_subscriptions(self, txn: TxnId, subscriptions: list[tuple[str, str]]) -> None:
        """Record the subscriptions a transaction acknowledges on (durable before it answers)."""
        meta = self._open(txn)
        new = [s for s in dict.fromkeys(subscriptions) if s not in meta.subscriptions]
        if new:
            await self._append({"op": "subscriptions", "txn": list(txn), "subscriptions": [list(s) for s in new]})
            meta.subscriptions.extend(s for s in new if s not in meta.subscriptions)

    async def begin_end(self, txn: TxnId, commit: bool, timed_out: bool = False) -> TxnMeta:
        """OPEN -> COMMITTING / ABORTING, durable before it returns; a transaction already in that
        state (an END_TXN retried) is returned as it is; any other state is InvalidTxnStatus."""
        meta = self.get(txn)
        target = COMMITTING if commit else ABORTING
        if meta.state == target:
            return meta
        if meta.state != OPEN:
            raise invalid_status(txn, OPEN, meta.state)
        meta.state = target
        meta.timed_out = timed_out
        try:
            await self._append({"op": "state", "txn": list(txn), "state": target, "timed_out": timed_out})
        except BaseException:
            meta.state = OPEN
            raise
        if timed_out:
            self.timeout_count += 1
        return meta

    def finish_end(self, meta: TxnMeta) -> None:
        """COMMITTING -> COMMITTED / ABORTING -> ABORTED once every partition and subscription has
        ended it (its record not waited for: see the module's note); the transaction is forgotten."""
        final = COMMITTED if meta.state == COMMITTING else ABORTED
        self.append_count += 1
        self._since_checkpoint += 1
        self.log.append_lazily({"op": "state", "txn": list(meta.txn), "state": final})
        self._checkpoint_due()
        meta.state = final
        self.txns.pop(meta.txn, None)
        self._remember(meta.txn, final)
        if final == COMMITTED:
            self.committed_count += 1
        else:
            self.aborted_count += 1

    def expired(self, now_ms: int) -> list[TxnId]:
        """Open transactions past their timeout."""
        return [t for t, m in self.txns.items() if m.state == OPEN and m.deadline_ms <= now_ms]

    def _remember(self, txn: TxnId, state: str) -> None:
        self.ended[txn] = state
        while len(self.ended) > _ENDED_KEPT:
            self.ended.popitem(last=False)

    async def _append(self, record: dict[str, Any]) -> None:
        """Append a record and wait until it is durable. The caller applies its effect right after
        (no await in between), so a checkpoint never trims a record whose effect it lacks."""
        self.append_count += 1
        future = self.log.append(record)
        entry_id = self.log.ledger.last_entry_id
        self._unapplied.add(entry_id)
        try:
            await future
        except Exception as exc:
            raise BrokerError(ServerError.PersistenceError, f"transaction log {self.log.name}: {exc}") from None
        finally:
            self._unapplied.discard(entry_id)
        self._since_checkpoint += 1
        self._checkpoint_due()

    async def checkpoint(self) -> None:
        """Write every transaction not yet ended (and the newest ended ones) as one record, then trim
        the log's segments wholly before it: a restart replays from there."""
        self._checkpointing = True
        self._since_checkpoint = 0
        floor = min(self._unapplied, default=None)
        record = {
            "op": "checkpoint",
            # (ids up to the reserved one may have been handed out: a restart goes on after them)
            "next_sequence": max(self.next_sequence, self.reserved + 1),
            "txns": [meta_record(m) for m in self.txns.values()],
            "ended": [[t[0], t[1], state] for t, state in list(self.ended.items())[-_CHECKPOINT_ENDED:]],
        }
        try:
            entry_id = await self.log.append(record)
            self.log.ledger.trim_before(entry_id if floor is None else min(entry_id, floor))
        except Exception as exc:  # the next checkpoint tries again
            log.warning("transaction log %s: checkpoint failed: %s", self.log.name, exc)
        finally:
            self._checkpointing = False

    def _checkpoint_due(self) -> None:
        if self._since_checkpoint >= self.checkpoint_every and not self._checkpointing:
            self._checkpointing = True
            asyncio.get_running_loop().create_task(self.checkpoint())

    def stats(self) -> dict[str, Any]:
        """Pulsar's TransactionCoordinatorStats."""
        return {
            "state": "Ready",
            "leastSigBits": self.next_sequence - 1,
            "lowWaterMark": min((t[1] for t in self.txns), default=self.next_sequence - 1),
            "ongoingTxnSize": len(self.txns),
            "recoverStartTime": 0,
            "recoverEndTime": 0,
        }


def meta_record(meta: TxnMeta) -> dict[str, Any]:
    """A transaction's metadata as a checkpoint stores it (what :func:`~.log.replay` reads back)."""
    return {
        "txn": list(meta.txn),
        "state": meta.state,
        "timeout_ms": meta.timeout_ms,
        "opened_ms": meta.opened_ms,
        "partitions": list(meta.partitions),
        "subscriptions": [list(s) for s in meta.subscriptions],
        "timed_out": meta.timed_out,
    }


def invalid_status(txn: TxnId, expected: str, actual: str) -> BrokerError:
    """InvalidTxnStatus, worded as Pulsar's InvalidTxnStatusException."""
    return BrokerError(
        ServerError.InvalidTxnStatus,
        f"[{txn_text(txn)}] Expect Txn `{txn_text(txn)}` to be in {expected} status but it is in {actual} status",
    )
