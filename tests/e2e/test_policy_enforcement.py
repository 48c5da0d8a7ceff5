"""Namespace and topic policies that are admission rules, enforced as Pulsar enforces them, seen
through the official client and magnetar.client alike: max consumers / subscriptions per topic,
max topics per namespace, enabled subscription types, auto subscription creation, encryption
required, max unacked messages per subscription and the schema flags. Each rule is set over REST
on a live broker (no restart) and removing it restores the broker's behaviour."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pulsar
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

import magnetar.client as magnetar_client
from magnetar.protocol.enums import CommandType, ServerError
from magnetar.protocol.framing import FrameDecoder, encode_command, encode_entry, encode_payload_command
from magnetar.protocol.schema import BaseCommand, MessageMetadata
from magnetar.testing import BrokerProcess

from .lifecycle_helpers import Admin, start_broker


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = start_broker(tmp_path_factory, "policy-enforcement-broker", {})
    yield proc
    proc.stop()


@pytest.fixture(params=["official", "magnetar"])
def api(request: pytest.FixtureRequest) -> ModuleType:
    """The client module under test: the official ``pulsar`` or ``magnetar.client``."""
    return pulsar if request.param == "official" else magnetar_client


@pytest.fixture
def client(api: ModuleType, broker: BrokerProcess) -> Iterator[Any]:
    # the official client retries SubscriptionNotFound and BrokerMetadataError until its operation
    # timeout, as it does against Pulsar: keep that short
    c = api.Client(broker.service_url, operation_timeout_seconds=3)
    yield c
    c.close()


def _says(api: ModuleType, refused: pytest.ExceptionInfo, reason: str) -> None:
    """magnetar.client's error carries the broker's reason (the official client's only its code)."""
    if api is magnetar_client:
        assert str(refused.value).endswith(reason), str(refused.value)


def _ns(broker: BrokerProcess, **policies: Any) -> tuple[Admin, str]:
    admin = Admin(broker)
    ns = admin.new_namespace("enforce")
    for path, value in policies.items():
        admin.set_namespace_policy(ns, path, value)
    return admin, ns


def test_max_consumers_per_topic(broker: BrokerProcess, api: ModuleType, client: Any) -> None:
    admin, ns = _ns(broker, maxConsumersPerTopic=2)
    topic = f"persistent://{ns}/t"
    shared = api.ConsumerType.Shared
    client.subscribe(topic, "a", consumer_type=shared)
    client.subscribe(topic, "b", consumer_type=shared)
    with pytest.raises(api.ConsumerBusy) as refused:
        client.subscribe(topic, "c", consumer_type=shared)
    _says(api, refused, "Topic reached max consumers limit")
    admin.set_topic_policy(topic, "maxConsumers", 3)  # the topic's own policy wins
    client.subscribe(topic, "c", consumer_type=shared)
    with pytest.raises(api.ConsumerBusy):
        client.subscribe(topic, "d", consumer_type=shared)
    admin.remove_topic_policy(topic, "maxConsumers")
    admin.remove_namespace_policy(ns, "maxConsumersPerTopic")
    client.subscribe(topic, "d", consumer_type=shared)


def test_max_subscriptions_per_topic(broker: BrokerProcess, api: ModuleType, client: Any) -> None:
    admin, ns = _ns(broker, maxSubscriptionsPerTopic=2)
    topic = f"persistent://{ns}/t"
    first = client.subscribe(topic, "a")
    client.subscribe(topic, "b")
    with pytest.raises(api.NotAllowedError) as refused:
        client.subscribe(topic, "c")
    _says(api, refused, f"Exceed the maximum number of subscriptions of the topic: {topic}")
    first.close()
    client.subscribe(topic, "a")  # an existing subscription is not a new one
    assert sorted(admin._ok("GET", f"{admin.topic_path(topic)}/subscriptions", status=200)) == ["a", "b"]
    admin.remove_namespace_policy(ns, "maxSubscriptionsPerTopic")
    client.subscribe(topic, "c")


def test_max_topics_per_namespace(broker: BrokerProcess, api: ModuleType, client: Any) -> None:
    admin, ns = _ns(broker, maxTopicsPerNamespace=2)
    client.create_producer(f"persistent://{ns}/t0").send(b"x")
    client.create_producer(f"persistent://{ns}/t1").send(b"x")
    with pytest.raises(api.NotAllowedError) as refused:
        client.create_producer(f"persistent://{ns}/t2")
    _says(api, refused, "Exceed maximum number of topics in namespace.")
    reply = admin.http.put(f"/admin/v2/persistent/{ns}/t3")
    assert (reply.status, reply.reason) == (412, "Exceed maximum number of topics in namespace.")
    reply = admin.http.put(f"/admin/v2/persistent/{ns}/pt/partitions", 1)
    assert (reply.status, reply.reason) == (412, "Exceed maximum number of topics in namespace.")
    admin.set_namespace_policy(ns, "maxTopicsPerNamespace", 4)
    assert admin.http.put(f"/admin/v2/persistent/{ns}/pt/partitions", 2).status == 204
    with pytest.raises(api.NotAllowedError):
        client.create_producer(f"persistent://{ns}/t2")
    admin.set_namespace_policy(ns, "autoTopicCreation",
                               {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 2})
    with pytest.raises(api.NotAllowedError):  # an auto-created partitioned topic counts its partitions
        client.create_producer(f"persistent://{ns}/apt")
    admin.set_namespace_policy(ns, "maxTopicsPerNamespace", 6)
    auto = client.create_producer(f"persistent://{ns}/apt")  # both partitions come into being
    auto.send(b"x")
    admin.remove_namespace_policy(ns, "maxTopicsPerNamespace")
    client.create_producer(f"persistent://{ns}/t2").send(b"x")


def test_subscription_types_enabled(broker: BrokerProcess, api: ModuleType, client: Any) -> None:
    admin, ns = _ns(broker, subscriptionTypesEnabled=["Shared", "Key_Shared"])
    topic = f"persistent://{ns}/t"
    with pytest.raises(api.NotAllowedError) as refused:
        client.subscribe(topic, "ex", consumer_type=api.ConsumerType.Exclusive)
    _says(api, refused, f"Topic[{{{topic}}}] doesn't support Exclusive sub type!")
    with pytest.raises(api.NotAllowedError):
        client.subscribe(topic, "fo", consumer_type=api.ConsumerType.Failover)
    consumer = client.subscribe(topic, "sh", consumer_type=api.ConsumerType.Shared)
    client.create_producer(topic).send(b"m")
    assert consumer.receive(timeout_millis=10_000).data() == b"m"
    admin.remove_namespace_policy(ns, "subscriptionTypesEnabled")
    client.subscribe(topic, "ex", consumer_type=api.ConsumerType.Exclusive)


def test_auto_subscription_creation(broker: BrokerProcess, api: ModuleType, client: Any) -> None:
    admin, ns = _ns(broker, autoSubscriptionCreation={"allowAutoSubscriptionCreation": False})
    topic = f"persistent://{ns}/t"
    client.create_producer(topic).send(b"before")
    with pytest.raises(api.SubscriptionNotFound if api is magnetar_client else api.Timeout) as refused:
        client.subscribe(topic, "new")
    _says(api, refused, "Subscription does not exist")
    reader = client.create_reader(topic, api.MessageId.earliest)  # non-durable: allowed
    assert reader.read_next(timeout_millis=10_000).data() == b"before"
    admin._ok("PUT", f"{admin.topic_path(topic)}/subscription/made?messageId=earliest")
    assert client.subscribe(topic, "made").receive(timeout_millis=10_000).data() == b"before"
    admin.set_topic_policy(topic, "autoSubscriptionCreation", {"allowAutoSubscriptionCreation": True})
    client.subscribe(topic, "new")


def _rsa_keys(tmp_path: Path) -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = tmp_path / "private.pem"
    public = tmp_path / "public.pem"
    private.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ))
    public.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ))
    return str(public), str(private)


