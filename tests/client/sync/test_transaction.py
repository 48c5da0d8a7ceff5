"""The sync face's Transaction: a wrapper of the core's on the client's loop thread, accepted as
``txn=`` by the sync producer and consumer (and the core's AsyncTransaction too); a partitioned
producer registers each partition it sends to."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from magnetar.client import AsyncTransaction, Client, TransactionState
from magnetar.client.sync.transaction import Transaction, core_of
from magnetar.testing import BrokerProcess

from ..conftest import RECEIVE_MS, create_partitioned_topic


def test_sync_transaction_over_a_partitioned_topic(
    broker: BrokerProcess, url: str, client_factory: Callable[..., Client], topic: str
) -> None:
    create_partitioned_topic(broker, topic, 3)
    client = client_factory(url, enable_transaction=True)
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, batching_enabled=False)
    txn = client.new_transaction()
    assert isinstance(txn, Transaction) and isinstance(txn.core, AsyncTransaction)
    assert core_of(txn) is txn.core and core_of(txn.core) is txn.core and core_of(None) is None
    assert repr(txn) == f"<Transaction ({txn.id()[0]},{txn.id()[1]}) OPEN>"
    for i in range(9):
        producer.send(f"p{i}".encode(), txn=txn)
    # the core's transaction is accepted as well
    producer.send(b"core", txn=txn.core)
    registered: Any = txn.core._partitions
    assert sorted(registered) == [f"{topic}-partition-{i}" for i in range(3)]
    txn.commit()
    assert txn.state() is TransactionState.COMMITTED
    got = sorted(consumer.receive(RECEIVE_MS).data() for _ in range(10))
    assert got == sorted([f"p{i}".encode() for i in range(9)] + [b"core"])
