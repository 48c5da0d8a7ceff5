"""End-to-end encryption: magnetar's client and the official client read each other's encrypted
messages (batched or not, compressed or not), and a consumer that cannot decrypt gets what its
crypto_failure_action says. Key pairs are made by the fixtures (no key files in the tree)."""

from __future__ import annotations

from pathlib import Path

import pulsar
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from magnetar.client import (
    Client,
    CompressionType,
    ConsumerCryptoFailureAction,
    CryptoKeyReader,
    InitialPosition,
    Timeout,
)
from magnetar.client.core.crypto import MessageDecryptor, MessageEncryptor
from magnetar.client.exceptions import CryptoError
from magnetar.protocol.compression import decompress
from magnetar.protocol.schema import MessageMetadata

from ..conftest import RECEIVE_MS

N = 30


def _key_pair(directory: Path, name: str) -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = directory / f"{name}.pub.pem"
    private = directory / f"{name}.key.pem"
    public.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    private.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()))
    return str(public), str(private)


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(public, private) PEM paths of an RSA key pair."""
    return _key_pair(tmp_path_factory.mktemp("keys"), "app")


@pytest.fixture(scope="module")
def other_keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A second RSA key pair, which cannot open what the first encrypted."""
    return _key_pair(tmp_path_factory.mktemp("other-keys"), "other")


def _payloads() -> list[bytes]:
    return [(b"secret %d " % i) * (1 + i % 7) for i in range(N)]


def test_the_wire_format_is_pulsars(keys: tuple[str, str]) -> None:
    reader = CryptoKeyReader(*keys)
    reader.load()
    meta = MessageMetadata(producer_name="p", sequence_id=0, publish_time=1)
    ciphertext = MessageEncryptor(["app"], reader).encrypt(meta, b"hello")
    assert [k.key for k in meta.encryption_keys] == ["app"]
    assert len(meta.encryption_keys[0].value) == 256  # RSA-2048 OAEP
    assert len(meta.encryption_param) == 12
    assert len(ciphertext) == len(b"hello") + 16  # AES-GCM tag after the ciphertext
    private = serialization.load_pem_private_key(Path(keys[1]).read_bytes(), None)
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    data_key = private.decrypt(meta.encryption_keys[0].value, padding.OAEP(
        mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA1(), label=None))
    assert len(data_key) == 32
    assert AESGCM(data_key).decrypt(meta.encryption_param, ciphertext, None) == b"hello"
    assert MessageDecryptor(reader).decrypt(meta, ciphertext) == b"hello"


@pytest.mark.parametrize("batching", [False, True], ids=["single", "batched"])
@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.LZ4, CompressionType.ZSTD], ids=lambda c: c.name)
def test_ours_encrypt_official_decrypts(
    client: Client, official: pulsar.Client, topic: str, keys: tuple[str, str], batching: bool, codec: CompressionType
) -> None:
    consumer = official.subscribe(topic, "official", initial_position=pulsar.InitialPosition.Earliest,
                                  crypto_key_reader=pulsar.CryptoKeyReader(*keys))
    producer = client.create_producer(topic, encryption_key="app", crypto_key_reader=CryptoKeyReader(*keys),
                                      compression_type=codec, batching_enabled=batching, batching_max_publish_delay_ms=50)
    payloads = _payloads()
    for i, p in enumerate(payloads):
        producer.send_async(p, None, properties={"i": str(i)})
    producer.flush()
    got = [consumer.receive(RECEIVE_MS) for _ in payloads]
    assert [m.data() for m in got] == payloads
    assert [m.properties()["i"] for m in got] == [str(i) for i in range(N)]
    context = got[0].encryption_context()
    assert context is not None and not context.is_decryption_failed()
    assert [k.key for k in context.keys()] == ["app"]


