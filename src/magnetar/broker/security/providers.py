"""Pulsar's three authentication providers: token (JWT), basic (htpasswd) and TLS (client certificate).

Each provider turns the credentials of one auth method into a role, or raises
:class:`AuthenticationError` with a message that never contains the credentials. They hold no
connection state: :mod:`magnetar.broker.security.authentication` drives them for the binary
protocol (CONNECT / AUTH_RESPONSE) and for HTTP.
"""

from __future__ import annotations

import base64
import binascii
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import bcrypt
from cryptography import x509
from cryptography.x509.oid import NameOID
from passlib.hash import apr_md5_crypt, des_crypt, ldap_sha1, md5_crypt, sha256_crypt, sha512_crypt
from passlib.hash import bcrypt as bcrypt_hash

from magnetar.broker.security.errors import AuthenticationError, SecurityConfigError
from magnetar.broker.security.settings import SecuritySettings
from magnetar.broker.security.tokens import (
    PublicKey,
    TokenError,
    decode_token,
    load_public_key,
    load_secret_key,
    read_key_material,
)

#: what the TLS provider accepts as the peer's certificate: DER bytes, a parsed certificate, or
#: the dict of ``ssl.SSLSocket.getpeercert()``
PeerCertificate = bytes | x509.Certificate | Mapping[str, Any]

#: longest credentials accepted (a token, "user:password"); longer input is refused unread
MAX_CREDENTIAL_BYTES = 128 * 1024
_BCRYPT_MAX_PASSWORD_BYTES = 72


@dataclass(frozen=True)
class Identity:
    """Who the credentials prove the client to be, and until when (epoch seconds; None: no expiry)."""

    role: str
    expires_at: float | None = None


class AuthenticationProvider(Protocol):
    """One auth method: credentials from a CONNECT / AUTH_RESPONSE, or from an HTTP request, to a role."""

    #: the auth method name clients send (``token``, ``basic``, ``tls``)
    method: str
    #: Pulsar's provider class simple name, the ``provider_name`` metric label
    name: str

    def authenticate(self, data: bytes, peer_certificate: PeerCertificate | None) -> Identity:
        """The identity proven by binary-protocol auth data (and the TLS peer certificate)."""
        ...

    def authenticate_http(self, authorization: str | None, peer_certificate: PeerCertificate | None) -> Identity:
        """The identity proven by an HTTP ``Authorization`` header value (and the TLS peer certificate)."""
        ...


