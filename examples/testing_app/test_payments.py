"""The payments service's tests, written with magnetar's pytest plugin (no set-up of their own: the
plugin starts a broker for the session; each test gets a fresh namespace, a topic and a client)."""

from __future__ import annotations

import pytest
from payments import (
    AUDIT_SUBSCRIPTION,
    SUBSCRIPTION,
    Order,
    PaymentUnavailable,
    PaymentWorker,
    dead_letter_topic,
    publish_orders,
    publish_orders_async,
)

ORDERS = [Order("o1", 1200), Order("o2", 350), Order("o3", 9900)]


class FlakyProvider:
    """A payment provider that fails for the orders in ``failures`` (order id -> how many times)."""

    def __init__(self, failures: dict[str, int] | None = None) -> None:
        self.failures = dict(failures or {})
        self.charged: list[str] = []

    def __call__(self, order: Order) -> None:
        if self.failures.get(order.id, 0) > 0:
            self.failures[order.id] -= 1
            raise PaymentUnavailable(order.id)
        self.charged.append(order.id)


@pytest.fixture
def provider() -> FlakyProvider:
    return FlakyProvider()


@pytest.fixture
def worker(pulsar_client, pulsar_topic, provider):
    worker = PaymentWorker(pulsar_client, pulsar_topic, provider, retry_delay=0)
    yield worker
    worker.close()


def test_every_order_is_charged_once_in_order(pulsar_client, pulsar_topic, worker, provider):
    assert publish_orders(pulsar_client, pulsar_topic, ORDERS) == 3
    assert [worker.process_one() for _ in ORDERS] == [("o1", "charged"), ("o2", "charged"), ("o3", "charged")]
    assert provider.charged == ["o1", "o2", "o3"]


def test_a_failed_charge_comes_back_through_the_retry_topic(pulsar_broker, pulsar_client, pulsar_topic, worker,
                                                            provider):
    provider.failures["o2"] = 1
    publish_orders(pulsar_client, pulsar_topic, ORDERS)
    outcomes = [worker.process_one() for _ in range(4)]
    assert outcomes[:3] == [("o1", "charged"), ("o2", "retry"), ("o3", "charged")]
    assert outcomes[3] == ("o2", "charged")
    assert provider.charged == ["o1", "o3", "o2"]
    retry_topic = f"{pulsar_topic}-{SUBSCRIPTION}-RETRY"
    assert pulsar_broker.admin.topic_stats(retry_topic)["msgInCounter"] == 1
    assert pulsar_broker.admin.backlog(pulsar_topic, SUBSCRIPTION) == 0


def test_an_order_that_keeps_failing_ends_in_the_dead_letter_topic(pulsar_client, pulsar_topic, worker, provider):
    provider.failures["o1"] = 99
    publish_orders(pulsar_client, pulsar_topic, ORDERS[:1])
    outcomes = [worker.process_one() for _ in range(4)]
    assert outcomes == [("o1", "retry")] * 3 + [("o1", "dead-lettered")]
    audit = pulsar_client.subscribe(dead_letter_topic(pulsar_topic), AUDIT_SUBSCRIPTION)
    dead = audit.receive(5000)
    assert dead.data() == b'{"id": "o1", "amount_cents": 1200}'
    assert dead.properties()["REAL_TOPIC"] == pulsar_topic
    assert provider.charged == []


def test_the_same_topic_name_in_another_test_starts_empty(pulsar_client, pulsar_topic, worker, provider):
    """Every test above used a topic of this name in its own namespace: none of their orders is here."""
    publish_orders(pulsar_client, pulsar_topic, [Order("o9", 1)])
    assert worker.process_one() == ("o9", "charged")


@pytest.mark.anyio
async def test_the_async_publisher(async_pulsar_client, pulsar_topic):
    consumer = await async_pulsar_client.subscribe(pulsar_topic, "check")
    assert await publish_orders_async(async_pulsar_client, pulsar_topic, ORDERS) == 3
    keys = [(await consumer.receive()).partition_key() for _ in ORDERS]
    assert keys == ["o1", "o2", "o3"]
