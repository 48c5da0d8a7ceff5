"""Sends of magnetar.client in transactions against a real broker, observed with the official
pulsar-client: thousands of batched messages per transaction (their sends accounted per batch),
commits started while the next transaction fills, an abort among them, and a send the broker
refuses because its transaction ended behind the client's back (NotAllowed, as the Java client:
that send fails, the producer goes on without a reconnection)."""

from __future__ import annotations

import asyncio
import uuid

import pulsar

import magnetar.client as mc
from magnetar.client.core.transactions import AsyncTransaction
from magnetar.testing import BrokerProcess
from magnetar.testing.admin import Admin

from .helpers import new_client


def _topic(name: str) -> str:
    return f"persistent://public/default/txn-sends-{name}-{uuid.uuid4().hex[:10]}"


def _drain(consumer: pulsar.Consumer, timeout_ms: int = 1500) -> list[bytes]:
    out = []
    while True:
        try:
            msg = consumer.receive(timeout_millis=timeout_ms)
        except pulsar.Timeout:
            return out
        out.append(msg.data())
        consumer.acknowledge(msg)


def test_transactions_of_a_thousand_batched_sends_commit_and_abort_exactly(broker: BrokerProcess) -> None:
    topic = _topic("bulk")
    Admin(broker.http_url).create_partitioned_topic(topic, 2)
    official = new_client(broker.service_url)

    async def run() -> list[mc.TransactionState]:
        client = mc.AsyncClient(broker.service_url, enable_transaction=True, operation_timeout_seconds=10)
        try:
            producer = await client.create_producer(
                topic, batching_max_messages=1000, batching_max_publish_delay_ms=10, max_pending_messages=0)
            ends, txns, sends = [], [], []
            for t in range(4):
                txn = await client.new_transaction(timeout_ms=60_000)
                txns.append(txn)
                for i in range(1000):  # (a key: round the transaction's queue, else into the open batch)
                    key = {"partition_key": str(i % 7)} if i % 3 == 0 else {}
                    sends.append(await producer.send_async(f"{t}-{i}".encode(), txn=txn, **key))
                # the commit (or abort) runs while the next transaction fills
                ends.append(asyncio.ensure_future(txn.abort() if t == 2 else txn.commit()))
            await asyncio.gather(*ends)
            assert all(f.done() and f.exception() is None for f in sends)
            await producer.close()
            return [txn.state() for txn in txns]
        finally:
            await client.close()

    try:
        observer = official.subscribe(topic, "observer", initial_position=pulsar.InitialPosition.Earliest)
        states = asyncio.run(run())
        S = mc.TransactionState
        assert states == [S.COMMITTED, S.COMMITTED, S.ABORTED, S.COMMITTED]
        got = _drain(observer)
        assert len(got) == 3000 and set(got) == {f"{t}-{i}".encode() for t in (0, 1, 3) for i in range(1000)}
    finally:
        official.close()


def test_a_send_in_a_transaction_ended_on_the_broker_fails_with_not_allowed(broker: BrokerProcess) -> None:
    topic = _topic("refused")
    official = new_client(broker.service_url)

    async def run() -> tuple[list, mc.TransactionState, str]:
        client = mc.AsyncClient(broker.service_url, enable_transaction=True, operation_timeout_seconds=10)
        try:
            producer = await client.create_producer(topic, batching_max_messages=100, batching_max_publish_delay_ms=5)
            txn = await client.new_transaction(timeout_ms=60_000)
            for i in range(3):
                await producer.send(f"x{i}".encode(), txn=txn)
            # the same transaction committed by another handle: the broker has ended it, this one is still OPEN
            await AsyncTransaction(client.tc_client, txn.id(), 60_000).commit()
            assert txn.state() is mc.TransactionState.OPEN
            conn = producer.conn
            before = await producer.send_async(b"p1")  # its receipt comes after the refusal below
            refused = [await producer.send_async(f"late{i}".encode(), txn=txn) for i in range(5)]
            await asyncio.wait([before, *refused], timeout=10)
            outcomes = [type(f.exception()) if f.exception() else f.result() is not None for f in [before, *refused]]
            message = str(refused[0].exception())
            await producer.send(b"p2")
            assert producer.conn is conn  # no reconnection
            return outcomes, txn.state(), message
        finally:
            await client.close()

    try:
        observer = official.subscribe(topic, "observer", initial_position=pulsar.InitialPosition.Earliest)
        outcomes, state, message = asyncio.run(run())
        assert outcomes == [True] + [mc.NotAllowedError] * 5
        assert "has been ended. Please use a new transaction to send message." in message
        assert state is mc.TransactionState.ERROR  # a failed send: the transaction can only be aborted
        assert _drain(observer) == [b"x0", b"x1", b"x2", b"p1", b"p2"]
    finally:
        official.close()
