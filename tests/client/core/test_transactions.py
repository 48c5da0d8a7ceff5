"""AsyncTransaction without a broker: states, the client's timeout, registration once per partition
and subscription, sends queued in order behind it, commit waiting for what is in flight, failures,
and the ACK of a message in a transaction."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from magnetar.client.api.message import MessageId
from magnetar.client.core.transactions import AsyncTransaction, TransactionState, _ack_command
from magnetar.client.exceptions import InvalidTxnStatus, TransactionNotFound
from magnetar.protocol.enums import AckType

from ..conftest import run


class FakeCoordinator:
    """Records the coordinator calls; ``gate`` holds ADD_PARTITION_TO_TXN answers until set."""

    def __init__(self, fail_partition: Exception | None = None, fail_end: Exception | None = None) -> None:
        self.calls: list[tuple] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.fail_partition = fail_partition
        self.fail_end = fail_end

    async def add_partition(self, txn: tuple[int, int], topic: str) -> None:
        self.calls.append(("partition", topic))
        await self.gate.wait()
        if self.fail_partition is not None:
            raise self.fail_partition

    async def add_subscription(self, txn: tuple[int, int], topic: str, sub: str) -> None:
        self.calls.append(("subscription", topic, sub))

    async def end_txn(self, txn: tuple[int, int], commit: bool) -> None:
        self.calls.append(("end", commit))
        if self.fail_end is not None:
            raise self.fail_end


class FakeProducer:
    """Keeps the messages queued with their waiters, as a producer does until their receipts."""

    def __init__(self, topic: str = "persistent://public/default/t-partition-0") -> None:
        self.topic = topic
        self.queued: list[tuple[Any, Any, dict]] = []
        self.settled: list[int] = []
        self.settled_hook = self.settled.append

    def _queue_message(self, content: Any, waiter: Any = None, **options: Any) -> None:
        self.queued.append((content, waiter, options))


def test_sends_wait_for_the_partition_registration_in_order_and_commit_waits_for_receipts() -> None:
    async def scenario() -> None:
        tc = FakeCoordinator()
        tc.gate.clear()
        txn = AsyncTransaction(tc, (0, 7), 60_000)
        producer = FakeProducer()
        for i in range(3):
            txn.queue_send(producer, f"m{i}".encode(), None, None, {})
        await asyncio.sleep(0.01)
        assert producer.queued == [] and tc.calls == [("partition", producer.topic)]
        tc.gate.set()
        await asyncio.sleep(0.01)
        txn.queue_send(producer, b"m3", None, None, {})
        assert [q[0] for q in producer.queued] == [b"m0", b"m1", b"m2", b"m3"]
        assert all(q[2]["txn"] == (0, 7) for q in producer.queued)
        assert tc.calls == [("partition", producer.topic)]  # registered once
        commit = asyncio.ensure_future(txn.commit())
        await asyncio.sleep(0.01)
        assert txn.state() is TransactionState.COMMITTING and ("end", True) not in tc.calls
        with pytest.raises(InvalidTxnStatus, match="COMMITTING"):
            txn.queue_send(producer, b"late", None, None, {})
        for _, waiter, _ in producer.queued:
            waiter(None, MessageId(1, 2))
        await commit
        assert tc.calls[-1] == ("end", True) and txn.state() is TransactionState.COMMITTED
        with pytest.raises(InvalidTxnStatus, match="COMMITTED"):
            await txn.abort()

    run(scenario())


def test_the_client_times_a_transaction_out() -> None:
    async def scenario() -> None:
        tc = FakeCoordinator()
        txn = AsyncTransaction(tc, (0, 1), 50)
        await asyncio.sleep(0.1)
        assert txn.state() is TransactionState.TIME_OUT
        with pytest.raises(InvalidTxnStatus, match="TIME_OUT"):
            await txn.commit()
        assert tc.calls == []

    run(scenario())


def test_a_failed_registration_fails_its_sends_and_only_abort_remains() -> None:
    async def scenario() -> None:
        tc = FakeCoordinator(fail_partition=TransactionNotFound("gone"))
        txn = AsyncTransaction(tc, (0, 2), 60_000)
        producer = FakeProducer()
        errors: list = []
        txn.queue_send(producer, b"x", lambda e, m: errors.append(e), None, {})
        await asyncio.sleep(0.01)
        assert [type(e) for e in errors] == [TransactionNotFound]
        assert producer.queued == [] and producer.settled == [1]
        assert txn.state() is TransactionState.ERROR
        with pytest.raises(InvalidTxnStatus, match="an operation failed"):
            await txn.commit()
        await txn.abort()
        assert txn.state() is TransactionState.ABORTED

    run(scenario())


def test_an_end_refused_by_the_coordinator_is_an_error_state() -> None:
    async def scenario() -> None:
        txn = AsyncTransaction(FakeCoordinator(fail_end=TransactionNotFound("timed out")), (0, 3), 60_000)
        with pytest.raises(TransactionNotFound):
            await txn.commit()
        assert txn.state() is TransactionState.ERROR

    run(scenario())


def test_ack_commands_carry_the_transaction_and_batch_indexes() -> None:
    plain = _ack_command(5, MessageId(10, 20), False, (1, 2), 99).ack
    assert (plain.consumer_id, plain.ack_type, plain.txnid_most_bits, plain.txnid_least_bits, plain.request_id) == (
        5, AckType.Individual, 1, 2, 99)
    assert [(m.ledger_id, m.entry_id, list(m.ack_set)) for m in plain.message_id] == [(10, 20, [])]
    batched = MessageId(10, 21, 2, -1, 5)
    one = _ack_command(5, batched, False, (1, 2), 100).ack.message_id[0]
    assert (list(one.ack_set), one.batch_size) == ([0b11011], 5)
    upto = _ack_command(5, batched, True, (1, 2), 101).ack
    assert upto.ack_type == AckType.Cumulative and list(upto.message_id[0].ack_set) == [0b11000]
    last = _ack_command(5, MessageId(10, 21, 4, -1, 5), True, (1, 2), 102).ack.message_id[0]
    assert list(last.ack_set) == []  # the whole batch: the entry itself
