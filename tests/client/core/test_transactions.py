"""AsyncTransaction without a broker: states, the client's timeout, registration once per partition
and subscription, sends queued in order behind it, commit waiting for what is in flight, failures,
and the ACK of a message in a transaction."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from magnetar.client.api.message import MessageId
from magnetar.client.core.transactions import AsyncTransaction, TransactionState, _ack_command
from magnetar.client.exceptions import AlreadyClosed, InvalidTxnStatus, TransactionNotFound
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
    """A producer as a transaction sees it: messages of a registered partition go into the open
    batch (send_nowait), the others through the transaction (queue_send); a flushed batch reports
    itself to its transaction's sink; ``receipts()`` answers every batch sent."""

    def __init__(self, topic: str = "persistent://public/default/t-partition-0") -> None:
        self.topic = topic
        self.txn_sinks: dict[tuple[int, int], Any] = {}
        self.batch: list[tuple[Any, Any, tuple[int, int]]] = []
        self.sent: list[tuple[list, list]] = []
        self.settled: list[int] = []
        self.settled_hook = self.settled.append
        self.closed = False

    def send_nowait(self, content: Any, waiter: Any = None, sequence_id: int | None = None, txn: Any = None,
                    **options: Any) -> None:
        txn_id = txn.ready_on(self)
        if txn_id is None or options or self.closed:
            txn.queue_send(self, content, waiter, sequence_id, options)
            return
        self.batch.append((content, waiter, txn_id))

    def _queue_message(self, content: Any, waiter: Any = None, **options: Any) -> None:
        if self.closed:
            raise AlreadyClosed("closed")
        self.batch.append((content, waiter, options["txn"]))

    def _flush_batches(self) -> None:
        if self.batch:
            batch, self.batch = self.batch, []
            callbacks = [waiter for _, waiter, _ in batch]
            sink = self.txn_sinks.get(batch[0][2])
            if sink is not None:
                callbacks.append(sink.send_enqueued())
            self.sent.append((batch, callbacks))

    def receipts(self, error: Exception | None = None) -> None:
        sent, self.sent = self.sent, []
        for _, callbacks in sent:
            for cb in callbacks:
                if cb is not None:
                    cb(error, None if error else MessageId(1, 2))

    def contents(self) -> list[bytes]:
        return [c for batch, _ in self.sent for c, _, _ in batch] + [c for c, _, _ in self.batch]


def test_sends_wait_for_the_partition_registration_in_order_and_commit_waits_for_receipts() -> None:
    async def scenario() -> None:
        tc = FakeCoordinator()
        tc.gate.clear()
        txn = AsyncTransaction(tc, (0, 7), 60_000)
        producer = FakeProducer()
        for i in range(3):
            producer.send_nowait(f"m{i}".encode(), None, txn=txn)
        await asyncio.sleep(0.01)
        assert producer.contents() == [] and tc.calls == [("partition", producer.topic)]
        tc.gate.set()
        await asyncio.sleep(0.01)
        producer.send_nowait(b"m3", None, txn=txn)
        producer.send_nowait(b"m4", None, txn=txn, properties={"k": "v"})  # (not for the open batch as it is)
        assert producer.contents() == [b"m0", b"m1", b"m2", b"m3", b"m4"]
        assert {t for _, _, t in producer.batch} == {(0, 7)} and producer.txn_sinks == {(0, 7): txn}
        assert tc.calls == [("partition", producer.topic)]  # registered once
        commit = asyncio.ensure_future(txn.commit())
        await asyncio.sleep(0.01)
        assert txn.state() is TransactionState.COMMITTING and ("end", True) not in tc.calls
        assert producer.batch == [] and len(producer.sent) == 1  # the commit sent the open batch
        with pytest.raises(InvalidTxnStatus, match="COMMITTING"):
            producer.send_nowait(b"late", None, txn=txn)
        producer.receipts()
        await commit
        assert tc.calls[-1] == ("end", True) and txn.state() is TransactionState.COMMITTED
        assert producer.txn_sinks == {}  # an ended transaction is no longer told of sends
        with pytest.raises(InvalidTxnStatus, match="COMMITTED"):
            await txn.abort()

    run(scenario())


def test_a_commit_while_the_registration_is_pending_sends_and_waits_for_the_queued_messages() -> None:
    async def scenario() -> None:
        tc = FakeCoordinator()
        tc.gate.clear()
        txn = AsyncTransaction(tc, (0, 8), 60_000)
        producer = FakeProducer()
        results: list = []
        for i in range(3):
            producer.send_nowait(f"m{i}".encode(), lambda e, m: results.append((e, m)), txn=txn)
        commit = asyncio.ensure_future(txn.commit())
        await asyncio.sleep(0.01)
        assert producer.contents() == [] and txn.state() is TransactionState.COMMITTING
        tc.gate.set()
        await asyncio.sleep(0.01)
        assert [c for c, _, _ in producer.sent[0][0]] == [b"m0", b"m1", b"m2"] and not commit.done()
        assert ("end", True) not in tc.calls
        producer.receipts()
        await commit
        assert results == [(None, MessageId(1, 2))] * 3 and txn.state() is TransactionState.COMMITTED

    run(scenario())


def test_a_failed_send_puts_the_transaction_in_error() -> None:
    async def scenario() -> None:
        tc = FakeCoordinator()
        txn = AsyncTransaction(tc, (0, 9), 60_000)
        producer = FakeProducer()
        producer.send_nowait(b"a", None, txn=txn)
        await asyncio.sleep(0.01)
        producer._flush_batches()
        producer.receipts(TransactionNotFound("refused"))
        assert txn.state() is TransactionState.ERROR
        other = AsyncTransaction(tc, (0, 10), 60_000)
        closed = FakeProducer("persistent://public/default/u-partition-0")
        closed.closed = True
        errors: list = []
        closed.send_nowait(b"b", lambda e, m: errors.append(e), txn=other)
        await asyncio.sleep(0.01)
        assert [type(e) for e in errors] == [AlreadyClosed] and closed.settled == [1]
        assert other.state() is TransactionState.ERROR
        with pytest.raises(InvalidTxnStatus, match="an operation failed"):
            await other.commit()

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
        producer.send_nowait(b"x", lambda e, m: errors.append(e), txn=txn)
        await asyncio.sleep(0.01)
        assert [type(e) for e in errors] == [TransactionNotFound]
        assert producer.contents() == [] and producer.settled == [1]
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
