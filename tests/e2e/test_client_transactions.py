"""Transactions of magnetar.client against a real broker, observed with the official pulsar-client
(which has no transaction API): nothing of an open transaction is received, exactly its messages
after commit, none after abort; acknowledgements of an aborted transaction come back; conflicts,
timeouts and misuse raise the official exception types; consume-transform-produce over
partitioned topics, on the sync and the asyncio faces."""

from __future__ import annotations

import asyncio
import time
import uuid

import pulsar
import pytest

import magnetar.client as mc
from magnetar.testing import BrokerProcess
from magnetar.testing.admin import Admin

from .helpers import QUIET_MS, RECEIVE_MS, assert_nothing_more, new_client


def _topic(name: str) -> str:
    return f"persistent://public/default/txn-{name}-{uuid.uuid4().hex[:10]}"


def _observer(url: str, topic: str) -> tuple[pulsar.Client, pulsar.Consumer]:
    client = new_client(url)
    return client, client.subscribe(topic, "observer", initial_position=pulsar.InitialPosition.Earliest)


def _drain(consumer: pulsar.Consumer, timeout_ms: int = 1500) -> list[bytes]:
    """Every message until none comes within ``timeout_ms``, acknowledged."""
    out = []
    while True:
        try:
            msg = consumer.receive(timeout_millis=timeout_ms)
        except pulsar.Timeout:
            return out
        out.append(msg.data())
        consumer.acknowledge(msg)


@pytest.fixture
def txn_client(broker: BrokerProcess) -> mc.Client:
    client = mc.Client(broker.service_url, enable_transaction=True, operation_timeout_seconds=10)
    yield client
    client.close()


def test_commit_makes_the_sends_visible_exactly(broker: BrokerProcess, txn_client: mc.Client) -> None:
    topic = _topic("commit")
    obs_client, observer = _observer(broker.service_url, topic)
    try:
        producer = txn_client.create_producer(topic)
        txn = txn_client.new_transaction()
        assert txn.state() is mc.TransactionState.OPEN
        most, least = txn.id()
        assert isinstance(most, int) and isinstance(least, int)
        results: list = []
        for i in range(20):
            producer.send_async(f"t{i}".encode(), lambda e, m: results.append(e), txn=txn)
        producer.send(b"t-last", txn=txn)
        producer.send(b"plain")  # after the open transaction: waits for it (Pulsar's max read position)
        assert_nothing_more(observer, 1000)
        txn.commit()
        assert txn.state() is mc.TransactionState.COMMITTED
        assert results == [None] * 20
        assert _drain(observer) == [f"t{i}".encode() for i in range(20)] + [b"t-last", b"plain"]
    finally:
        obs_client.close()


def test_abort_hides_the_sends(broker: BrokerProcess, txn_client: mc.Client) -> None:
    topic = _topic("abort")
    obs_client, observer = _observer(broker.service_url, topic)
    try:
        producer = txn_client.create_producer(topic, batching_enabled=False)
        txn = txn_client.new_transaction()
        for i in range(5):
            producer.send(f"a{i}".encode(), txn=txn)
        txn.abort()
        assert txn.state() is mc.TransactionState.ABORTED
        producer.send(b"after")
        assert _drain(observer) == [b"after"]
        # an ended transaction refuses everything, with the official exception type
        with pytest.raises(mc.InvalidTxnStatusError):
            producer.send(b"late", txn=txn)
        with pytest.raises(mc.InvalidTxnStatusError):
            txn.commit()
        assert _drain(observer, QUIET_MS) == []
    finally:
        obs_client.close()


def test_a_send_in_a_committed_transaction_is_refused(txn_client: mc.Client) -> None:
    producer = txn_client.create_producer(_topic("committed"))
    txn = txn_client.new_transaction()
    producer.send(b"x", txn=txn)
    txn.commit()
    with pytest.raises(mc.InvalidTxnStatusError, match="COMMITTED"):
        producer.send(b"y", txn=txn)
    errors: list = []
    producer.send_async(b"z", lambda e, m: errors.append(e), txn=txn)
    producer.flush()
    deadline = time.monotonic() + 5
    while not errors and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [type(e) for e in errors] == [mc.InvalidTxnStatusError]
    with pytest.raises(mc.InvalidTxnStatusError):
        txn.abort()


