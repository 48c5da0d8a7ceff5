"""The same service tested with unittest: a broker for the class, a namespace per test."""

from __future__ import annotations

import unittest
import uuid

from payments import Order, PaymentWorker, publish_orders, publish_orders_async

import magnetar.client as pulsar
from magnetar.testing import Broker


class PaymentWorkerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.broker = Broker().start()
        cls.addClassCleanup(cls.broker.stop)

    def setUp(self) -> None:
        namespace = f"public/{uuid.uuid4().hex[:12]}"
        self.broker.admin.create_namespace(namespace)
        self.addCleanup(self.broker.admin.delete_namespace, namespace, force=True)
        self.topic = f"persistent://{namespace}/orders"
        self.client = pulsar.Client(self.broker.service_url)
        self.addCleanup(self.client.close)  # cleanups run last-in first-out: the client closes first

    def test_orders_are_charged(self) -> None:
        charged = []
        worker = PaymentWorker(self.client, self.topic, lambda order: charged.append(order.id))
        publish_orders(self.client, self.topic, [Order("a", 1), Order("b", 2)])
        self.assertEqual([worker.process_one(), worker.process_one()], [("a", "charged"), ("b", "charged")])
        self.assertEqual(charged, ["a", "b"])


class AsyncPublisherTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        self.broker = await Broker().astart()
        self.client = pulsar.AsyncClient(self.broker.service_url)

    async def asyncTearDown(self) -> None:
        await self.client.close()
        await self.broker.astop()

    async def test_publish(self) -> None:
        consumer = await self.client.subscribe("public/default/orders", "check")
        self.assertEqual(await publish_orders_async(self.client, "public/default/orders", [Order("a", 1)]), 1)
        self.assertEqual((await consumer.receive()).data(), b'{"id": "a", "amount_cents": 1}')
