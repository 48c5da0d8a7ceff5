"""The messages opened from one entry share a MessageEntry (client/api/message.py): what a
magnetar consumer's messages say through every public accessor equals what the official client's
messages of the same entries say, for batched, single, compressed, chunked and encrypted entries;
the messages of one batch share one entry object, those of different entries do not; a message
outlives its consumer and client."""

from __future__ import annotations

import gc
import random
from typing import Any

import pulsar
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from magnetar.client import Client, CryptoKeyReader, InitialPosition
from magnetar.client.api.message import PlainMessage

from ..conftest import RECEIVE_MS

MiB = 1 << 20


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(public, private) PEM paths of an RSA key pair."""
    directory = tmp_path_factory.mktemp("entry-keys")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public, private = directory / "app.pub.pem", directory / "app.key.pem"
    public.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    private.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()))
    return str(public), str(private)


def _view(msg: Any) -> tuple:
    """Everything the public accessors say about a message, in plain types."""
    mid = msg.message_id()
    return (
        msg.data(), msg.value(), msg.properties(), msg.partition_key(), msg.ordering_key(), msg.publish_timestamp(),
        msg.event_timestamp(), (mid.ledger_id(), mid.entry_id(), mid.batch_index(), mid.partition()),
        msg.topic_name(), msg.redelivery_count(), msg.producer_name(), bytes(msg.schema_version().encode() if msg.schema_version() else b""),
    )


#: (producer options, payloads): batched and single entries, a compressed batch, encrypted batches
#: and single entries, a chunked message
CASES: dict[str, tuple[dict[str, Any], list[bytes]]] = {
    "batched": ({"batching_enabled": True}, [b"batched %d" % i for i in range(40)]),
    "single": ({"batching_enabled": False}, [b"single %d" % i for i in range(10)]),
    "compressed": ({"batching_enabled": True, "compression_type": "LZ4"}, [b"z%d" % i * 50 for i in range(40)]),
    "encrypted-batch": ({"batching_enabled": True, "encryption_key": "app"}, [b"secret %d" % i for i in range(30)]),
    "encrypted-single": ({"batching_enabled": False, "encryption_key": "app"}, [b"sealed %d" % i for i in range(5)]),
    "chunked": ({"batching_enabled": False, "chunking_enabled": True}, [random.Random(5).randbytes(6 * MiB), b"after"]),
}


def _produce(official: pulsar.Client, topic: str, options: dict[str, Any], payloads: list[bytes],
             keys: tuple[str, str]) -> None:
    options = dict(options, batching_max_publish_delay_ms=50, send_timeout_millis=30_000)
    if "compression_type" in options:
        options["compression_type"] = pulsar.CompressionType.LZ4
    if "encryption_key" in options:
        options["crypto_key_reader"] = pulsar.CryptoKeyReader(*keys)
    producer = official.create_producer(topic, **options)
    for i, payload in enumerate(payloads):
        extra: dict[str, Any] = {"properties": {"i": str(i)}, "event_timestamp": 1000 + i} if i % 3 else {}
        if i % 4 == 1:
            extra["partition_key"] = f"key-{i}"
        producer.send_async(payload, None, **extra)
    producer.flush()
    producer.close()


@pytest.mark.parametrize("case", list(CASES))
def test_accessors_say_what_the_official_clients_say(
    client: Client, official: pulsar.Client, topic: str, keys: tuple[str, str], case: str
) -> None:
    options, payloads = CASES[case]
    crypto = {"crypto_key_reader": CryptoKeyReader(*keys)} if "encryption_key" in options else {}
    ours = client.subscribe(topic, "ours", initial_position=InitialPosition.Earliest, **crypto)
    theirs = official.subscribe(
        topic, "theirs", initial_position=pulsar.InitialPosition.Earliest,
        **({"crypto_key_reader": pulsar.CryptoKeyReader(*keys)} if crypto else {}),
    )
    _produce(official, topic, options, payloads, keys)
    got = [ours.receive(RECEIVE_MS) for _ in payloads]
    reference = [theirs.receive(RECEIVE_MS) for _ in payloads]
    assert [m.data() for m in got] == payloads
    assert [_view(m) for m in got] == [_view(m) for m in reference]
    assert [m.sequence_id() for m in got] == list(range(len(payloads)))
    batched = options["batching_enabled"]
    assert any(m.message_id().batch_index() > 0 for m in got) == batched
    if case == "single":  # opened on the hot path: no batch index nor single metadata of their own
        assert all(type(m) is PlainMessage and m._index is None and m._single is None for m in got)
    if case == "chunked":
        assert got[0].message_id().is_chunked() and not got[1].message_id().is_chunked()
    if crypto:
        assert all(m.encryption_context() is not None for m in got)
    for m in got:
        ours.acknowledge(m)


def test_the_messages_of_one_entry_share_it_and_only_they_do(client: Client, official: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "s", initial_position=InitialPosition.Earliest)
    producer = official.create_producer(topic, batching_enabled=True, batching_max_messages=10,
                                        batching_max_publish_delay_ms=1000)
    for i in range(30):
        producer.send_async(b"m%d" % i, None)
    producer.flush()
    got = [consumer.receive(RECEIVE_MS) for _ in range(30)]
    entries = [m.message_id().entry_id() for m in got]
    assert entries == sorted(entries) and len(set(entries)) == 3
    for a in got:
        for b in got:
            assert (a._ctx is b._ctx) == (a.message_id().entry_id() == b.message_id().entry_id())
    # one entry's messages answer for themselves: own payload, index and sequence id
    first_entry = [m for m in got if m._ctx is got[0]._ctx]
    assert [m.data() for m in first_entry] == [b"m%d" % i for i in range(10)]
    assert [m.message_id().batch_index() for m in first_entry] == list(range(10))
    assert [m.sequence_id() for m in first_entry] == list(range(10))
    consumer.acknowledge_cumulative(got[-1])


def test_a_message_outlives_its_consumer_and_client(url: str, official: pulsar.Client, topic: str) -> None:
    producer = official.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=50)
    for i in range(5):
        producer.send_async(b"kept %d" % i, None, properties={"i": str(i)}, partition_key=f"k{i}")
    producer.flush()
    official.create_producer(topic, batching_enabled=False).send(b"alone", properties={"last": "yes"})
    client = Client(url, operation_timeout_seconds=10)
    consumer = client.subscribe(topic, "s", initial_position=InitialPosition.Earliest)
    got = [consumer.receive(RECEIVE_MS) for _ in range(6)]
    consumer.close()
    client.close()
    del consumer, client
    gc.collect()
    # nothing was asked of them before: their ids and metadata are made from what they kept
    assert [m.data() for m in got] == [b"kept %d" % i for i in range(5)] + [b"alone"]
    assert [m.properties() for m in got] == [{"i": str(i)} for i in range(5)] + [{"last": "yes"}]
    assert [m.partition_key() for m in got] == [f"k{i}" for i in range(5)] + [""]
    assert [m.message_id().batch_index() for m in got][:5] == list(range(5))
    assert got[5].message_id().entry_id() > got[0].message_id().entry_id()
    assert {m.topic_name() for m in got} == {topic}
    assert all(m.publish_timestamp() > 0 and m.redelivery_count() == 0 for m in got)


def test_a_message_made_by_hand_has_its_own_entry() -> None:
    from magnetar.client import MessageId
    from magnetar.client.api.message import Message
    from magnetar.protocol.schema import MessageMetadata, SingleMessageMetadata

    meta = MessageMetadata(producer_name="p", sequence_id=7, publish_time=99, num_messages_in_batch=3)
    single = SingleMessageMetadata(payload_size=1, partition_key="k")
    msg = Message(b"x", meta, single, MessageId(4, 5, 2, 1, 3, "t"), "t", 2)
    assert (msg.data(), msg.partition_key(), msg.publish_timestamp(), msg.redelivery_count()) == (b"x", "k", 99, 2)
    assert (msg.sequence_id(), msg.topic_name(), str(msg.message_id())) == (9, "t", "(4,5,1,2)")
    assert msg._ctx.consumer is None and msg._ctx.meta is meta
