"""The transaction buffer of one persistent topic (Pulsar's ``TopicTransactionBuffer``).

A message sent in a transaction is appended to the topic's ledger at once (with the transaction id
in its metadata) but is not readable while the transaction is open: the topic's max-read position
stops just before the first entry of the oldest transaction still open, so later plain messages
wait for it too (Pulsar's ``maxReadPosition``). Ending a transaction appends a TXN_COMMIT or
TXN_ABORT marker entry (PulsarMarkers.proto) and moves the max-read position on. Markers and the
messages of aborted transactions are never delivered: :meth:`TransactionBuffer.hidden` is the one
rule every reader asks (dispatchers, readers, peek, compaction). What was aborted is rebuilt on
load by replaying the ledger's metadata (:func:`scan_ledger`), the markers being in the ledger.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from magnetar.broker.transactions import TxnId
from magnetar.protocol.enums import MarkerType
from magnetar.protocol.framing import ProtocolError, encode_entry, parse_entry_metadata, split_entry
from magnetar.protocol.schema import MessageMetadata
from magnetar.storage import StorageError

#: entries read at once when the ledger is replayed on load
_SCAN_CHUNK = 1000


class EntrySource(Protocol):
    """The part of a ledger :func:`scan_ledger` reads (a :class:`~magnetar.storage.ManagedLedger`)."""

    @property
    def first_entry_id(self) -> int:
        """Oldest entry stored."""
        ...

    @property
    def last_entry_id(self) -> int:
        """Newest entry stored."""
        ...

    def read_intact(self, first: int, last: int) -> list:
        """Entries first..last, skipping damaged ones."""
        ...


@dataclass
class BufferState:
    """What a topic's ledger says of its transactions (rebuilt by :func:`scan_ledger` on load)."""

    #: transactions with entries and no marker yet: their entry ids in order
    ongoing: dict[TxnId, list[int]] = field(default_factory=dict)
    #: transactions whose marker is in the ledger: True committed, False aborted
    ended: dict[TxnId, bool] = field(default_factory=dict)
    #: entries never delivered: markers and messages of aborted transactions
    hidden: set[int] = field(default_factory=set)


def marker_entry(txn: TxnId, commit: bool) -> bytes:
    """The bytes of a TXN_COMMIT / TXN_ABORT marker entry of ``txn`` (no payload)."""
    meta = MessageMetadata(
        producer_name="__txn_marker",
        sequence_id=0,
        publish_time=int(time.time() * 1000),
        marker_type=MarkerType.TXN_COMMIT if commit else MarkerType.TXN_ABORT,
        txnid_most_bits=txn[0],
        txnid_least_bits=txn[1],
    )
    return encode_entry(meta, b"")


def with_txn_id(entry: bytes, txn: TxnId) -> bytes:
    """``entry`` with the transaction id in its metadata (a SEND carries it in the command only: the
    Go client never writes it in the metadata); unchanged when it is there already."""
    meta_bytes, payload = split_entry(entry)
    try:
        meta = MessageMetadata.FromString(meta_bytes)
    except Exception as exc:
        raise ProtocolError(f"undecodable message metadata: {exc}") from None
    if meta.HasField("txnid_most_bits") and (meta.txnid_most_bits, meta.txnid_least_bits) == txn:
        return entry
    meta.txnid_most_bits, meta.txnid_least_bits = txn
    return encode_entry(meta, bytes(payload))


#: ended transactions a snapshot keeps (the newest): what refuses a late message of an ended one
_SNAPSHOT_ENDED = 10_000


def state_from_snapshot(data: dict[str, Any]) -> tuple[BufferState, int]:
    """A stored snapshot (:meth:`TransactionBuffer.snapshot`) and the last entry it covers (the
    caller checks it is of the same ledger)."""
    state = BufferState(
        {(int(m), int(least)): [int(e) for e in ids] for m, least, ids in data.get("ongoing", [])},
        {(int(m), int(least)): bool(c) for m, least, c in data.get("ended", [])},
        {int(e) for e in data.get("hidden", [])},
    )
    return state, int(data.get("position", -1))


