"""Pulsar's OpenID Connect provider (``AuthenticationProviderOpenID``): JWTs of trusted issuers.

A client sends a JWT under the auth method ``token`` (what the OAuth2 client plugins send). The
token's ``iss`` must be one of ``openIDAllowedTokenIssuers``; its signature is checked with the
issuer's key named by the token's ``kid``, found through the issuer's discovery document and
JWKS (:mod:`magnetar.broker.security.openid_discovery`). As Pulsar's provider: algorithms RS256,
RS384, RS512, ES256, ES384, ES512 (a JWK that names an ``alg`` must name the token's); ``iat``,
``exp``, ``nbf`` and ``sub`` must be present (and ``openIDRoleClaim`` when it is not ``sub``);
``aud`` must name one of ``openIDAllowedAudiences``; times are checked with
``openIDAcceptedTimeLeewaySeconds``. The role is the role claim (a list's first item); the
connection's credentials expire at ``exp`` (then the broker sends AUTH_CHALLENGE). Refusal
reasons are Pulsar's ``AuthenticationExceptionCode`` names.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from magnetar.broker.security.errors import AuthenticationError
from magnetar.broker.security.openid_discovery import PROVIDER_NAME, DiscoveryOptions, OpenIDDiscovery
from magnetar.broker.security.providers import MAX_CREDENTIAL_BYTES, Identity, PeerCertificate
from magnetar.broker.security.settings import SecuritySettings

#: the algorithms Pulsar's provider accepts, with the key type each needs
ALGORITHMS: dict[str, type] = {
    "RS256": rsa.RSAPublicKey, "RS384": rsa.RSAPublicKey, "RS512": rsa.RSAPublicKey,
    "ES256": ec.EllipticCurvePublicKey, "ES384": ec.EllipticCurvePublicKey, "ES512": ec.EllipticCurvePublicKey,
}
_REQUIRED_CLAIMS = ("iat", "exp", "nbf", "sub")


def _refuse(message: str, reason: str) -> AuthenticationError:
    return AuthenticationError(message, reason, PROVIDER_NAME)


def _unverified(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(header, claims) of a JWT without checking it: only to pick the issuer and key."""
    if len(token) > MAX_CREDENTIAL_BYTES:
        raise _refuse(f"credentials are longer than {MAX_CREDENTIAL_BYTES} bytes", "ERROR_DECODING_JWT")
    try:
        header = jwt.get_unverified_header(token)
        claims = jwt.decode(token, options={"verify_signature": False})
    except (jwt.PyJWTError, ValueError, TypeError, RecursionError) as exc:
        raise _refuse(f"Unable to decode JWT: {str(exc)[:200]}", "ERROR_DECODING_JWT") from None
    if not isinstance(claims, dict):
        raise _refuse("Unable to decode JWT: the claims are not a JSON object", "ERROR_DECODING_JWT")
    return header, claims