def _text(data: bytes, provider: str) -> str:
    if len(data) > MAX_CREDENTIAL_BYTES:
        raise AuthenticationError(
            f"credentials are longer than {MAX_CREDENTIAL_BYTES} bytes", "INVALID_AUTH_DATA", provider
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise AuthenticationError("credentials are not UTF-8 text", "INVALID_AUTH_DATA", provider) from None


class TokenProvider:
    """``AuthenticationProviderToken``: a JWT signed with tokenSecretKey or the tokenPublicKey's pair."""

    method = "token"
    name = "AuthenticationProviderToken"

    def __init__(self, key: bytes | PublicKey, role_claim: str = "sub", audience_claim: str | None = None,
                 audience: str | None = None, leeway_seconds: int = 0,
                 clock: Callable[[], float] = time.time) -> None:
        self.key = key
        self.clock = clock
        self.role_claim = role_claim
        self.audience_claim = audience_claim
        self.audience = audience
        self.leeway_seconds = leeway_seconds

    @classmethod
    def from_settings(cls, settings: SecuritySettings, clock: Callable[[], float] = time.time) -> TokenProvider:
        """Load the validation key the settings name (secret key first, as Pulsar does)."""
        key: bytes | PublicKey
        if settings.token_secret_key:
            key = load_secret_key(read_key_material(settings.token_secret_key, "tokenSecretKey"), "tokenSecretKey")
        elif settings.token_public_key:
            data = read_key_material(settings.token_public_key, "tokenPublicKey")
            key = load_public_key(data, "tokenPublicKey", settings.token_public_alg)
        else:
            raise SecurityConfigError("tokenSecretKey", "the token provider needs tokenSecretKey or tokenPublicKey")
        return cls(key, settings.token_auth_claim, settings.token_audience_claim, settings.token_audience,
                   settings.token_allowed_clock_skew_seconds, clock)

    def authenticate(self, data: bytes, peer_certificate: PeerCertificate | None) -> Identity:
        """Validate the token sent as auth data."""
        return self.validate(_text(data, self.name))

    def authenticate_http(self, authorization: str | None, peer_certificate: PeerCertificate | None) -> Identity:
        """Validate the token of an ``Authorization: Bearer <token>`` header."""
        if not authorization or not authorization.startswith("Bearer "):
            raise AuthenticationError("Invalid HTTP Authorization header", "INVALID_HEADER", self.name)
        if len(authorization) > MAX_CREDENTIAL_BYTES:
            raise AuthenticationError(
                f"credentials are longer than {MAX_CREDENTIAL_BYTES} bytes", "INVALID_AUTH_DATA", self.name
            )
        return self.validate(authorization[len("Bearer "):])

    def validate(self, token: str, now: float | None = None) -> Identity:
        """The role and expiry of a token, or AuthenticationError."""
        token = token.strip()
        if not token:
            raise AuthenticationError("Blank token found", "INVALID_AUTH_DATA", self.name)
        try:
            claims = decode_token(token, self.key, self.leeway_seconds, self.clock() if now is None else now)
        except TokenError as exc:
            reason = "EXPIRED_TOKEN" if "expired" in str(exc) else "INVALID_TOKEN"
            raise AuthenticationError(f"Failed to authentication token: {exc}", reason, self.name) from None
        self._check_audience(claims)
        role = claims.get(self.role_claim)
        if isinstance(role, list) and role and isinstance(role[0], str):
            role = role[0]
        if not isinstance(role, str) or not role:
            raise AuthenticationError(
                f"Failed to authentication token: no role in claim {self.role_claim!r}", "INVALID_TOKEN", self.name
            )
        exp = claims.get("exp")
        expires_at = float(exp) if isinstance(exp, (int, float)) and math.isfinite(exp) else None
        return Identity(role, expires_at)

    def _check_audience(self, claims: Mapping[str, Any]) -> None:
        if not self.audience_claim:
            return
        value = claims.get(self.audience_claim)
        if value is None:
            raise AuthenticationError(
                f"Failed to authentication token: no audience in claim {self.audience_claim!r}",
                "INVALID_AUDIENCES", self.name,
            )
        audiences = value if isinstance(value, list) else [value]
        if not all(isinstance(item, str) for item in audiences):
            raise AuthenticationError("Audiences in token is not in expected format", "INVALID_AUDIENCES", self.name)
        if self.audience not in audiences:
            shown = ", ".join(a[:64] for a in audiences[:8])
            raise AuthenticationError(
                f"Audiences in token: [{shown}] not contains this broker: {self.audience}", "INVALID_AUDIENCES",
                self.name,
            )


_CRYPT_HANDLERS = (apr_md5_crypt, md5_crypt, sha256_crypt, sha512_crypt, ldap_sha1, des_crypt)


def _check_hash(user: str, hashed: str, line: int) -> None:
    """Refuse a password hash no supported scheme can parse (SecurityConfigError naming the line)."""
    for handler in (bcrypt_hash, *_CRYPT_HANDLERS):
        if handler.identify(hashed):
            try:
                parsed = handler.from_string(hashed)
            except ValueError:
                break
            if getattr(parsed, "checksum", None):
                return
            break
    raise SecurityConfigError(
        "basicAuthConf", f"line {line}: the password of user {user!r} is not an apr1, crypt or bcrypt hash"
    )


def parse_htpasswd(text: str) -> dict[str, str]:
    """Users and password hashes of an htpasswd file (blank lines and ``#`` comments skipped).

    Raises SecurityConfigError naming the first bad line (its content is not echoed).
    """
    users: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        user, sep, hashed = line.partition(":")
        if not sep or not user or not hashed or ":" in hashed:
            raise SecurityConfigError("basicAuthConf", f"line {number} is not user:password-hash")
        try:
            hashed.encode("ascii")
        except UnicodeEncodeError:
            raise SecurityConfigError("basicAuthConf", f"line {number}: the password hash is not ASCII") from None
        _check_hash(user, hashed, number)
        users[user] = hashed
    return users


def verify_password(password: str, hashed: str) -> bool:
    """Whether ``password`` matches an htpasswd hash (bcrypt, apr1, md5/sha crypt, {SHA}, DES crypt)."""
    secret = password.encode("utf-8")
    try:
        if hashed.startswith("$2"):
            return bcrypt.checkpw(secret[:_BCRYPT_MAX_PASSWORD_BYTES], hashed.encode("ascii"))
        for handler in _CRYPT_HANDLERS:
            if handler.identify(hashed):
                return bool(handler.verify(secret, hashed))
    except (ValueError, TypeError):
        return False
    return False


class BasicProvider:
    """``AuthenticationProviderBasic``: ``user:password`` checked against an htpasswd file."""

    method = "basic"
    name = "AuthenticationProviderBasic"

    def __init__(self, users: Mapping[str, str]) -> None:
        self.users = dict(users)

    @classmethod
    def from_settings(cls, settings: SecuritySettings) -> BasicProvider:
        """Load the htpasswd file ``basicAuthConf`` names (``file:``/``data:`` URL, path or base64)."""
        if not settings.basic_auth_conf:
            raise SecurityConfigError("basicAuthConf", "the basic provider needs an htpasswd file")
        data = read_key_material(settings.basic_auth_conf, "basicAuthConf")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise SecurityConfigError("basicAuthConf", "the htpasswd file is not UTF-8 text") from None
        return cls(parse_htpasswd(text))

    def authenticate(self, data: bytes, peer_certificate: PeerCertificate | None) -> Identity:
        """Check ``user:password`` auth data."""
        return self.check(_text(data, self.name))

    def authenticate_http(self, authorization: str | None, peer_certificate: PeerCertificate | None) -> Identity:
        """Check an ``Authorization: Basic <base64(user:password)>`` header."""
        if not authorization or not authorization[:6].lower() == "basic ":
            raise AuthenticationError(
                'Authentication token has to be started with "Basic "', "INVALID_HEADER", self.name
            )
        encoded = authorization[6:].strip()
        if len(encoded) > MAX_CREDENTIAL_BYTES:
            raise AuthenticationError(
                f"credentials are longer than {MAX_CREDENTIAL_BYTES} bytes", "INVALID_AUTH_DATA", self.name
            )
        try:
            decoded = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise AuthenticationError("Base64 decoding is failure", "INVALID_HEADER", self.name) from None
        return self.check(_text(decoded, self.name))

    def check(self, credentials: str) -> Identity:
        """The user of ``user:password`` when the password matches, else AuthenticationError."""
        user, sep, password = credentials.partition(":")
        if not sep or not user:
            raise AuthenticationError("Base64 decoded params are invalid", "INVALID_AUTH_DATA", self.name)
        hashed = self.users.get(user)
        if hashed is None:
            raise AuthenticationError("Unknown user or invalid password", "UNKNOWN_USER", self.name)
        if not verify_password(password, hashed):
            raise AuthenticationError("Unknown user or invalid password", "INVALID_PASSWORD", self.name)
        return Identity(user)


def common_name(certificate: PeerCertificate) -> str | None:
    """The most specific CN of a certificate's subject, or None."""
    if isinstance(certificate, Mapping):
        names = [value for rdn in certificate.get("subject", ()) for key, value in rdn if key == "commonName"]
        return str(names[-1]) if names else None
    try:
        cert = certificate if isinstance(certificate, x509.Certificate) else x509.load_der_x509_certificate(certificate)
        names = [attr.value for attr in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
    except (ValueError, TypeError):
        return None
    return str(names[-1]) if names else None


class TlsProvider:
    """``AuthenticationProviderTls``: the CN of the client certificate the TLS handshake verified."""

    method = "tls"
    name = "AuthenticationProviderTls"

    def authenticate(self, data: bytes, peer_certificate: PeerCertificate | None) -> Identity:
        """The CN of the peer certificate (the auth data is not used)."""
        return self._role(peer_certificate)

    def authenticate_http(self, authorization: str | None, peer_certificate: PeerCertificate | None) -> Identity:
        """The CN of the HTTPS client certificate."""
        return self._role(peer_certificate)

    def _role(self, peer_certificate: PeerCertificate | None) -> Identity:
        if not peer_certificate:
            raise AuthenticationError("Failed to get TLS certificates from client", "INVALID_CERTS", self.name)
        role = common_name(peer_certificate)
        if not role:
            raise AuthenticationError("Client unable to authenticate with TLS certificate", "INVALID_CN", self.name)
        return Identity(role)


def build_provider(
    method: str, settings: SecuritySettings, clock: Callable[[], float] = time.time
) -> AuthenticationProvider:
    """The provider of one auth method, with its keys or password file loaded (``clock``: token expiry)."""
    if method == "token":
        return TokenProvider.from_settings(settings, clock)
    if method == "basic":
        return BasicProvider.from_settings(settings)
    if method == "tls":
        return TlsProvider()
    raise SecurityConfigError("authenticationProviders", f"unknown auth method {method!r}")