def scan_ledger(ledger: EntrySource, start: int | None = None, state: BufferState | None = None) -> BufferState:
    """Replay a ledger's metadata from ``start`` (in a load thread) onto ``state`` (a snapshot's, or
    nothing): transactions open, committed and aborted."""
    state = state if state is not None else BufferState()
    first = ledger.first_entry_id if start is None else max(start, ledger.first_entry_id)
    last = ledger.last_entry_id
    for chunk in range(first, last + 1, _SCAN_CHUNK):
        for entry in ledger.read_intact(chunk, min(last, chunk + _SCAN_CHUNK - 1)):
            try:
                meta = parse_entry_metadata(entry.data)
            except ProtocolError:
                continue
            if not meta.HasField("txnid_most_bits"):
                continue
            _replay(state, (meta.txnid_most_bits, meta.txnid_least_bits), meta.marker_type, entry.entry_id)
    return state


def _replay(state: BufferState, txn: TxnId, marker: int, entry_id: int) -> None:
    if marker in (MarkerType.TXN_COMMIT, MarkerType.TXN_ABORT):
        state.hidden.add(entry_id)
        entries = state.ongoing.pop(txn, [])
        committed = marker == MarkerType.TXN_COMMIT
        state.ended[txn] = committed
        if not committed:
            state.hidden.update(entries)
    elif txn in state.ended:
        if not state.ended[txn]:
            state.hidden.add(entry_id)  # appended after its abort (never answered): hidden too
    else:
        state.ongoing.setdefault(txn, []).append(entry_id)


class BufferedTopic(Protocol):
    """What the buffer needs of its topic (a :class:`~magnetar.broker.topics.persistent.PersistentTopic`)."""

    name: str

    def append_marker(self, entry: bytes, durable: Callable[[], None], failed: Callable[[str], None]) -> int:
        """Append a marker entry no producer sent; ``durable`` is called once it is durable, ``failed``
        (with why) if its sync failed."""
        ...

    def txn_visibility_changed(self) -> None:
        """The max-read position may have moved: recompute what is readable and dispatch."""
        ...