class OpenIDProvider:
    """``AuthenticationProviderOpenID``: tokens of the allowed issuers, checked against their JWKS."""

    method = "token"
    name = PROVIDER_NAME

    def __init__(
        self,
        issuers: tuple[str, ...],
        audiences: tuple[str, ...],
        discovery: OpenIDDiscovery,
        role_claim: str = "sub",
        leeway_seconds: int = 0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.issuers = frozenset(issuers)
        self.audiences = list(audiences)
        self.discovery = discovery
        self.role_claim = role_claim
        self.leeway_seconds = leeway_seconds
        self.clock = clock

    @classmethod
    def from_settings(cls, settings: SecuritySettings, clock: Callable[[], float] = time.time) -> OpenIDProvider:
        """The provider the ``openID*`` settings describe (nothing is fetched until a token comes)."""
        timeout = max(settings.openid_http_connection_timeout_millis, settings.openid_http_read_timeout_millis)
        options = DiscoveryOptions(
            cache_size=settings.openid_cache_size,
            refresh_after_seconds=settings.openid_cache_refresh_after_write_seconds,
            expiration_seconds=settings.openid_cache_expiration_seconds,
            key_id_miss_refresh_seconds=settings.openid_key_id_cache_miss_refresh_seconds,
            timeout_seconds=timeout / 1000,
            require_https=settings.openid_require_issuers_use_https,
            trust_certs_file=settings.openid_token_issuer_trust_certs_file_path,
        )
        return cls(settings.openid_allowed_token_issuers, settings.openid_allowed_audiences,
                   OpenIDDiscovery(options, clock), settings.openid_role_claim,
                   settings.openid_accepted_time_leeway_seconds, clock)

    def pending_fetch(self, data: bytes) -> Callable[[], None] | None:
        """A blocking fetch of the issuer's metadata or keys a token needs, or None when they are cached.

        Tokens of issuers not allowed fetch nothing (their check refuses them).
        """
        try:
            header, claims = _unverified(data.decode("utf-8").strip())
        except (AuthenticationError, UnicodeDecodeError):
            return None
        issuer, key_id = claims.get("iss"), header.get("kid")
        if not isinstance(issuer, str) or issuer not in self.issuers:
            return None
        key_id = key_id if isinstance(key_id, str) else None
        if not self.discovery.needs_fetch(issuer, key_id):
            return None
        return lambda: self.discovery.fetch(issuer, key_id)

    def authenticate(self, data: bytes, peer_certificate: PeerCertificate | None) -> Identity:
        """Check the token sent as auth data."""
        try:
            return self.validate(data.decode("utf-8"))
        except UnicodeDecodeError:
            raise _refuse("Unable to decode JWT: not UTF-8 text", "ERROR_DECODING_JWT") from None

    def authenticate_http(self, authorization: str | None, peer_certificate: PeerCertificate | None) -> Identity:
        """Check the token of an ``Authorization: Bearer <token>`` header."""
        if not authorization or not authorization.startswith("Bearer "):
            raise _refuse("Invalid HTTP Authorization header", "ERROR_DECODING_JWT")
        return self.validate(authorization[len("Bearer "):])

    def validate(self, token: str) -> Identity:
        """The role and expiry of a token, or AuthenticationError (the issuer's keys must be cached:
        :meth:`pending_fetch`)."""
        token = token.strip()
        if not token:
            raise _refuse("Invalid token: cannot be blank", "ERROR_DECODING_JWT")
        header, claims = _unverified(token)
        issuer = claims.get("iss")
        if issuer is None:
            raise _refuse("Issuer cannot be null", "UNSUPPORTED_ISSUER")
        if not isinstance(issuer, str) or issuer not in self.issuers:
            raise _refuse(f"Issuer not allowed: {str(issuer)[:200]}", "UNSUPPORTED_ISSUER")
        algorithm = header.get("alg")
        if algorithm not in ALGORITHMS:
            raise _refuse(f"Unsupported algorithm: {str(algorithm)[:32]}", "UNSUPPORTED_ALGORITHM")
        key_id = header.get("kid")
        key = self.discovery.signing_key(issuer, key_id if isinstance(key_id, str) else None)
        if key.algorithm is not None and key.algorithm != algorithm:
            raise _refuse(f"JWK's alg [{key.algorithm[:32]}] does not match JWT's alg [{algorithm}]",
                          "ALGORITHM_MISMATCH")
        if not isinstance(key.key, ALGORITHMS[algorithm]):
            raise _refuse(f"Expected PublicKey alg [{algorithm}] does match actual alg.", "ALGORITHM_MISMATCH")
        verified = self._verify(token, key.key, algorithm)
        return Identity(self._role(verified), float(verified["exp"]))

    def _verify(self, token: str, key: Any, algorithm: str) -> dict[str, Any]:
        required = [*_REQUIRED_CLAIMS, *([self.role_claim] if self.role_claim != "sub" else [])]
        options = {"require": required, "verify_exp": False, "verify_nbf": False, "verify_iat": False}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                claims = jwt.decode(token, key, algorithms=[algorithm], audience=self.audiences, options=options)
        except jwt.InvalidSignatureError as exc:
            raise _refuse(f"JWT signature verification exception: {exc}", "ERROR_VERIFYING_JWT_SIGNATURE") from None
        except (jwt.InvalidAudienceError, jwt.MissingRequiredClaimError) as exc:
            raise _refuse(f"JWT contains invalid claim: {exc}", "INVALID_JWT_CLAIM") from None
        except jwt.InvalidAlgorithmError as exc:
            raise _refuse(f"JWT algorithm does not match Public Key algorithm: {exc}", "ALGORITHM_MISMATCH") from None
        except jwt.DecodeError as exc:
            raise _refuse(f"Error while decoding JWT: {str(exc)[:200]}", "ERROR_DECODING_JWT") from None
        except (jwt.PyJWTError, ValueError, TypeError) as exc:
            raise _refuse(f"JWT verification failed: {str(exc)[:200]}", "ERROR_VERIFYING_JWT") from None
        self._check_times(claims)
        return claims  # type: ignore[no-any-return]

    def _check_times(self, claims: Mapping[str, Any]) -> None:
        now, leeway = self.clock(), self.leeway_seconds
        times = {name: claims.get(name) for name in ("exp", "nbf", "iat")}
        for name, value in times.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
                raise _refuse(f"JWT contains invalid claim: {name} is not a number", "INVALID_JWT_CLAIM")
        if times["exp"] <= now - leeway:
            raise _refuse(f"JWT expired: The Token has expired on {int(times['exp'])}.", "EXPIRED_JWT")
        if times["nbf"] > now + leeway:
            raise _refuse(f"JWT contains invalid claim: The Token can't be used before {int(times['nbf'])}.",
                          "INVALID_JWT_CLAIM")
        if times["iat"] > now + leeway:
            raise _refuse(f"JWT contains invalid claim: The Token can't be used before {int(times['iat'])}.",
                          "INVALID_JWT_CLAIM")

    def _role(self, claims: Mapping[str, Any]) -> str:
        role = claims.get(self.role_claim)
        if isinstance(role, list) and role:
            role = role[0]
        if not isinstance(role, str) or not role:
            raise _refuse(f"JWT contains invalid claim: no role in claim {self.role_claim!r}", "INVALID_JWT_CLAIM")
        return role
