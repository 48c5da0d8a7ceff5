"""Cumulative acknowledgements of magnetar.client in a transaction against a real broker: the
entries they cover are held by the subscription until the transaction ends (not redelivered on a
redelivery request, nor to the next consumer), a commit acknowledges them, an abort gives them back
exactly once."""

from __future__ import annotations

import uuid

import pytest

import magnetar.client as mc
from magnetar.testing import BrokerProcess
from magnetar.testing.admin import Admin

from .helpers import QUIET_MS, RECEIVE_MS


def _topic(name: str) -> str:
    return f"persistent://public/default/txn-acks-{name}-{uuid.uuid4().hex[:10]}"


def _until_quiet(consumer: mc.Consumer) -> list[tuple[bytes, int]]:
    """(content, redelivery count) of every message until none comes within QUIET_MS."""
    out = []
    while True:
        try:
            msg = consumer.receive(QUIET_MS)
        except mc.Timeout:
            return out
        out.append((msg.data(), msg.redelivery_count()))


@pytest.fixture
def txn_client(broker: BrokerProcess) -> mc.Client:
    client = mc.Client(broker.service_url, enable_transaction=True, operation_timeout_seconds=10)
    yield client
    client.close()


def _filled(client: mc.Client, topic: str, count: int) -> tuple[mc.Consumer, list[mc.Message]]:
    consumer = client.subscribe(topic, "work")  # Exclusive
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(count):
        producer.send(f"c{i}".encode())
    producer.close()
    return consumer, [consumer.receive(RECEIVE_MS) for _ in range(count)]


def test_entries_a_pending_cumulative_ack_covers_are_not_redelivered_until_the_commit(
    broker: BrokerProcess, txn_client: mc.Client
) -> None:
    topic = _topic("commit")
    consumer, got = _filled(txn_client, topic, 6)
    txn = txn_client.new_transaction()
    consumer.acknowledge_cumulative(got[3], txn=txn)
    consumer.redeliver_unacknowledged_messages()
    # only what the acknowledgement does not cover comes again
    assert _until_quiet(consumer) == [(b"c4", 1), (b"c5", 1)]
    consumer.close()
    second = txn_client.subscribe(topic, "work")  # a new consumer of the subscription: the same
    assert [data for data, _ in _until_quiet(second)] == [b"c4", b"c5"]
    assert Admin(broker.http_url).backlog(topic, "work") == 6  # nothing acknowledged yet
    txn.commit()
    assert Admin(broker.http_url).backlog(topic, "work") == 2
    second.redeliver_unacknowledged_messages()
    assert [data for data, _ in _until_quiet(second)] == [b"c4", b"c5"]


def test_entries_a_pending_cumulative_ack_covers_come_back_once_after_the_abort(txn_client: mc.Client) -> None:
    topic = _topic("abort")
    consumer, got = _filled(txn_client, topic, 6)
    txn = txn_client.new_transaction()
    consumer.acknowledge_cumulative(got[3], txn=txn)
    consumer.redeliver_unacknowledged_messages()
    assert [data for data, _ in _until_quiet(consumer)] == [b"c4", b"c5"]
    txn.abort()
    # the client asks for everything unacknowledged again (as the Java client): each exactly once, in order
    assert [data for data, _ in _until_quiet(consumer)] == [f"c{i}".encode() for i in range(6)]
    done = txn_client.new_transaction()
    consumer.acknowledge_cumulative(got[5], txn=done)
    with pytest.raises(mc.TransactionConflict):  # another transaction on what this one holds
        consumer.acknowledge(got[1], txn=txn_client.new_transaction())
    done.commit()
    consumer.redeliver_unacknowledged_messages()
    assert _until_quiet(consumer) == []
