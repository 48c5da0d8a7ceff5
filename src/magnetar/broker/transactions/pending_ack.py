"""The pending acknowledgements of one subscription (Pulsar's ``PendingAckHandle`` and
``MLPendingAckStore``).

An ACK inside a transaction does not touch the subscription's cursor: the message is held (not
redelivered, not dispatched again) until the transaction ends; a cumulative one holds every entry
up to its position; a commit turns it into a real acknowledgement, an abort releases it for
redelivery. A second transaction acknowledging the same
message (or the same batch index) gets TransactionConflict, as does one acknowledging a message the
subscription already acknowledged. The held acknowledgements of each transaction are stored (the
service writes :meth:`PendingAcks.record` before the ACK is answered) so a commit applies them after
a restart too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from magnetar.broker.errors import BrokerError
from magnetar.broker.transactions import TxnId
from magnetar.protocol.enums import ServerError


class AckCursor(Protocol):
    """The part of a managed cursor pending acks use."""

    mark_delete: int

    def is_acked(self, entry_id: int) -> bool:
        """Whether the whole entry is acknowledged."""
        ...

    def ack_many(self, entry_ids: list[int]) -> bool:
        """Acknowledge whole entries."""
        ...

    def ack_cumulative(self, entry_id: int) -> bool:
        """Acknowledge every entry up to ``entry_id``."""
        ...

    def ack_batch_indexes(self, entry_id: int, ack_set_longs: list[int], batch_size: int) -> bool:
        """Acknowledge some messages of a batch."""
        ...


class InFlight(Protocol):
    """A consumer of the subscription, as pending acks see it."""

    #: entries delivered to it and not acknowledged: entry id -> messages
    pending: dict[int, int]

    def restore(self, entry_id: int, messages: int) -> None:
        """Take an entry back into the in-flight set."""
        ...


class AckedSubscription(Protocol):
    """What pending acks need of their subscription (a persistent subscription)."""

    name: str
    cursor: AckCursor
    redelivery: set[int]
    consumers: list[InFlight]

    def schedule_dispatch(self) -> None:
        """Let the dispatcher try to make progress."""
        ...


@dataclass
class TxnAcks:
    """What one transaction acknowledged on one subscription."""

    #: whole entries
    entries: list[int] = field(default_factory=list)
    #: batch-index acknowledgements: entry id -> (ack set as sent, batch size)
    batches: dict[int, tuple[list[int], int]] = field(default_factory=dict)
    #: a cumulative acknowledgement up to this entry
    cumulative: int | None = None
    #: ... of which only some messages (the ack set as sent, batch size) when it is a batch
    cumulative_batch: tuple[list[int], int] | None = None
    #: entries the cumulative acknowledgement took from their consumer's in-flight set (given back
    #: by an abort); not stored: after a restart its consumers are gone
    taken: dict[int, tuple[InFlight, int]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The stored form."""
        return {"entries": self.entries, "batches": {str(k): v for k, v in self.batches.items()},
                "cumulative": self.cumulative, "cumulative_batch": self.cumulative_batch}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TxnAcks:
        """Read the stored form back."""
        batches = {int(k): (list(v[0]), int(v[1])) for k, v in (data.get("batches") or {}).items()}
        partial = data.get("cumulative_batch")
        return cls(list(data.get("entries") or []), batches, data.get("cumulative"),
                   (list(partial[0]), int(partial[1])) if partial else None)

    def cumulative_bound(self) -> int | None:
        """The last entry the cumulative acknowledgement covers whole (the one before a partly
        acknowledged batch), or None."""
        if self.cumulative is None:
            return None
        return self.cumulative - 1 if self.cumulative_batch else self.cumulative


def acked_indexes(ack_set: list[int], batch_size: int) -> set[int]:
    """The batch indexes an ACK's ack set acknowledges (its cleared bits, as Pulsar's BitSet)."""
    out = set()
    for index in range(batch_size):
        word = index // 64
        if word >= len(ack_set) or not (ack_set[word] >> (index % 64)) & 1:
            out.add(index)
    return out