def test_new_transaction_needs_enable_transaction_and_no_network() -> None:
    # nothing listens on that port: the refusal comes before any connection is tried
    client = mc.Client("pulsar://127.0.0.1:9", operation_timeout_seconds=2)
    try:
        started = time.monotonic()
        with pytest.raises(mc.NotAllowedError, match="enable_transaction"):
            client.new_transaction()
        assert time.monotonic() - started < 1
    finally:
        client.close()


@pytest.mark.parametrize("batched", [False, True])
def test_acknowledgements_of_an_aborted_transaction_are_delivered_again(
    broker: BrokerProcess, txn_client: mc.Client, batched: bool
) -> None:
    topic = _topic("ack-abort")
    consumer = txn_client.subscribe(topic, "work", consumer_type=mc.ConsumerType.Shared)
    producer = txn_client.create_producer(topic, batching_enabled=batched)
    for i in range(6):
        producer.send_async(f"m{i}".encode(), None)
    producer.flush()
    first = [consumer.receive(RECEIVE_MS) for _ in range(6)]
    assert sorted(m.data() for m in first) == [f"m{i}".encode() for i in range(6)]
    txn = txn_client.new_transaction()
    for msg in first:
        consumer.acknowledge(msg, txn=txn)
    txn.abort()
    again = [consumer.receive(RECEIVE_MS) for _ in range(6)]
    assert sorted(m.data() for m in again) == [f"m{i}".encode() for i in range(6)]
    with pytest.raises(mc.Timeout):
        consumer.receive(QUIET_MS)
    done = txn_client.new_transaction()
    for msg in again:
        consumer.acknowledge(msg, txn=done)
    done.commit()
    consumer.close()
    # committed: the subscription has nothing left
    assert Admin(broker.http_url).backlog(topic, "work") == 0


def test_a_second_transaction_acknowledging_the_same_message_conflicts(txn_client: mc.Client) -> None:
    topic = _topic("conflict")
    consumer = txn_client.subscribe(topic, "work", consumer_type=mc.ConsumerType.Shared)
    producer = txn_client.create_producer(topic)
    producer.send(b"only")
    msg = consumer.receive(RECEIVE_MS)
    first, second = txn_client.new_transaction(), txn_client.new_transaction()
    consumer.acknowledge(msg, txn=first)
    with pytest.raises(mc.TransactionConflict):
        consumer.acknowledge(msg, txn=second)
    # the failed operation leaves the second transaction in ERROR: it can only be aborted
    assert second.state() is mc.TransactionState.ERROR
    with pytest.raises(mc.InvalidTxnStatusError):
        second.commit()
    second.abort()
    assert second.state() is mc.TransactionState.ABORTED
    first.commit()
    assert first.state() is mc.TransactionState.COMMITTED
    with pytest.raises(mc.Timeout):
        consumer.receive(QUIET_MS)


def test_a_timed_out_transaction_cannot_commit_and_its_sends_stay_invisible(
    broker: BrokerProcess, txn_client: mc.Client
) -> None:
    topic = _topic("timeout")
    obs_client, observer = _observer(broker.service_url, topic)
    try:
        producer = txn_client.create_producer(topic)
        txn = txn_client.new_transaction(timeout_ms=700)
        producer.send(b"never", txn=txn)
        producer.send(b"plain")
        time.sleep(1.0)
        assert txn.state() is mc.TransactionState.TIME_OUT
        with pytest.raises(mc.InvalidTxnStatusError, match="TIME_OUT"):
            txn.commit()
        with pytest.raises(mc.InvalidTxnStatusError):
            producer.send(b"late", txn=txn)
        # the coordinator aborts it (it checks every second): the plain message goes out, the other never
        assert _drain(observer, 3000) == [b"plain"]
    finally:
        obs_client.close()


