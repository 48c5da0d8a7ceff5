"""magnetar.client's side of the exchanges with the Java client (MagnetarClientXlangTest.java).

Written here before Maven runs (writer ``mpy``), read here after it (writer ``java``):

- KeyValue SEPARATED, ``xlang-RUN-WRITER-kvsep``: keys are bytes that are not UTF-8 (0xff 0x00 i);
  the last message of each side has a null key;
- end-to-end encryption, ``xlang-RUN-WRITER-enc-KEY-MODE`` with KEY ``rsa`` or ``ec`` (the Java
  client's ECIES) and MODE ``batched`` (LZ4) or ``single`` (ZLIB): five payloads each, encrypted
  with the key pair whose PEM files :func:`write_key_files` puts in ``MAGNETAR_INTEROP_KEYS``
  (``NAME.pub.pem``, ``NAME.key.pem``: what both clients' key readers load).
"""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from magnetar.client import (
    BytesSchema,
    Client,
    CompressionType,
    CryptoKeyReader,
    KeyValueEncodingType,
    KeyValueSchema,
    MessageId,
    StringSchema,
)

COUNT = 5
RECEIVE_MS = 10_000
KEY_KINDS = ("rsa", "ec")
MODES = {"batched": CompressionType.LZ4, "single": CompressionType.ZLib}
#: an ``openssl ecparam -genkey`` private key file starts with the curve (prime256v1) this way
_EC_PARAMETERS = b"-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n"


def write_key_files(directory: Path) -> None:
    """An RSA and an EC (P-256) key pair as PEM: public SubjectPublicKeyInfo, private in the
    traditional OpenSSL forms the Java client's loader needs (the EC one after its parameters)."""
    for name, key in (("rsa", rsa.generate_private_key(public_exponent=65537, key_size=2048)),
                      ("ec", ec.generate_private_key(ec.SECP256R1()))):
        (directory / f"{name}.pub.pem").write_bytes(key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                    serialization.NoEncryption())
        (directory / f"{name}.key.pem").write_bytes((_EC_PARAMETERS if name == "ec" else b"") + private)


def key_reader(keys: str, name: str) -> CryptoKeyReader:
    """The key reader of one key pair."""
    return CryptoKeyReader(str(Path(keys) / f"{name}.pub.pem"), str(Path(keys) / f"{name}.key.pem"))


def key_value_schema() -> KeyValueSchema:
    """The exchanged schema: KeyValue<bytes, string>, SEPARATED."""
    return KeyValueSchema(BytesSchema(), StringSchema(), KeyValueEncodingType.SEPARATED)


def key(i: int) -> bytes:
    """The i-th key."""
    return bytes([0xFF, 0, i])


def topic(run_id: str, writer: str, kind: str = "kvsep") -> str:
    """The topic of one writer and kind (``kvsep`` or ``enc-KEY-MODE``)."""
    return f"persistent://public/default/xlang-{run_id}-{writer}-{kind}"


def expected(writer: str) -> list[tuple[bytes | None, str]]:
    """What a writer puts on its KeyValue topic, as (key, value) pairs."""
    return [(key(i), f"{writer}-{i}") for i in range(COUNT)] + [(None, f"{writer}-null-key")]


def encrypted_payloads(writer: str, kind: str) -> list[bytes]:
    """What a writer puts on an encrypted topic."""
    return [f"secret {writer} {kind} {i} ".encode() * (1 + i) for i in range(COUNT)]


def write_magnetar_side(service_url: str, run_id: str, keys: str) -> None:
    """Write the mpy topics with magnetar.client."""
    client = Client(service_url, operation_timeout_seconds=15)
    try:
        producer = client.create_producer(topic(run_id, "mpy"), schema=key_value_schema())
        for pair in expected("mpy"):
            producer.send(pair)
        producer.close()
        for name in KEY_KINDS:
            for mode, codec in MODES.items():
                kind = f"enc-{name}-{mode}"
                producer = client.create_producer(
                    topic(run_id, "mpy", kind), encryption_key=name, crypto_key_reader=key_reader(keys, name),
                    batching_enabled=mode == "batched", compression_type=codec, batching_max_publish_delay_ms=1000)
                for payload in encrypted_payloads("mpy", kind):
                    producer.send_async(payload, None)
                producer.flush()
                producer.close()
    finally:
        client.close()


def read_with_magnetar(service_url: str, run_id: str, writer: str) -> list[tuple[bytes | None, str, bool]]:
    """Every (key, value, has_key) on a writer's KeyValue topic, read with magnetar.client."""
    client = Client(service_url, operation_timeout_seconds=15)
    out: list[tuple[bytes | None, str, bool]] = []
    try:
        reader = client.create_reader(topic(run_id, writer), MessageId.earliest, schema=key_value_schema())
        while reader.has_message_available() or len(out) < len(expected(writer)):
            message = reader.read_next(RECEIVE_MS)
            pair_key, value = message.value()
            out.append((pair_key, value, message.has_key()))
    finally:
        client.close()
    return out


def read_encrypted_with_magnetar(service_url: str, run_id: str, writer: str, keys: str) -> dict[str, list[bytes]]:
    """Per encrypted kind, the payloads on a writer's topic, decrypted by magnetar.client."""
    client = Client(service_url, operation_timeout_seconds=15)
    found: dict[str, list[bytes]] = {}
    try:
        for name in KEY_KINDS:
            for mode in MODES:
                kind = f"enc-{name}-{mode}"
                reader = client.create_reader(topic(run_id, writer, kind), MessageId.earliest,
                                              crypto_key_reader=key_reader(keys, name))
                got = found[kind] = []
                while reader.has_message_available() or len(got) < COUNT:
                    got.append(reader.read_next(RECEIVE_MS).data())
                reader.close()
    finally:
        client.close()
    return found
