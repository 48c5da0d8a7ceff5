"""Pending acknowledgements of a subscription: held, conflicts, commit and abort."""

from __future__ import annotations

import pytest

from magnetar.broker.errors import BrokerError
from magnetar.broker.transactions.pending_ack import PendingAcks, acked_indexes
from magnetar.protocol.enums import ServerError

T1, T2 = (0, 1), (0, 2)


class FakeCursor:
    def __init__(self) -> None:
        self.mark_delete = -1
        self.acked: set[int] = set()
        self.batches: dict[int, list[int]] = {}

    def is_acked(self, entry_id: int) -> bool:
        return entry_id <= self.mark_delete or entry_id in self.acked

    def ack_many(self, entry_ids: list[int]) -> bool:
        self.acked.update(entry_ids)
        return True

    def ack_cumulative(self, entry_id: int) -> bool:
        self.mark_delete = max(self.mark_delete, entry_id)
        return True

    def ack_batch_indexes(self, entry_id: int, ack_set: list[int], batch_size: int) -> bool:
        self.batches[entry_id] = ack_set
        return False


class FakeSubscription:
    name = "sub"

    def __init__(self) -> None:
        self.cursor = FakeCursor()
        self.redelivery: set[int] = set()
        self.dispatches = 0

    def schedule_dispatch(self) -> None:
        self.dispatches += 1


def _conflict(call) -> BrokerError:  # noqa: ANN001
    with pytest.raises(BrokerError) as refused:
        call()
    assert refused.value.code == ServerError.TransactionConflict
    return refused.value


def test_held_until_commit_then_acknowledged() -> None:
    sub = FakeSubscription()
    pending = PendingAcks(sub, "persistent://public/default/t")
    assert pending.add(T1, False, [(3, None, 0), (4, None, 0)]) == [3, 4]
    assert pending.holds(3) and pending.holds(4)
    error = _conflict(lambda: pending.add(T2, False, [(4, None, 0)]))
    assert "Transaction:(0,2) try to ack message:4 in pending ack status" in error.message
    assert not pending.holds(5)
    pending.end(T1, commit=True)
    assert sub.cursor.acked == {3, 4} and not pending.holds(3)
    _conflict(lambda: pending.add(T2, False, [(3, None, 0)]))  # acknowledged already


def test_abort_releases_for_redelivery() -> None:
    sub = FakeSubscription()
    pending = PendingAcks(sub, "t")
    pending.add(T1, False, [(7, None, 0)])
    pending.end(T1, commit=False)
    assert (sub.redelivery, sub.cursor.acked, pending.holds(7)) == ({7}, set(), False)
    assert pending.add(T2, False, [(7, None, 0)]) == [7]  # free again


def test_batch_indexes_conflict_only_when_they_overlap() -> None:
    sub = FakeSubscription()
    pending = PendingAcks(sub, "t")
    # ack sets as the clients send them: bits still set are not acknowledged
    first = [0b1100]  # acks indexes 0 and 1 of a batch of 4
    second = [0b0011]  # acks indexes 2 and 3
    assert acked_indexes(first, 4) == {0, 1}
    assert pending.add(T1, False, [(9, first, 4)]) == []
    assert pending.add(T2, False, [(9, second, 4)]) == []
    _conflict(lambda: pending.add((0, 3), False, [(9, [0b1110], 4)]))  # index 0 again
    pending.end(T1, commit=True)
    assert sub.cursor.batches == {9: first}


def test_cumulative_in_a_transaction() -> None:
    sub = FakeSubscription()
    pending = PendingAcks(sub, "t")
    pending.add(T1, False, [(2, None, 0)])
    _conflict(lambda: pending.add(T2, True, [(5, None, 0)]))  # would cover T1's entry 2
    pending.end(T1, commit=False)
    pending.add(T2, True, [(5, None, 0)])
    assert sub.cursor.mark_delete == -1
    pending.end(T2, commit=True)
    assert sub.cursor.mark_delete == 5
    _conflict(lambda: pending.add((0, 3), True, [(4, None, 0)]))


def test_batch_indexes_of_one_transaction_add_up() -> None:
    """A client acknowledging the messages of a batch one by one in a transaction sends one ack set
    per message (only its own index cleared): the commit acknowledges every one of them."""
    sub = FakeSubscription()
    pending = PendingAcks(sub, "t")
    for index in range(4):
        pending.add(T1, False, [(9, [0b1111 & ~(1 << index)], 4)])
    pending.end(T1, commit=True)
    assert acked_indexes(sub.cursor.batches[9], 4) == {0, 1, 2, 3}
