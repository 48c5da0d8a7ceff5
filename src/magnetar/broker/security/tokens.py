"""JSON Web Tokens and their keys, as Pulsar's token tools and token provider use them.

Keys are given the way Pulsar takes them (``AuthTokenUtils.readKeyFromUrl``): ``file:///path``
(the file's raw bytes), ``data:;base64,...`` (or an unencoded ``data:,...``), a plain path to an
existing file, or the key itself as base64 text. A secret key is raw bytes (HS256/384/512); key pairs
are stored the way ``pulsar tokens create-key-pair`` writes them, DER (PKCS#8 private key,
X.509 SubjectPublicKeyInfo public key), and PEM is read too. Signing and checking are PyJWT's; key
parsing and generation are pyca/cryptography's.
"""

from __future__ import annotations

import base64
import binascii
import re
import secrets
import time
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import unquote, unquote_to_bytes

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from magnetar.broker.security.errors import SecurityConfigError

PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey
PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey
SigningKey = bytes | PrivateKey

HMAC_ALGORITHMS = ("HS256", "HS384", "HS512")
RSA_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512")
EC_ALGORITHMS = ("ES256", "ES384", "ES512")
#: HMAC key sizes Pulsar's `create-secret-key` makes, in bytes
SECRET_KEY_BYTES = {"HS256": 32, "HS384": 48, "HS512": 64}
_EC_CURVES = {"ES256": ec.SECP256R1, "ES384": ec.SECP384R1, "ES512": ec.SECP521R1}
_EC_ALGORITHM_OF_CURVE = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}
_RELATIVE_TIME = re.compile(r"^(\d+)([smhdwy]?)$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}


class TokenError(Exception):
    """A token could not be made or does not validate (message safe to show; no key material)."""


def read_key_material(value: str, setting: str) -> bytes:
    """The bytes a key setting points at; SecurityConfigError naming ``setting`` when unusable."""
    value = value.strip()
    if value.startswith("data:"):
        header, comma, payload = value[5:].partition(",")
        if not comma:
            raise SecurityConfigError(setting, "a data: URL needs a ',' before its content")
        if header.endswith(";base64"):
            try:
                return base64.b64decode(payload, validate=True)
            except (binascii.Error, ValueError):
                raise SecurityConfigError(setting, "the data: URL's content is not valid base64") from None
        return unquote_to_bytes(payload)
    if value.startswith("file:"):
        path = unquote(value[7:] if value.startswith("file://") else value[5:])
        return _read_file(Path(path), setting)
    path = Path(value)
    try:
        exists = path.is_file()
    except (OSError, ValueError):
        exists = False
    if exists:
        return _read_file(path, setting)
    try:
        return base64.b64decode(value, validate=True) if value else b""
    except (binascii.Error, ValueError):
        raise SecurityConfigError(
            setting, "is neither a file: or data: URL, an existing file, nor base64 text"
        ) from None


def _read_file(path: Path, setting: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SecurityConfigError(setting, f"cannot read {path}: {exc.strerror or exc}") from None


def load_secret_key(data: bytes, setting: str) -> bytes:
    """An HMAC key; refused below 256 bits, as Pulsar (jjwt) refuses it."""
    if len(data) < 32:
        raise SecurityConfigError(
            setting, f"the secret key has {len(data) * 8} bits: HMAC-SHA keys need at least 256 bits"
        )
    return data


def load_public_key(data: bytes, setting: str, algorithm: str | None = None) -> PublicKey:
    """A public key from DER (SubjectPublicKeyInfo) or PEM; checked against ``algorithm``'s family."""
    key: Any = None
    for loader in (serialization.load_der_public_key, serialization.load_pem_public_key):
        try:
            key = loader(data)
            break
        except (ValueError, TypeError):
            continue
    if not isinstance(key, (rsa.RSAPublicKey, ec.EllipticCurvePublicKey)):
        raise SecurityConfigError(setting, "is not an RSA or EC public key in DER or PEM form")
    _check_family(key, algorithm, setting)
    return key


def load_private_key(data: bytes, setting: str, algorithm: str | None = None) -> PrivateKey:
    """A private key from DER (PKCS#8) or PEM, unencrypted; checked against ``algorithm``'s family."""
    key: Any = None
    for loader in (serialization.load_der_private_key, serialization.load_pem_private_key):
        try:
            key = loader(data, password=None)
            break
        except (ValueError, TypeError):
            continue
    if not isinstance(key, (rsa.RSAPrivateKey, ec.EllipticCurvePrivateKey)):
        raise SecurityConfigError(setting, "is not an unencrypted RSA or EC private key in DER or PEM form")
    _check_family(key, algorithm, setting)
    return key


def _check_family(key: Any, algorithm: str | None, setting: str) -> None:
    if algorithm is None:
        return
    is_rsa = isinstance(key, (rsa.RSAPublicKey, rsa.RSAPrivateKey))
    if algorithm in RSA_ALGORITHMS and not is_rsa:
        raise SecurityConfigError(setting, f"is an EC key but the algorithm is {algorithm}")
    if algorithm in EC_ALGORITHMS and is_rsa:
        raise SecurityConfigError(setting, f"is an RSA key but the algorithm is {algorithm}")
    if algorithm in HMAC_ALGORITHMS:
        raise SecurityConfigError(setting, f"{algorithm} needs a secret key, not a key pair")


def verification_algorithms(key: bytes | PublicKey) -> list[str]:
    """The JWT algorithms a token checked with ``key`` may use."""
    if isinstance(key, bytes):
        return list(HMAC_ALGORITHMS)
    if isinstance(key, rsa.RSAPublicKey):
        return list(RSA_ALGORITHMS)
    return [_EC_ALGORITHM_OF_CURVE.get(key.curve.name, "ES256")]


def signing_algorithm(key: SigningKey) -> str:
    """The algorithm Pulsar's tools pick for a key: by HMAC key length, RSA modulus size or EC curve."""
    if isinstance(key, bytes):
        return "HS512" if len(key) >= 64 else "HS384" if len(key) >= 48 else "HS256"
    if isinstance(key, rsa.RSAPrivateKey):
        return "RS512" if key.key_size >= 4096 else "RS384" if key.key_size >= 3072 else "RS256"
    return _EC_ALGORITHM_OF_CURVE.get(key.curve.name, "ES256")


def generate_secret_key(algorithm: str = "HS256") -> bytes:
    """Random key bytes for an HMAC algorithm (``create-secret-key``)."""
    if algorithm not in SECRET_KEY_BYTES:
        raise TokenError(f"{algorithm} is not an HMAC algorithm ({', '.join(HMAC_ALGORITHMS)})")
    return secrets.token_bytes(SECRET_KEY_BYTES[algorithm])


def generate_key_pair(algorithm: str = "RS256") -> tuple[bytes, bytes]:
    """A new key pair as (PKCS#8 DER private key, SubjectPublicKeyInfo DER public key)."""
    if algorithm in RSA_ALGORITHMS:
        bits = {"256": 2048, "384": 3072, "512": 4096}[algorithm[2:]]
        private: PrivateKey = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    elif algorithm in EC_ALGORITHMS:
        private = ec.generate_private_key(_EC_CURVES[algorithm]())
    else:
        raise TokenError(f"{algorithm} is not a key pair algorithm ({', '.join(RSA_ALGORITHMS + EC_ALGORITHMS)})")
    private_der = private.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public_der = private.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private_der, public_der


def parse_relative_time(text: str) -> int:
    """Seconds in a Pulsar relative time (``30``, ``10s``, ``5m``, ``1h``, ``3d``, ``2w``, ``1y``)."""
    match = _RELATIVE_TIME.match(text.strip())
    if not match:
        raise TokenError(f"invalid relative time {text!r}: expected a number and one of s, m, h, d, w, y")
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def create_token(
    key: SigningKey,
    subject: str,
    expires_in_seconds: int | None = None,
    algorithm: str | None = None,
    now: float | None = None,
) -> str:
    """A signed JWT whose ``sub`` is ``subject`` and, with an expiry, whose ``exp`` is set."""
    algorithm = algorithm or signing_algorithm(key)
    if isinstance(key, bytes) and algorithm not in HMAC_ALGORITHMS:
        raise TokenError(f"a secret key signs with {', '.join(HMAC_ALGORITHMS)}, not {algorithm}")
    if not isinstance(key, bytes):
        try:
            _check_family(key, algorithm, "algorithm")
        except SecurityConfigError as exc:
            raise TokenError(f"the private key {exc.reason}") from None
    claims: dict[str, Any] = {"sub": subject}
    if expires_in_seconds is not None:
        claims["exp"] = int((time.time() if now is None else now) + expires_in_seconds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return jwt.encode(claims, key, algorithm=algorithm, headers={"typ": None})


def decode_token(
    token: str, key: bytes | PublicKey, leeway_seconds: int = 0, now: float | None = None
) -> dict[str, Any]:
    """Check a JWT's signature, ``exp`` and ``nbf`` and return its claims; TokenError when it fails.

    The audience is not checked here (Pulsar checks its configured audience claim itself).
    """
    options = {"verify_aud": False, "verify_iat": False, "verify_exp": False, "verify_nbf": False}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            claims = jwt.decode(token, key, algorithms=verification_algorithms(key), options=options)
    except jwt.InvalidSignatureError:
        raise TokenError("JWT signature does not match the key") from None
    except jwt.InvalidAlgorithmError:
        raise TokenError("JWT algorithm does not match the key") from None
    except jwt.PyJWTError as exc:
        raise TokenError(f"malformed JWT: {_short(exc)}") from None
    except (ValueError, TypeError, OverflowError, RecursionError):
        raise TokenError("malformed JWT") from None
    if not isinstance(claims, dict):
        raise TokenError("malformed JWT: the claims are not a JSON object")
    _check_times(claims, time.time() if now is None else now, leeway_seconds)
    return claims


def _check_times(claims: dict[str, Any], now: float, leeway: int) -> None:
    exp, nbf = claims.get("exp"), claims.get("nbf")
    if exp is not None:
        if not isinstance(exp, (int, float)) or isinstance(exp, bool):
            raise TokenError("malformed JWT: exp is not a number")
        if exp <= now - leeway:
            raise TokenError("JWT expired")
    if nbf is not None:
        if not isinstance(nbf, (int, float)) or isinstance(nbf, bool):
            raise TokenError("malformed JWT: nbf is not a number")
        if nbf > now + leeway:
            raise TokenError("JWT is not valid yet (nbf)")


def unverified_parts(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A token's header and claims without checking anything (``pulsar tokens show``)."""
    try:
        header = jwt.get_unverified_header(token)
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError as exc:
        raise TokenError(f"malformed JWT: {_short(exc)}") from None
    except (ValueError, TypeError, RecursionError):
        raise TokenError("malformed JWT") from None
    return header, claims


def _short(exc: Exception) -> str:
    """An exception's message cut to one short line (PyJWT messages never contain key material)."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:120]