def test_encryption_required(broker: BrokerProcess, api: ModuleType, client: Any, tmp_path: Path) -> None:
    admin, ns = _ns(broker, encryptionRequired=True)
    topic = f"persistent://{ns}/t"
    with pytest.raises(api.MetadataError if api is magnetar_client else api.Timeout) as refused:
        client.create_producer(topic)
    if api is magnetar_client:
        assert str(refused.value).endswith(f"Encryption is required in {topic}")
    public, private = _rsa_keys(tmp_path)
    reader = api.CryptoKeyReader(public, private)
    consumer = client.subscribe(topic, "s", crypto_key_reader=reader)
    producer = client.create_producer(topic, encryption_key="k1", crypto_key_reader=reader)
    producer.send(b"secret")
    assert consumer.receive(timeout_millis=10_000).data() == b"secret"
    admin.set_namespace_policy(ns, "encryptionRequired", False)
    client.create_producer(topic).send(b"plain")


def _frames(sock: socket.socket, decoder: FrameDecoder, want: int) -> BaseCommand:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for frame in decoder.feed(sock.recv(65536)):
            if frame.command.type == want:
                return frame.command
    raise AssertionError(f"no frame of type {want}")


def test_unencrypted_message_of_an_encrypting_producer_is_refused(broker: BrokerProcess) -> None:
    """A producer that declares encryption but sends a message without encryption keys gets
    SEND_ERROR MetadataError "Messages must be encrypted", and nothing is stored."""
    admin, ns = _ns(broker, encryptionRequired=True)
    topic = f"persistent://{ns}/t"
    host, port = broker.service_url.removeprefix("pulsar://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        decoder = FrameDecoder(5 * 1024 * 1024)
        connect = BaseCommand(type=CommandType.CONNECT)
        connect.connect.client_version = "raw"
        connect.connect.protocol_version = 21
        sock.sendall(encode_command(connect))
        _frames(sock, decoder, CommandType.CONNECTED)
        producer = BaseCommand(type=CommandType.PRODUCER)
        producer.producer.topic = topic
        producer.producer.producer_id = 1
        producer.producer.request_id = 1
        producer.producer.encrypted = True
        sock.sendall(encode_command(producer))
        _frames(sock, decoder, CommandType.PRODUCER_SUCCESS)
        send = BaseCommand(type=CommandType.SEND)
        send.send.producer_id = 1
        send.send.sequence_id = 0
        meta = MessageMetadata(producer_name="raw", sequence_id=0, publish_time=int(time.time() * 1000))
        sock.sendall(encode_payload_command(send, encode_entry(meta, b"plain")))
        error = _frames(sock, decoder, CommandType.SEND_ERROR).send_error
        assert (error.error, error.message) == (ServerError.MetadataError, "Messages must be encrypted")
    stats = admin._ok("GET", f"{admin.topic_path(topic)}/stats", status=200)
    assert stats["msgInCounter"] == 0


def test_max_unacked_messages_per_subscription(broker: BrokerProcess, api: ModuleType, client: Any) -> None:
    admin, ns = _ns(broker, maxUnackedMessagesPerSubscription=4)
    topic = f"persistent://{ns}/t"
    consumer = client.subscribe(topic, "s", consumer_type=api.ConsumerType.Shared, receiver_queue_size=100)
    producer = client.create_producer(topic)
    for i in range(10):
        producer.send(f"m{i}".encode())
    got = [consumer.receive(timeout_millis=10_000) for _ in range(4)]
    with pytest.raises(api.Timeout):
        consumer.receive(timeout_millis=1_500)  # dispatch stopped at 4 unacked
    for msg in got:
        consumer.acknowledge(msg)
    rest = [consumer.receive(timeout_millis=10_000).data() for _ in range(4)]
    assert [m.data() for m in got] + rest == [f"m{i}".encode() for i in range(8)]


def test_schema_flags(broker: BrokerProcess, api: ModuleType, client: Any) -> None:
    admin, ns = _ns(broker, schemaValidationEnforced=True)
    topic = f"persistent://{ns}/t"
    client.create_producer(topic, schema=api.schema.StringSchema()).send("typed")
    with pytest.raises(api.IncompatibleSchema):
        client.create_producer(topic)  # no schema on a topic that has one
    admin.set_namespace_policy(ns, "schemaValidationEnforced", False)
    client.create_producer(topic).send(b"raw")
    admin.set_namespace_policy(ns, "isAllowAutoUpdateSchema", False)
    other = f"persistent://{ns}/fresh"
    with pytest.raises(api.IncompatibleSchema):
        client.create_producer(other, schema=api.schema.StringSchema())
    admin.set_namespace_policy(ns, "isAllowAutoUpdateSchema", True)
    client.create_producer(other, schema=api.schema.StringSchema()).send("ok")


def test_schema_auto_update_strategy(broker: BrokerProcess, api: ModuleType, client: Any) -> None:
    """AutoUpdateDisabled (the namespace strategy while schemaCompatibilityStrategy is unset) refuses
    a new schema version; Forward takes one the old readers can read."""

    class V1(api.schema.Record):
        name = api.schema.String()

    class V2(api.schema.Record):
        name = api.schema.String()
        age = api.schema.Integer()

    V1.__name__ = V2.__name__ = "User"  # one record name, two versions
    admin, ns = _ns(broker)
    admin._ok("PUT", f"/admin/v2/namespaces/{ns}/schemaAutoUpdateCompatibilityStrategy", "AutoUpdateDisabled")
    topic = f"persistent://{ns}/t"
    client.create_producer(topic, schema=api.schema.AvroSchema(V1)).send(V1(name="a"))
    with pytest.raises(api.IncompatibleSchema):
        client.create_producer(topic, schema=api.schema.AvroSchema(V2))
    admin._ok("PUT", f"/admin/v2/namespaces/{ns}/schemaAutoUpdateCompatibilityStrategy", "Forward")
    client.create_producer(topic, schema=api.schema.AvroSchema(V2)).send(V2(name="b", age=3))
