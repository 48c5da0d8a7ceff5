"""Broker limits with the official client: producers per topic (ProducerBusy), consumers per
subscription and per topic (ConsumerBusy), topics per namespace (NotAllowedError), connections
in all and per IP address (the connection is closed at once: the client cannot connect), and the
namespace / topic policies maxProducersPerTopic / maxConsumersPerSubscription set over REST on
live topics, overriding the broker settings and falling back to them when removed."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pulsar
import pytest

from magnetar.protocol.enums import CommandType
from magnetar.protocol.framing import FrameDecoder, encode_command
from magnetar.protocol.schema import BaseCommand
from magnetar.testing import BrokerProcess

from .lifecycle_helpers import Admin, ClientPool, start_broker


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = start_broker(
        tmp_path_factory,
        "limits-broker",
        {
            "MAGNETAR_MAX_PRODUCERS_PER_TOPIC": "2",
            "MAGNETAR_MAX_CONSUMERS_PER_SUBSCRIPTION": "1",
            "MAGNETAR_MAX_CONSUMERS_PER_TOPIC": "3",
            "MAGNETAR_MAX_TOPICS_PER_NAMESPACE": "3",
        },
    )
    yield proc
    proc.stop()


@pytest.fixture
def clients() -> Iterator[ClientPool]:
    pool = ClientPool()
    yield pool
    pool.close()


def test_max_producers_per_topic(broker: BrokerProcess, clients) -> None:
    admin = Admin(broker)
    topic = f"persistent://{admin.new_namespace('limits')}/t"
    client = clients(broker)
    p1 = client.create_producer(topic)
    p2 = clients(broker).create_producer(topic)  # another connection counts the same
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic)
    p2.close()
    p3 = client.create_producer(topic)  # a slot is free again
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic)
    p1.send(b"a")
    p3.send(b"b")


def test_max_consumers_per_subscription_and_topic(broker: BrokerProcess, clients) -> None:
    admin = Admin(broker)
    topic = f"persistent://{admin.new_namespace('limits')}/t"
    client = clients(broker)
    shared = pulsar.ConsumerType.Shared
    c1 = client.subscribe(topic, "shared", consumer_type=shared)
    with pytest.raises(pulsar.ConsumerBusy):
        clients(broker).subscribe(topic, "shared", consumer_type=shared)
    # per topic: 3 consumers over all subscriptions
    client.subscribe(topic, "second", consumer_type=shared)
    client.subscribe(topic, "third", consumer_type=shared)
    with pytest.raises(pulsar.ConsumerBusy):
        client.subscribe(topic, "fourth", consumer_type=shared)
    c1.close()
    c1 = client.subscribe(topic, "shared", consumer_type=shared)
    producer = client.create_producer(topic)
    producer.send(b"still works")
    assert c1.receive(timeout_millis=10_000).data() == b"still works"


def test_max_topics_per_namespace(broker: BrokerProcess, clients) -> None:
    admin = Admin(broker)
    ns = admin.new_namespace("limits")
    client = clients(broker)
    for i in range(3):
        client.create_producer(f"persistent://{ns}/t{i}").send(b"x")
    with pytest.raises(pulsar.NotAllowedError):
        client.create_producer(f"persistent://{ns}/t3")
    with pytest.raises(pulsar.NotAllowedError):
        client.subscribe(f"persistent://{ns}/t4", "s")
    # nor over REST (412, as Pulsar answers)
    reply = admin.http.put(f"/admin/v2/persistent/{ns}/t5")
    assert reply.status == 412 and reply.reason == "Exceed maximum number of topics in namespace."
    # existing topics stay usable; another namespace has its own count
    client.create_producer(f"persistent://{ns}/t0").send(b"y")
    client.create_producer(f"persistent://{admin.new_namespace('limits')}/t3").send(b"z")
    assert sorted(admin.http.get(f"/admin/v2/persistent/{ns}").json()) == [
        f"persistent://{ns}/t{i}" for i in range(3)
    ]


def test_namespace_and_topic_policies_apply_to_live_topics(broker: BrokerProcess, clients) -> None:
    admin = Admin(broker)
    ns = admin.new_namespace("limits")
    topic = f"persistent://{ns}/t"
    client = clients(broker)
    p1 = client.create_producer(topic)

    # namespace maxProducersPerTopic 1 beats the broker's 2 on the loaded topic
    admin.set_namespace_policy(ns, "maxProducersPerTopic", 1)
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic)
    # the topic's own maxProducers beats its namespace's
    admin.set_topic_policy(topic, "maxProducers", 3)
    extra = [client.create_producer(topic) for _ in range(2)]
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic)
    for p in extra:
        p.close()
    admin.remove_topic_policy(topic, "maxProducers")
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic)
    # without a policy the broker's 2 applies again
    admin.remove_namespace_policy(ns, "maxProducersPerTopic")
    client.create_producer(topic)
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic)
    p1.send(b"ok")

    # maxConsumersPerSubscription 2 on the namespace beats the broker's 1 (a live Shared subscription)
    shared = pulsar.ConsumerType.Shared
    client.subscribe(topic, "s", consumer_type=shared)
    with pytest.raises(pulsar.ConsumerBusy):
        client.subscribe(topic, "s", consumer_type=shared)
    admin.set_namespace_policy(ns, "maxConsumersPerSubscription", 2)
    c2 = client.subscribe(topic, "s", consumer_type=shared)
    with pytest.raises(pulsar.ConsumerBusy):
        client.subscribe(topic, "s", consumer_type=shared)
    c2.close()
    admin.remove_namespace_policy(ns, "maxConsumersPerSubscription")
    with pytest.raises(pulsar.ConsumerBusy):
        client.subscribe(topic, "s", consumer_type=shared)


# -- connections ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def connection_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = start_broker(
        tmp_path_factory,
        "connections-broker",
        {"MAGNETAR_MAX_CONNECTIONS": "3", "MAGNETAR_MAX_CONNECTIONS_PER_IP": "2"},
    )
    yield proc
    proc.stop()


def raw_connect(broker: BrokerProcess, source: str) -> socket.socket | None:
    """A binary-protocol connection from ``source`` (a loopback address): the socket when the broker
    answers CONNECT with CONNECTED, None when it closes the connection instead."""
    sock = socket.create_connection(("127.0.0.1", broker.port), timeout=5, source_address=(source, 0))
    cmd = BaseCommand(type=CommandType.CONNECT)
    cmd.connect.client_version = "limits-test"
    cmd.connect.protocol_version = 20
    try:
        sock.sendall(encode_command(cmd))
        decoder = FrameDecoder(5 * 1024 * 1024)
        while True:
            data = sock.recv(65536)
            if not data:
                sock.close()
                return None
            frames = decoder.feed(data)
            if frames:
                assert frames[0].command.type == CommandType.CONNECTED
                return sock
    except (ConnectionResetError, BrokenPipeError):
        sock.close()
        return None


def refused_client(pool: ClientPool, broker: BrokerProcess) -> None:
    """A client of ``broker`` cannot create a producer: its connections are closed at once."""
    client = pool(broker, operation_timeout_seconds=3, connection_timeout_ms=1_000)
    started = time.monotonic()
    with pytest.raises((pulsar.ConnectError, pulsar.Timeout)):
        client.create_producer("persistent://public/default/refused")
    assert time.monotonic() - started < 10
    client.close()


def test_max_connections_total_and_per_ip(connection_broker: BrokerProcess, clients) -> None:
    broker = connection_broker
    # two official clients (one connection each) from 127.0.0.1: the per-IP maximum
    c1, c2 = clients(broker), clients(broker)
    p1 = c1.create_producer("persistent://public/default/conn")
    p2 = c2.create_producer("persistent://public/default/conn")
    refused_client(clients, broker)
    # another address is not limited by 127.0.0.1's count: the third connection in all
    other = raw_connect(broker, "127.0.0.2")
    assert other is not None
    try:
        # the fourth connection is refused whatever its address
        assert raw_connect(broker, "127.0.0.3") is None
    finally:
        other.close()
    # with 127.0.0.2 gone, a third address may connect again; 127.0.0.1 is still at its maximum
    again = None
    deadline = time.monotonic() + 5
    while again is None and time.monotonic() < deadline:
        again = raw_connect(broker, "127.0.0.3")
        if again is None:
            time.sleep(0.1)
    assert again is not None
    again.close()
    refused_client(clients, broker)
    # existing connections were never affected
    p1.send(b"one")
    p2.send(b"two")
    # once a client leaves, 127.0.0.1 may connect again
    c2.close()
    deadline = time.monotonic() + 10
    c3 = clients(broker, operation_timeout_seconds=3, connection_timeout_ms=1_000)
    while True:
        try:
            c3.create_producer("persistent://public/default/conn").send(b"three")
            break
        except (pulsar.ConnectError, pulsar.Timeout):
            assert time.monotonic() < deadline, "no connection after a client left"
