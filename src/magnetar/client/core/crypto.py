"""End-to-end encryption of message payloads, as Pulsar's ``MessageCrypto``.

A producer encrypts each payload (a whole batch, after compression) with AES-256-GCM under a
random data key of its own (a new one every 4 hours) and a random 12-byte IV, which goes in the
metadata's ``encryption_param``; the 16-byte tag follows the ciphertext. The data key goes in
``encryption_keys``, once per key name, encrypted with that name's public key: RSA with OAEP
(SHA-1 and MGF1-SHA-1: OpenSSL's ``RSA_PKCS1_OAEP_PADDING``, the Java client's
``RSA/NONE/OAEPWithSHA1AndMGF1Padding``), EC with the Java client's ECIES (:mod:`.ecies`; the
official Python client has RSA only), with the metadata the key reader gave. A consumer
decrypts the data key with its private key (remembered by the MD5 of the encrypted key, as the
official clients), then the payload. Keys come from a key reader whose files were read off the
event loop when the producer or consumer was created (:func:`load_keys`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from functools import cache
from types import SimpleNamespace
from typing import Any

from magnetar.client.core.ecies import ecies_decrypt, ecies_encrypt
from magnetar.client.exceptions import CryptoError
from magnetar.protocol.schema import EncryptionKeys, KeyValue, MessageMetadata

log = logging.getLogger("magnetar.client")

DATA_KEY_BYTES = 32
IV_BYTES = 12
#: a producer's data key is replaced after this many seconds (Pulsar's 4 hours)
DATA_KEY_LIFETIME = 4 * 3600.0
#: decrypted data keys a consumer remembers at most, each for DATA_KEY_LIFETIME
_MAX_CACHED_KEYS = 1000



@cache
def _cryptography() -> SimpleNamespace:
    """cryptography's primitives, imported with the first encrypting producer or encrypted message: 90-100 ms
    CPU (python -X importtime) that a client without encryption never pays."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    oaep = padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA1()), algorithm=hashes.SHA1(), label=None)  # noqa: S303
    return SimpleNamespace(InvalidTag=InvalidTag, serialization=serialization, rsa=rsa, ec=ec, AESGCM=AESGCM, oaep=oaep)


async def load_keys(reader: Any) -> None:
    """Read a key reader's files in a worker thread (the loop never waits on the disk)."""
    load = getattr(reader, "load", None)
    if load is not None:
        await asyncio.get_running_loop().run_in_executor(None, load)


def _encrypt_data_key(public_pem: bytes, data_key: bytes, key_name: str) -> bytes:
    crypto = _cryptography()
    try:
        public = crypto.serialization.load_pem_public_key(public_pem)
    except ValueError as exc:
        raise CryptoError(f"cannot load the public key {key_name!r}: {exc}") from None
    if isinstance(public, crypto.rsa.RSAPublicKey):
        return public.encrypt(data_key, crypto.oaep)
    if isinstance(public, crypto.ec.EllipticCurvePublicKey):
        return ecies_encrypt(public, data_key)
    raise CryptoError(f"the public key {key_name!r} is a {type(public).__name__}: only RSA and EC keys are supported")


def encryptor_for(config: Any) -> MessageEncryptor | None:
    """The encryptor of a producer configured with ``encryption_key`` (None without one)."""
    names = config.encryption_key
    if not names:
        return None
    return MessageEncryptor([names] if isinstance(names, str) else list(names), config.crypto_key_reader)