class PendingAcks:
    """The acknowledgements held by open transactions on one subscription.

    An individual acknowledgement holds its entries; a cumulative one holds every entry up to its
    position (one transaction at a time, as Pulsar's): held entries are neither dispatched nor
    redelivered until the transaction ends."""

    def __init__(self, subscription: AckedSubscription, topic_name: str) -> None:
        self.subscription = subscription
        self.topic_name = topic_name
        self.by_txn: dict[TxnId, TxnAcks] = {}
        #: whole entries held by individual acknowledgements, and by which transaction
        self.held: dict[int, TxnId] = {}
        #: the transaction holding a cumulative acknowledgement, and the last entry it holds whole
        self.cumulative: tuple[TxnId, int] | None = None

    def holds(self, entry_id: int) -> bool:
        """Whether a transaction holds an acknowledgement of the whole entry (not to be dispatched)."""
        cumulative = self.cumulative
        return entry_id in self.held or (cumulative is not None and entry_id <= cumulative[1])

    def _conflict(self, txn: TxnId, what: str) -> BrokerError:
        return BrokerError(
            ServerError.TransactionConflict,
            f"[{self.topic_name}][{self.subscription.name}] Transaction:({txn[0]},{txn[1]}) try to ack message:{what}",
        )

    def add(self, txn: TxnId, cumulative: bool, acks: list[tuple[int, list[int] | None, int]]) -> list[int]:
        """Hold the acknowledgements of one ACK (entry id, ack set or None, batch size); returns the
        whole entries now held. TransactionConflict, and nothing held, when another transaction holds
        one of them or the subscription already acknowledged it."""
        if cumulative:
            entry_id, ack_set, batch_size = max(acks, key=lambda a: a[0])
            return self._add_cumulative(txn, entry_id, ack_set if ack_set else None, batch_size)
        cursor = self.subscription.cursor
        other_cumulative = self.cumulative if self.cumulative is not None and self.cumulative[0] != txn else None
        for entry_id, ack_set, batch_size in acks:
            owner = self.held.get(entry_id)
            if (owner is not None and owner != txn) or (other_cumulative is not None and entry_id <= other_cumulative[1]):
                raise self._conflict(txn, f"{entry_id} in pending ack status")
            if cursor.is_acked(entry_id):
                raise self._conflict(txn, f"{entry_id} but it has been acknowledged")
            if ack_set:
                indexes = acked_indexes(ack_set, batch_size)
                for other, held in self.by_txn.items():
                    batch = held.batches.get(entry_id)
                    if other != txn and batch is not None and indexes & acked_indexes(*batch):
                        raise self._conflict(txn, f"{entry_id} batch index in pending ack status")
        acks_of = self.by_txn.setdefault(txn, TxnAcks())
        whole = []
        for entry_id, ack_set, batch_size in acks:
            if ack_set:
                earlier = acks_of.batches.get(entry_id)
                if earlier is not None:  # the indexes this transaction acknowledged before stay acknowledged
                    ack_set = [x & y for x, y in zip(earlier[0], ack_set, strict=False)]
                acks_of.batches[entry_id] = (list(ack_set), batch_size)
            elif entry_id not in self.held:
                self.held[entry_id] = txn
                acks_of.entries.append(entry_id)
                whole.append(entry_id)
        return whole

    def _add_cumulative(self, txn: TxnId, position: int, ack_set: list[int] | None, batch_size: int) -> list[int]:
        """A cumulative acknowledgement up to ``position`` (some messages of it when ``ack_set``):
        every entry up to it not acknowledged yet is held; returns those delivered or waiting for
        redelivery (their consumers and the redelivery queue let go of them)."""
        sub = self.subscription
        cursor = sub.cursor
        for other, held in self.by_txn.items():
            if other != txn and (held.cumulative is not None or any(e <= position for e in held.entries)):
                raise self._conflict(txn, f"{position} in pending ack status")
        if position <= cursor.mark_delete:
            raise self._conflict(txn, f"{position} but it has been acknowledged")
        acks_of = self.by_txn.setdefault(txn, TxnAcks())
        if acks_of.cumulative is None or position >= acks_of.cumulative:
            acks_of.cumulative = position
            acks_of.cumulative_batch = (list(ack_set), batch_size) if ack_set else None
        bound = acks_of.cumulative_bound()
        assert bound is not None
        self.cumulative = (txn, bound)
        for consumer in sub.consumers:
            for entry_id, messages in consumer.pending.items():
                if entry_id <= bound and not cursor.is_acked(entry_id):
                    acks_of.taken[entry_id] = (consumer, messages)
        out = {e for e in sub.redelivery if e <= bound and not cursor.is_acked(e)}
        out.update(e for e in acks_of.taken if e <= bound)
        return sorted(out)

    def record(self, txn: TxnId) -> dict[str, Any] | None:
        """What to store for ``txn`` (None: nothing held)."""
        acks = self.by_txn.get(txn)
        return acks.to_json() if acks is not None else None

    def restore(self, txn: TxnId, data: dict[str, Any]) -> None:
        """Hold again what a stored record says (recovery)."""
        acks = TxnAcks.from_json(data)
        self.by_txn[txn] = acks
        for entry_id in acks.entries:
            self.held[entry_id] = txn
        bound = acks.cumulative_bound()
        if bound is not None:
            self.cumulative = (txn, bound)

    def end(self, txn: TxnId, commit: bool) -> None:
        """The transaction ended: its acknowledgements become real (commit) or are released and
        redelivered (abort)."""
        acks = self.by_txn.pop(txn, None)
        if acks is None:
            return
        for entry_id in acks.entries:
            self.held.pop(entry_id, None)
        if self.cumulative is not None and self.cumulative[0] == txn:
            self.cumulative = None
        sub = self.subscription
        cursor = sub.cursor
        if commit:
            apply_acks(sub, acks)
        else:
            sub.redelivery.update(e for e in acks.entries if not cursor.is_acked(e))
            bound = acks.cumulative_bound()
            if bound is not None:
                self._release(acks, bound)
        sub.schedule_dispatch()

    def _release(self, acks: TxnAcks, bound: int) -> None:
        """An aborted cumulative acknowledgement: what it held is as if it had never come, each entry
        in flight again to the consumer it was taken from (a client's redelivery request after the
        abort sends it again, once), or waiting for redelivery when that consumer is gone."""
        sub = self.subscription
        cursor = sub.cursor
        consumers = sub.consumers
        for entry_id in range(cursor.mark_delete + 1, bound + 1):
            if cursor.is_acked(entry_id) or entry_id in self.held:
                continue
            taken = acks.taken.get(entry_id)
            if taken is not None and any(c is taken[0] for c in consumers):
                taken[0].restore(entry_id, taken[1])
            else:
                sub.redelivery.add(entry_id)

    def stats(self) -> dict[str, Any]:
        """Pulsar's TransactionPendingAckStats."""
        return {"state": "Ready", "lowWaterMarks": {}, "ongoingTxnSize": len(self.by_txn)}


def apply_acks(sub: AckedSubscription, acks: TxnAcks) -> None:
    """Turn a committed transaction's acknowledgements into the subscription's own."""
    cursor = sub.cursor
    if acks.entries:
        cursor.ack_many(acks.entries)
        sub.redelivery.difference_update(acks.entries)
    for entry_id, (ack_set, batch_size) in acks.batches.items():
        if cursor.ack_batch_indexes(entry_id, ack_set, batch_size):
            sub.redelivery.discard(entry_id)
    if acks.cumulative is not None:
        if acks.cumulative_batch:
            cursor.ack_cumulative(acks.cumulative - 1)
            cursor.ack_batch_indexes(acks.cumulative, *acks.cumulative_batch)
        else:
            cursor.ack_cumulative(acks.cumulative)
        sub.redelivery.difference_update([e for e in sub.redelivery if cursor.is_acked(e)])
