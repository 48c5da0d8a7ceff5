"""End-to-end encryption, the application's side: key readers and what an encrypted message says.

:class:`CryptoKeyReader` is the official Python client's ``pulsar.CryptoKeyReader``: one public
key file (for producers) and one private key file (for consumers and readers), whatever key name
a message names, as the C++ client's ``DefaultCryptoKeyReader``. The files are read once, off the
event loop, when a producer or consumer that uses the reader is created (:meth:`load`).
:class:`EncryptionContext` and :class:`EncryptionKey` are what ``Message.encryption_context()``
returns for a message delivered still encrypted (``ConsumerCryptoFailureAction.CONSUME``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from magnetar.client.api.arguments import InvalidArgument
from magnetar.client.api.compat import CompressionType
from magnetar.protocol.schema import MessageMetadata


@dataclass(frozen=True)
class EncryptionKeyInfo:
    """A key as a reader hands it out: PEM bytes and the metadata sent with the data key."""

    key: bytes
    metadata: dict[str, str] = field(default_factory=dict)


class CryptoKeyReader:
    """``pulsar.CryptoKeyReader(public_key_path, private_key_path)``: PEM key files (RSA)."""

    def __init__(self, public_key_path: str, private_key_path: str) -> None:
        for name, value in (("public_key_path", public_key_path), ("private_key_path", private_key_path)):
            if not isinstance(value, str):
                raise InvalidArgument(f"{name} must be a str, not {type(value).__name__}")
        self.public_key_path = public_key_path
        self.private_key_path = private_key_path
        self._files: dict[str, bytes | OSError] = {}
        self._lock = threading.Lock()

    def load(self) -> None:
        """Read both files (blocking: the client calls it in a worker thread); a file that cannot
        be read is remembered as such and reported when its key is asked for."""
        for path in (self.public_key_path, self.private_key_path):
            with self._lock:
                if path in self._files:
                    continue
            try:
                with open(path, "rb") as f:
                    content: bytes | OSError = f.read()
            except OSError as exc:
                content = exc
            with self._lock:
                self._files[path] = content

    def _read(self, path: str) -> bytes:
        with self._lock:
            content = self._files.get(path)
        if content is None:
            self.load()
            with self._lock:
                content = self._files[path]
        if isinstance(content, OSError):
            raise content
        return content

    def public_key(self, key_name: str, metadata: dict[str, str]) -> EncryptionKeyInfo:
        """The public key for ``key_name`` (the same file for every name)."""
        return EncryptionKeyInfo(self._read(self.public_key_path))

    def private_key(self, key_name: str, metadata: dict[str, str]) -> EncryptionKeyInfo:
        """The private key for ``key_name`` (the same file for every name)."""
        return EncryptionKeyInfo(self._read(self.private_key_path))


class EncryptionKey:
    """``pulsar.EncryptionKey``: one data key of a message, encrypted with the key ``key`` names."""

    def __init__(self, key: str, value: bytes, metadata: dict[str, str]) -> None:
        self._key, self._value, self._metadata = key, value, metadata

    @property
    def key(self) -> str:
        """The key's name."""
        return self._key

    @property
    def value(self) -> bytes:
        """The encrypted data key."""
        return self._value

    @property
    def metadata(self) -> dict[str, str]:
        """The metadata the key reader gave with the key."""
        return dict(self._metadata)

    def __repr__(self) -> str:
        return f"EncryptionKey(key={self.key}, value_len={len(self.value)}, metadata={self.metadata})"


class EncryptionContext:
    """``pulsar.EncryptionContext``: what an application needs to decrypt a payload itself."""

    def __init__(
        self, keys: list[EncryptionKey], param: bytes, algorithm: str, compression_type: int,
        uncompressed_message_size: int, batch_size: int, decryption_failed: bool,
    ) -> None:
        self._keys, self._param, self._algorithm = keys, param, algorithm
        self._compression, self._uncompressed, self._batch = compression_type, uncompressed_message_size, batch_size
        self._failed = decryption_failed

    def keys(self) -> list[EncryptionKey]:
        """The message's encrypted data keys."""
        return list(self._keys)

    def param(self) -> bytes:
        """The encryption parameter (the AES-GCM IV)."""
        return self._param

    def algorithm(self) -> str:
        """The encryption algorithm the producer named (Pulsar's producers leave it empty)."""
        return self._algorithm

    def compression_type(self) -> CompressionType:  # type: ignore[valid-type]
        """How the payload was compressed before it was encrypted."""
        return CompressionType(self._compression)

    def uncompressed_message_size(self) -> int:
        """The payload's size before compression (0 when not compressed)."""
        return self._uncompressed

    def batch_size(self) -> int:
        """Messages in the (still encrypted) batch, or -1 when the message is not batched."""
        return self._batch

    def is_decryption_failed(self) -> bool:
        """Whether the consumer could not decrypt the message."""
        return self._failed

    def __repr__(self) -> str:
        return (f"EncryptionContext(algorithm={self.algorithm()}, compression_type={self.compression_type().name}, "
                f"uncompressed_message_size={self.uncompressed_message_size()}, "
                f"is_decryption_failed={self.is_decryption_failed()}, keys={self.keys()})")


def context_of(meta: MessageMetadata, decryption_failed: bool) -> EncryptionContext | None:
    """The encryption context of a message with metadata ``meta`` (None: not encrypted)."""
    if not meta.encryption_keys:
        return None
    keys = [EncryptionKey(k.key, k.value, {kv.key: kv.value for kv in k.metadata}) for k in meta.encryption_keys]
    return EncryptionContext(
        keys, meta.encryption_param, meta.encryption_algo, meta.compression,
        meta.uncompressed_size if meta.compression else 0,
        meta.num_messages_in_batch if meta.HasField("num_messages_in_batch") else -1, decryption_failed,
    )
