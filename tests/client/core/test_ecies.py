"""EC keys for end-to-end encryption: the Java client's ECIES for data keys (interop with Java:
tests/interop MagnetarClientXlangTest)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from magnetar.client import (
    Client,
    CompressionType,
    ConsumerCryptoFailureAction,
    CryptoKeyReader,
    InitialPosition,
)
from magnetar.client.core.ecies import MAC_BYTES, ecies_decrypt, ecies_encrypt

from ..conftest import RECEIVE_MS

CURVES = [ec.SECP256R1(), ec.SECP384R1(), ec.SECP521R1(), ec.SECP256K1()]


@pytest.mark.parametrize("curve", CURVES, ids=lambda c: c.name)
def test_round_trip_and_layout(curve: ec.EllipticCurve) -> None:
    key = ec.generate_private_key(curve)
    data_key = bytes(range(32))
    message = ecies_encrypt(key.public_key(), data_key)
    point = 1 + 2 * ((curve.key_size + 7) // 8)
    assert len(message) == point + 32 + MAC_BYTES and message[0] == 4
    assert ecies_decrypt(key, message) == data_key
    assert ecies_encrypt(key.public_key(), data_key) != message  # a fresh ephemeral key each time


def test_a_tampered_message_or_another_key_is_refused() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    message = bytearray(ecies_encrypt(key.public_key(), b"k" * 32))
    message[70] ^= 1
    with pytest.raises(ValueError, match="MAC"):
        ecies_decrypt(key, bytes(message))
    with pytest.raises(ValueError):
        ecies_decrypt(ec.generate_private_key(ec.SECP256R1()), ecies_encrypt(key.public_key(), b"k" * 32))
    with pytest.raises(ValueError):
        ecies_decrypt(key, b"\x04short")


def ec_key_pair(directory: Path, name: str, with_parameters: bool = False) -> tuple[str, str]:
    """PEM files as ``openssl ecparam -genkey`` writes them (SEC1 private key, optionally after an
    EC PARAMETERS block), which the Java client's key loader reads."""
    key = ec.generate_private_key(ec.SECP256R1())
    public, private = directory / f"{name}.pub.pem", directory / f"{name}.key.pem"
    params = b"-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n" if with_parameters else b""
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    private.write_bytes(params + key.private_bytes(serialization.Encoding.PEM,
                                                   serialization.PrivateFormat.TraditionalOpenSSL,
                                                   serialization.NoEncryption()))
    return str(public), str(private)


@pytest.mark.parametrize("batched", [True, False])
def test_through_the_broker_with_ec_keys(client: Client, topic: str, tmp_path: Path, batched: bool) -> None:
    keys = ec_key_pair(tmp_path, "ec", with_parameters=True)
    other = ec_key_pair(tmp_path, "other")
    consumer = client.subscribe(topic, "sub", crypto_key_reader=CryptoKeyReader(*keys),
                                initial_position=InitialPosition.Earliest)
    stranger = client.subscribe(topic, "stranger", crypto_key_reader=CryptoKeyReader(*other),
                                crypto_failure_action=ConsumerCryptoFailureAction.CONSUME,
                                initial_position=InitialPosition.Earliest)
    producer = client.create_producer(topic, encryption_key="ec", crypto_key_reader=CryptoKeyReader(*keys),
                                      batching_enabled=batched, compression_type=CompressionType.LZ4)
    payloads = [b"ec secret %d" % i for i in range(5)]
    for payload in payloads:
        producer.send_async(payload, None)
    producer.flush()
    assert [consumer.receive(RECEIVE_MS).data() for _ in payloads] == payloads
    still_sealed = stranger.receive(RECEIVE_MS)
    context = still_sealed.encryption_context()
    assert context is not None and context.is_decryption_failed() and still_sealed.data() not in payloads
    assert [k.key for k in context.keys()] == ["ec"]