def test_cumulative_acknowledgement_in_an_aborted_transaction_is_delivered_again(txn_client: mc.Client) -> None:
    topic = _topic("cumulative")
    consumer = txn_client.subscribe(topic, "work")  # Exclusive
    producer = txn_client.create_producer(topic, batching_enabled=False)
    for i in range(4):
        producer.send(f"c{i}".encode())
    got = [consumer.receive(RECEIVE_MS) for _ in range(4)]
    txn = txn_client.new_transaction()
    consumer.acknowledge_cumulative(got[2], txn=txn)
    txn.abort()
    assert [consumer.receive(RECEIVE_MS).data() for _ in range(4)] == [b"c0", b"c1", b"c2", b"c3"]
    with pytest.raises(mc.Timeout):
        consumer.receive(QUIET_MS)


def _consume_transform_produce(broker: BrokerProcess, source: str, sink: str, count: int) -> None:
    """Input messages i of ``source`` become b"out-i" on ``sink``, five per transaction; the second
    transaction is aborted once (its input comes back and is processed again)."""

    async def run() -> None:
        client = mc.asyncio.Client(broker.service_url, enable_transaction=True, operation_timeout_seconds=10)
        try:
            consumer = await client.subscribe(source, "ctp", consumer_type=mc.ConsumerType.Shared,
                                              initial_position=mc.InitialPosition.Earliest)
            producer = await client.create_producer(sink)
            done, aborted = 0, False
            while done < count:
                txn = await client.new_transaction()
                batch = [await consumer.receive(RECEIVE_MS) for _ in range(5)]
                for msg in batch:
                    await producer.send(b"out-" + msg.data(), txn=txn)
                    await consumer.acknowledge(msg, txn=txn)
                if done == 5 and not aborted:
                    aborted = True
                    await txn.abort()
                    assert txn.state() is mc.TransactionState.ABORTED
                    continue
                await txn.commit()
                assert txn.state() is mc.TransactionState.COMMITTED
                done += 5
            await consumer.close()
        finally:
            await client.close()

    asyncio.run(run())


def test_consume_transform_produce_across_partitioned_topics(broker: BrokerProcess) -> None:
    source, sink = _topic("ctp-in"), _topic("ctp-out")
    admin = Admin(broker.http_url)
    admin.create_partitioned_topic(source, 3)
    admin.create_partitioned_topic(sink, 2)
    official = new_client(broker.service_url)
    try:
        observer = official.subscribe(sink, "observer", initial_position=pulsar.InitialPosition.Earliest)
        producer = official.create_producer(source, batching_enabled=True)
        for i in range(30):
            producer.send_async(str(i).encode(), None)
        producer.flush()
        _consume_transform_produce(broker, source, sink, 30)
        out = _drain(observer)
        assert sorted(out) == sorted(f"out-{i}".encode() for i in range(30))  # each exactly once
        # every input was acknowledged by a committed transaction
        leftover = official.subscribe(source, "ctp", consumer_type=pulsar.ConsumerType.Shared)
        assert_nothing_more(leftover, 1500)
    finally:
        official.close()


def test_asyncio_face_commit_and_state(broker: BrokerProcess) -> None:
    topic = _topic("asyncio")
    obs_client, observer = _observer(broker.service_url, topic)

    async def run() -> tuple[list, list]:
        client = mc.asyncio.Client(broker.service_url, enable_transaction=True)
        try:
            producer = await client.create_producer(topic)
            txn = await client.new_transaction(timeout_ms=30_000)
            states = [txn.state()]
            for i in range(3):
                await producer.send(f"x{i}".encode(), txn=txn)
            await txn.commit()
            states.append(txn.state())
            plain = mc.asyncio.Client(broker.service_url)
            try:
                with pytest.raises(mc.NotAllowedError):
                    await plain.new_transaction()
            finally:
                await plain.close()
            return states, []
        finally:
            await client.close()

    try:
        states, _ = asyncio.run(run())
        assert states == [mc.TransactionState.OPEN, mc.TransactionState.COMMITTED]
        assert _drain(observer) == [b"x0", b"x1", b"x2"]
    finally:
        obs_client.close()