@pytest.mark.parametrize("batching", [False, True], ids=["single", "batched"])
@pytest.mark.parametrize("codec", [pulsar.CompressionType.NONE, pulsar.CompressionType.ZLib], ids=["NONE", "ZLib"])
def test_official_encrypts_ours_decrypt(
    client: Client, official: pulsar.Client, topic: str, keys: tuple[str, str], batching: bool, codec: object
) -> None:
    consumer = client.subscribe(topic, "ours", initial_position=InitialPosition.Earliest,
                                crypto_key_reader=CryptoKeyReader(*keys))
    producer = official.create_producer(topic, encryption_key="app", crypto_key_reader=pulsar.CryptoKeyReader(*keys),
                                        compression_type=codec, batching_enabled=batching,
                                        batching_max_publish_delay_ms=50)
    payloads = _payloads()
    for p in payloads:
        producer.send_async(p, None)
    producer.flush()
    got = [consumer.receive(RECEIVE_MS) for _ in payloads]
    assert [m.data() for m in got] == payloads
    context = got[0].encryption_context()
    assert context is not None and not context.is_decryption_failed()
    assert [k.key for k in context.keys()] == ["app"] and len(context.param()) == 12
    for m in got:
        consumer.acknowledge(m)


def _encrypted_topic(client: Client, topic: str, keys: tuple[str, str], batched: bool) -> list[bytes]:
    producer = client.create_producer(topic, encryption_key="app", crypto_key_reader=CryptoKeyReader(*keys),
                                      compression_type=CompressionType.LZ4, batching_enabled=batched,
                                      batching_max_publish_delay_ms=50)
    payloads = _payloads()[:5]
    for p in payloads:
        producer.send_async(p, None)
    producer.flush()
    return payloads


@pytest.mark.parametrize("batched", [False, True], ids=["single", "batched"])
def test_consume_delivers_encrypted_with_the_context(
    client: Client, topic: str, keys: tuple[str, str], other_keys: tuple[str, str], batched: bool
) -> None:
    payloads = _encrypted_topic(client, topic, keys, batched)
    consumer = client.subscribe(topic, "consume", initial_position=InitialPosition.Earliest,
                                crypto_key_reader=CryptoKeyReader(*other_keys),
                                crypto_failure_action=ConsumerCryptoFailureAction.CONSUME)
    messages = [consumer.receive(RECEIVE_MS) for _ in range(1 if batched else 5)]
    with pytest.raises(Timeout):
        consumer.receive(500)
    for m in messages:
        context = m.encryption_context()
        assert context.is_decryption_failed()
        assert context.compression_type() == CompressionType.LZ4
        assert context.batch_size() == (5 if batched else -1)
        data_key = MessageDecryptor(CryptoKeyReader(*keys))._data_key(m._metadata().encryption_keys[0])
        opened = AESGCM(data_key).decrypt(context.param(), m.data(), None)
        assert decompress(CompressionType.LZ4, opened, context.uncompressed_message_size()) != m.data()
    if not batched:
        assert [decompress(CompressionType.LZ4, AESGCM(MessageDecryptor(CryptoKeyReader(*keys))._data_key(
            m._metadata().encryption_keys[0])).decrypt(m.encryption_context().param(), m.data(), None),
            m.encryption_context().uncompressed_message_size()) for m in messages] == payloads


def test_discard_drops_and_fail_withholds(
    client: Client, topic: str, keys: tuple[str, str], other_keys: tuple[str, str]
) -> None:
    _encrypted_topic(client, topic, keys, False)
    failing = client.subscribe(topic, "fail", initial_position=InitialPosition.Earliest,
                               crypto_key_reader=CryptoKeyReader(*other_keys))
    with pytest.raises(Timeout):
        failing.receive(1500)
    failing.close()
    # FAIL left them unacknowledged: a consumer with the key gets all five
    keyed = client.subscribe(topic, "fail", initial_position=InitialPosition.Earliest,
                             crypto_key_reader=CryptoKeyReader(*keys))
    assert [keyed.receive(RECEIVE_MS).data() for _ in range(5)] == _payloads()[:5]
    keyed.close()
    discarding = client.subscribe(topic, "discard", initial_position=InitialPosition.Earliest,
                                  crypto_failure_action=ConsumerCryptoFailureAction.DISCARD)
    with pytest.raises(Timeout):
        discarding.receive(1500)
    discarding.close()
    # DISCARD acknowledged them: the subscription is empty even for a consumer with the key
    again = client.subscribe(topic, "discard", crypto_key_reader=CryptoKeyReader(*keys))
    with pytest.raises(Timeout):
        again.receive(1000)


def test_a_producer_without_a_usable_key_is_refused(client: Client, topic: str, tmp_path: Path) -> None:
    with pytest.raises(CryptoError, match="public key"):
        client.create_producer(topic, encryption_key="app",
                               crypto_key_reader=CryptoKeyReader(str(tmp_path / "missing.pem"), str(tmp_path / "x.pem")))
