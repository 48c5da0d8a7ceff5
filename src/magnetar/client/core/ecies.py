"""ECIES as the Java client encrypts data keys for EC public keys (Bouncy Castle's ``ECIES`` cipher).

The Java client's ``MessageCryptoBc`` encrypts a data key for an EC key with
``Cipher.getInstance("ECIES", "BC")`` and no parameters: Bouncy Castle's IES engine over ECDH,
KDF2 with SHA-1, HMAC-SHA-1 and no block cipher (the key stream is XORed). Its output is
``V || C || T``:

- ``V``: the sender's ephemeral public key, an uncompressed point (``04 || X || Y``);
- ``Z``: the ECDH shared secret (the X coordinate, as long as the field); the KDF's input is
  ``V || Z``, no shared info; it gives 16 bytes of MAC key then as many bytes as the data key;
- ``C``: the data key XOR those bytes;
- ``T``: HMAC-SHA-1 (key: the MAC key) over ``C`` and 8 zero bytes (the length of the absent
  encoding parameter, which Bouncy Castle appends when ``V`` is present).

The primitives are pyca/cryptography's (ECDH, the X9.63 KDF, which is KDF2, HMAC); only their
composition is here.
"""

from __future__ import annotations

from functools import cache
from types import SimpleNamespace
from typing import Any

#: HMAC-SHA-1 key bytes (Bouncy Castle's default MAC key size, 128 bits)
MAC_KEY_BYTES = 16
MAC_BYTES = 20
#: the MAC input's length tag of the absent encoding parameter
_NO_ENCODING_TAG = bytes(8)


@cache
def _primitives() -> SimpleNamespace:
    """cryptography's primitives, imported with the first EC key used (as client/core/crypto.py
    imports its own): a client without encryption never pays for them."""
    from cryptography.hazmat.primitives import constant_time, hashes, hmac, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.kdf.x963kdf import X963KDF

    return SimpleNamespace(constant_time=constant_time, hashes=hashes, hmac=hmac, serialization=serialization,
                           ec=ec, X963KDF=X963KDF)


def _keys(shared_input: bytes, length: int) -> tuple[bytes, bytes]:
    """(MAC key, key stream of ``length`` bytes) from the KDF over ``V || Z``."""
    p = _primitives()
    material = p.X963KDF(algorithm=p.hashes.SHA1(), length=MAC_KEY_BYTES + length, sharedinfo=None).derive(shared_input)  # noqa: S303
    return material[:MAC_KEY_BYTES], material[MAC_KEY_BYTES:]


def _tag(mac_key: bytes, ciphertext: bytes) -> bytes:
    p = _primitives()
    mac = p.hmac.HMAC(mac_key, p.hashes.SHA1())  # noqa: S303 - the Java client's choice, fixed by the wire format
    mac.update(ciphertext)
    mac.update(_NO_ENCODING_TAG)
    return mac.finalize()


def _xor(data: bytes, stream: bytes) -> bytes:
    return (int.from_bytes(data, "big") ^ int.from_bytes(stream, "big")).to_bytes(len(data), "big")


def ecies_encrypt(public: Any, plaintext: bytes) -> bytes:
    """``plaintext`` encrypted for ``public`` (an EllipticCurvePublicKey) as the Java client's ECIES does it."""
    p = _primitives()
    ephemeral = p.ec.generate_private_key(public.curve)
    point = ephemeral.public_key().public_bytes(p.serialization.Encoding.X962,
                                                p.serialization.PublicFormat.UncompressedPoint)
    shared = ephemeral.exchange(p.ec.ECDH(), public)
    mac_key, stream = _keys(point + shared, len(plaintext))
    ciphertext = _xor(plaintext, stream)
    return point + ciphertext + _tag(mac_key, ciphertext)


def ecies_decrypt(private: Any, message: bytes) -> bytes:
    """The plaintext of an ECIES message for ``private`` (an EllipticCurvePrivateKey); ValueError
    when it is not one (bad MAC)."""
    p = _primitives()
    point_size = 1 + 2 * ((private.curve.key_size + 7) // 8)
    if len(message) < point_size + MAC_BYTES or message[:1] != b"\x04":
        raise ValueError("not an ECIES message for this curve")
    point, ciphertext, tag = message[:point_size], message[point_size:-MAC_BYTES], message[-MAC_BYTES:]
    sender = p.ec.EllipticCurvePublicKey.from_encoded_point(private.curve, point)
    shared = private.exchange(p.ec.ECDH(), sender)
    mac_key, stream = _keys(point + shared, len(ciphertext))
    if not p.constant_time.bytes_eq(_tag(mac_key, ciphertext), tag):
        raise ValueError("the ECIES message's MAC does not match")
    return _xor(ciphertext, stream)