class TransactionBuffer:
    """The transactions of one topic: open ones (which bound the max-read position), ended ones
    (whose markers are written) and the entries nobody may read."""

    def __init__(self, topic: BufferedTopic, state: BufferState | None = None) -> None:
        self.topic = topic
        state = state if state is not None else BufferState()
        #: open transactions in the order of their first entry, with their entry ids
        self.ongoing: dict[TxnId, list[int]] = state.ongoing
        #: ended transactions whose marker this topic has: True committed, False aborted
        self.ended: dict[TxnId, bool] = state.ended
        self.hidden_ids: set[int] = state.hidden
        #: transactions whose marker is appended and not yet durable: callbacks waiting for it (each
        #: called with None once it is durable, or with why it could not be written)
        self._ending: dict[TxnId, list[Callable[[str | None], None]]] = {}
        self.committed_count = sum(1 for c in self.ended.values() if c)
        self.aborted_count = len(self.ended) - self.committed_count

    # -- the visibility rule -----------------------------------------------------------------
    def max_read(self, durable_id: int) -> int:
        """The last entry readers may see: ``durable_id``, or just before the oldest open transaction."""
        for entries in self.ongoing.values():
            if entries:
                return min(durable_id, entries[0] - 1)
        return durable_id

    def hidden(self, entry_id: int) -> bool:
        """Whether an entry at or below the max-read position is never delivered (a marker, or a
        message of an aborted transaction)."""
        return entry_id in self.hidden_ids

    def visible(self, entries: Iterable) -> list:
        """The entries of ``entries`` a reader may receive."""
        hidden = self.hidden_ids
        return [e for e in entries if e.entry_id not in hidden]

    # -- the publish path --------------------------------------------------------------------
    def check_open(self, txn: TxnId) -> str | None:
        """Why a message of ``txn`` may not be appended (its marker is written), or None."""
        if txn in self.ended or txn in self._ending:
            state = "committed" if self.ended.get(txn, False) else "ended"
            return f"Transaction {txn[0]}:{txn[1]} has been {state} on {self.topic.name}"
        return None

    def appended(self, txn: TxnId, entry_id: int) -> None:
        """A message of ``txn`` was appended as ``entry_id``."""
        self.ongoing.setdefault(txn, []).append(entry_id)

    # -- ending ------------------------------------------------------------------------------
    def end(self, txn: TxnId, commit: bool, done: Callable[[str | None], None]) -> None:
        """End ``txn`` on this topic: append its marker; ``done(None)`` is called once it is durable (at
        once when the marker is already there: ending is idempotent, as after a recovery), ``done(why)``
        when it could not be written (the end is tried again with the next END_TXN)."""
        if txn in self.ended:
            done(None)
            return
        waiting = self._ending.get(txn)
        if waiting is not None:
            waiting.append(done)
            return
        self._ending[txn] = [done]
        try:
            entry_id = self.topic.append_marker(
                marker_entry(txn, commit), lambda: self._marker_durable(txn, commit), lambda why: self._marker_failed(txn, why)
            )
        except StorageError as exc:  # not appended (a fenced ledger, no space): the next END_TXN tries again
            self._marker_failed(txn, str(exc))
            return
        self.hidden_ids.add(entry_id)

    def _marker_failed(self, txn: TxnId, why: str) -> None:
        for done in self._ending.pop(txn, []):
            done(why)

    def _marker_durable(self, txn: TxnId, commit: bool) -> None:
        entries = self.ongoing.pop(txn, [])
        self.ended[txn] = commit
        if commit:
            self.committed_count += 1
        else:
            self.aborted_count += 1
            self.hidden_ids.update(entries)
        self.topic.txn_visibility_changed()
        for done in self._ending.pop(txn, []):
            done(None)

    def snapshot(self, ledger_id: int, position: int) -> dict[str, Any]:
        """What ledger ``ledger_id`` says of transactions up to ``position`` (durable), to store: a load
        then replays only the entries after it."""
        ended = list(self.ended.items())[-_SNAPSHOT_ENDED:]
        ongoing = [(t, [e for e in ids if e <= position]) for t, ids in self.ongoing.items()]
        return {
            "ledger_id": ledger_id,
            "position": position,
            "ongoing": [[t[0], t[1], ids] for t, ids in ongoing if ids],
            "ended": [[t[0], t[1], committed] for t, committed in ended],
            "hidden": sorted(e for e in self.hidden_ids if e <= position),
        }

    def forget_from(self, next_entry_id: int) -> None:
        """A failed sync cut the entries from ``next_entry_id`` on (the ledger recovered): their ids
        are given to the next appends, which must not inherit a lost marker's or message's place."""
        self.hidden_ids = {e for e in self.hidden_ids if e < next_entry_id}
        for txn, entries in self.ongoing.items():
            if entries and entries[-1] >= next_entry_id:
                self.ongoing[txn] = [e for e in entries if e < next_entry_id]

    def forget_before(self, first_entry_id: int) -> None:
        """Entries below ``first_entry_id`` were trimmed: stop tracking them."""
        if self.hidden_ids and min(self.hidden_ids) < first_entry_id:
            self.hidden_ids = {e for e in self.hidden_ids if e >= first_entry_id}

    def stats(self) -> dict:
        """Pulsar's TransactionBufferStats fields."""
        return {
            "state": "Ready",
            "maxReadPosition": None,
            "lastSnapshotTimestamps": 0,
            "ongoingTxnSize": len(self.ongoing),
            "recoverStartTime": 0,
            "recoverEndTime": 0,
            "abortedTxnCount": self.aborted_count,
            "committedTxnCount": self.committed_count,
            "totalAbortedTransactions": self.aborted_count,
        }
