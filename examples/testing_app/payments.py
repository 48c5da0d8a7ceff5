"""A payments service: orders come in on a topic, each is charged once; a charge that fails for a
while goes through the retry topic, one that keeps failing ends in the dead letter topic.

Written against the official Python client's API (``import magnetar.client as pulsar`` here; the
same code runs with ``import pulsar``). Its tests, in this directory, use magnetar's pytest plugin:
see docs/TESTING.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass

import magnetar.client as pulsar

#: the subscription of the payment workers
SUBSCRIPTION = "payments"
#: the subscription the dead letter topic is created with, so nothing dead-lettered is lost
AUDIT_SUBSCRIPTION = "audit"


@dataclass(frozen=True)
class Order:
    """An order to charge."""

    id: str
    amount_cents: int


class PaymentUnavailable(Exception):
    """The payment provider failed for now: the charge is tried again later."""


def publish_orders(client: pulsar.Client, topic: str, orders: Iterable[Order]) -> int:
    """Publish ``orders`` (JSON, keyed by order id); how many were published."""
    producer = client.create_producer(topic)
    count = 0
    for order in orders:
        producer.send(json.dumps(asdict(order)).encode(), partition_key=order.id)
        count += 1
    producer.flush()
    producer.close()
    return count


async def publish_orders_async(client: pulsar.AsyncClient, topic: str, orders: Iterable[Order]) -> int:
    """:func:`publish_orders` with the asyncio client."""
    producer = await client.create_producer(topic)
    count = 0
    for order in orders:
        await producer.send(json.dumps(asdict(order)).encode(), partition_key=order.id)
        count += 1
    await producer.close()
    return count


def dead_letter_topic(topic: str) -> str:
    """Where orders that kept failing go."""
    return f"{topic}-DLQ"


class PaymentWorker:
    """Charges the orders of ``topic`` with ``charge``; retries an order ``max_retries`` times through
    the retry topic (after ``retry_delay`` seconds), then hands it to the dead letter topic."""

    def __init__(self, client: pulsar.Client, topic: str, charge: Callable[[Order], None], *,
                 max_retries: int = 3, retry_delay: float = 1.0) -> None:
        self.charge = charge
        self.max_retries = max_retries
        self.retry_delay = retry_delay
        self.consumer = client.subscribe(
            topic, SUBSCRIPTION, consumer_type=pulsar.ConsumerType.Shared, retry_enable=True,
            dead_letter_policy=pulsar.ConsumerDeadLetterPolicy(
                max_redeliver_count=max_retries, dead_letter_topic=dead_letter_topic(topic),
                initial_subscription_name=AUDIT_SUBSCRIPTION),
        )

    def process_one(self, timeout_ms: int = 5000) -> tuple[str, str]:
        """Take one order and charge it: (order id, "charged" | "retry" | "dead-lettered")."""
        message = self.consumer.receive(timeout_ms)
        order = Order(**json.loads(message.data()))
        try:
            self.charge(order)
        except PaymentUnavailable:
            retried = int(message.properties().get("RECONSUMETIMES", "0"))
            self.consumer.reconsume_later(message, self.retry_delay)
            return order.id, "dead-lettered" if retried >= self.max_retries else "retry"
        self.consumer.acknowledge(message)
        return order.id, "charged"

    def close(self) -> None:
        """Close the consumer (and its retry and dead letter producers)."""
        self.consumer.close()
