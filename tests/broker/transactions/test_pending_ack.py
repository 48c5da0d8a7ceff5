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


class FakeConsumer:
    def __init__(self, in_flight: list[int]) -> None:
        self.pending = {e: 1 for e in in_flight}

    def restore(self, entry_id: int, messages: int) -> None:
        self.pending[entry_id] = messages

    def forget(self, entry_ids: list[int]) -> None:
        for e in entry_ids:
            self.pending.pop(e, None)


class FakeSubscription:
    name = "sub"

    def __init__(self) -> None:
        self.cursor = FakeCursor()
        self.redelivery: set[int] = set()
        self.dispatches = 0
        self.consumers: list[FakeConsumer] = []

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


def test_a_cumulative_acknowledgement_holds_every_entry_up_to_it_until_the_end() -> None:
    sub = FakeSubscription()
    sub.cursor.mark_delete = 1
    sub.consumers = [FakeConsumer([3, 4, 5, 6, 7])]
    sub.redelivery = {2}  # waiting to be sent again
    pending = PendingAcks(sub, "t")
    assert pending.add(T1, True, [(5, None, 0)]) == [2, 3, 4, 5]  # let go by the consumer and the redelivery queue
    sub.consumers[0].forget([3, 4, 5])  # (what the subscription does with them)
    sub.redelivery.clear()
    assert [e for e in range(2, 8) if pending.holds(e)] == [2, 3, 4, 5]
    error = _conflict(lambda: pending.add(T2, False, [(4, None, 0)]))
    assert "Transaction:(0,2) try to ack message:4 in pending ack status" in error.message
    assert pending.add(T2, False, [(6, None, 0)]) == [6]  # past the cumulative position: free
    assert pending.add(T1, True, [(5, None, 0)]) == [3, 4, 5]  # (the same again: the same hold)
    pending.end(T1, commit=False)
    # as before the acknowledgement: 3..5 in flight to their consumer again, 2 waiting for redelivery
    assert sub.redelivery == {2} and sorted(sub.consumers[0].pending) == [3, 4, 5, 6, 7]
    assert not pending.holds(3) and sub.cursor.mark_delete == 1
    sub.consumers = []  # the consumer left: what an abort releases waits for redelivery
    assert pending.add((0, 3), True, [(4, None, 0)]) == [2]
    pending.end((0, 3), commit=False)
    assert sub.redelivery == {2, 3, 4}
    assert pending.add((0, 4), True, [(4, None, 0)]) == [2, 3, 4]
    sub.redelivery = {e for e in sub.redelivery if e > 4}
    pending.end((0, 4), commit=True)
    assert sub.cursor.mark_delete == 4 and not pending.holds(2)


def test_a_cumulative_acknowledgement_ending_in_a_batch_holds_the_entries_before_it() -> None:
    sub = FakeSubscription()
    sub.consumers = [FakeConsumer([0, 1, 2])]
    pending = PendingAcks(sub, "t")
    partial = [0b1000]  # indexes 0..2 of a batch of 4
    assert pending.add(T1, True, [(2, partial, 4)]) == [0, 1]
    assert (pending.holds(1), pending.holds(2)) == (True, False)
    record = pending.record(T1)
    restored = PendingAcks(sub, "t")  # (as after a restart)
    restored.restore(T1, record)
    assert (restored.holds(1), restored.holds(2)) == (True, False)
    restored.end(T1, commit=True)
    assert sub.cursor.mark_delete == 1 and sub.cursor.batches == {2: partial}