class MessageEncryptor:
    """A producer's side: a data key, encrypted for every key name, and payloads encrypted with it."""

    def __init__(self, key_names: list[str], reader: Any, clock: Any = time.monotonic) -> None:
        if not key_names:
            raise CryptoError("encryption needs at least one key name")
        if reader is None:
            raise CryptoError("encryption_key needs a crypto_key_reader")
        self.key_names = list(key_names)
        self.reader = reader
        self.clock = clock
        self._aead = _cryptography().AESGCM
        self._data_key = b""
        self._made_at = 0.0
        self._keys: list[EncryptionKeys] = []
        self.new_data_key()

    def new_data_key(self) -> None:
        """A fresh data key, encrypted with each key name's public key (raises CryptoError)."""
        data_key = self._aead.generate_key(bit_length=8 * DATA_KEY_BYTES)
        keys = []
        for name in self.key_names:
            try:
                info = self.reader.public_key(name, {})
            except OSError as exc:
                raise CryptoError(f"cannot read the public key {name!r}: {exc}") from None
            entry = EncryptionKeys(key=name, value=_encrypt_data_key(info.key, data_key, name))
            for k, v in info.metadata.items():
                entry.metadata.append(KeyValue(key=k, value=v))
            keys.append(entry)
        self._data_key, self._keys, self._made_at = data_key, keys, self.clock()

    def encrypt(self, meta: MessageMetadata, payload: bytes) -> bytes:
        """``payload`` encrypted; ``meta`` gets the encrypted data keys and the IV."""
        if self.clock() - self._made_at > DATA_KEY_LIFETIME:
            self.new_data_key()
        iv = os.urandom(IV_BYTES)
        meta.encryption_keys.extend(self._keys)
        meta.encryption_param = iv
        return self._aead(self._data_key).encrypt(iv, payload, None)


class MessageDecryptor:
    """A consumer's side: data keys decrypted with the private key, payloads with them."""

    def __init__(self, reader: Any, clock: Any = time.monotonic) -> None:
        self.reader = reader
        self.clock = clock
        self._crypto = _cryptography()
        #: MD5 of an encrypted data key -> (the data key, when it was decrypted)
        self._data_keys: dict[bytes, tuple[bytes, float]] = {}

    def decrypt(self, meta: MessageMetadata, payload: bytes) -> bytes | None:
        """The payload decrypted, or None when no key of the message opens it."""
        iv = meta.encryption_param
        if len(iv) != IV_BYTES:
            return None
        for entry in meta.encryption_keys:
            data_key = self._data_key(entry)
            if data_key is None:
                continue
            try:
                return self._crypto.AESGCM(data_key).decrypt(iv, payload, None)
            except (self._crypto.InvalidTag, ValueError):
                continue
        return None

    def _data_key(self, entry: EncryptionKeys) -> bytes | None:
        # with the first encrypted message, as cryptography's primitives: not in every import of the client,
        # which the test kit runs beside its broker's start (hashlib and _hashlib: 1-6 ms, python -X importtime)
        import hashlib

        digest = hashlib.md5(entry.value, usedforsecurity=False).digest()
        cached = self._data_keys.get(digest)
        now = self.clock()
        if cached is not None and now - cached[1] <= DATA_KEY_LIFETIME:
            return cached[0]
        if self.reader is None:
            return None
        try:
            info = self.reader.private_key(entry.key, {kv.key: kv.value for kv in entry.metadata})
            private = self._crypto.serialization.load_pem_private_key(info.key, password=None)
        except (OSError, ValueError, TypeError) as exc:
            log.error("cannot load the private key %r: %s", entry.key, exc)
            return None
        try:
            if isinstance(private, self._crypto.rsa.RSAPrivateKey):
                data_key = private.decrypt(entry.value, self._crypto.oaep)
            elif isinstance(private, self._crypto.ec.EllipticCurvePrivateKey):
                data_key = ecies_decrypt(private, entry.value)
            else:
                log.error("the private key %r is neither an RSA nor an EC key", entry.key)
                return None
        except ValueError:
            return None
        if len(self._data_keys) >= _MAX_CACHED_KEYS:
            self._data_keys = {d: v for d, v in self._data_keys.items() if now - v[1] <= DATA_KEY_LIFETIME}
            if len(self._data_keys) >= _MAX_CACHED_KEYS:
                self._data_keys.clear()
        self._data_keys[digest] = (data_key, now)
        return data_key
