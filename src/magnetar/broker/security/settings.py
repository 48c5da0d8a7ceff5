"""Every security setting, under Pulsar's names, validated once.

:class:`SecuritySettings` holds the broker's authentication, authorization and TLS settings. Each
field is the snake_case form of the Pulsar ``broker.conf`` key it stands for (``tokenSecretKey`` ->
``token_secret_key``); :data:`PULSAR_SECURITY_KEYS` is that mapping. Building a settings object
validates it: a bad value raises :class:`SecurityConfigError` naming the Pulsar key and the reason.
Key and certificate files are not opened here: the authentication service and the TLS context
builder do that, and report unusable files the same way.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from magnetar.broker.security.errors import SecurityConfigError

#: Pulsar's OpenID Connect provider (it serves the auth method ``token`` too)
OPENID_PROVIDER_CLASS = "org.apache.pulsar.broker.authentication.oidc.AuthenticationProviderOpenID"
#: Pulsar's authentication provider class names -> the auth method name each one serves
PROVIDER_CLASSES: dict[str, str] = {
    "org.apache.pulsar.broker.authentication.AuthenticationProviderToken": "token",
    "org.apache.pulsar.broker.authentication.AuthenticationProviderBasic": "basic",
    "org.apache.pulsar.broker.authentication.AuthenticationProviderTls": "tls",
    OPENID_PROVIDER_CLASS: "token",
}
#: short provider names taken in authenticationProviders besides the method names
PROVIDER_ALIASES: dict[str, str] = {"openid": OPENID_PROVIDER_CLASS}
#: the provider class name that serves each auth method name by default (method names as short provider names)
PROVIDER_CLASS_OF_METHOD: dict[str, str] = {
    method: cls for cls, method in PROVIDER_CLASSES.items() if cls != OPENID_PROVIDER_CLASS
}
PULSAR_AUTHORIZATION_PROVIDER = "org.apache.pulsar.broker.authorization.PulsarAuthorizationProvider"
TOKEN_PUBLIC_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")
TLS_PROTOCOLS = ("TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3")

#: Pulsar broker.conf key -> SecuritySettings field
PULSAR_SECURITY_KEYS: dict[str, str] = {
    "authenticationEnabled": "authentication_enabled",
    "authenticationProviders": "authentication_providers",
    "authorizationEnabled": "authorization_enabled",
    "authorizationProvider": "authorization_provider",
    "superUserRoles": "super_user_roles",
    "anonymousUserRole": "anonymous_user_role",
    "authenticationRefreshCheckSeconds": "authentication_refresh_check_seconds",
    "tokenSecretKey": "token_secret_key",
    "tokenPublicKey": "token_public_key",
    "tokenAuthClaim": "token_auth_claim",
    "tokenAudienceClaim": "token_audience_claim",
    "tokenAudience": "token_audience",
    "tokenPublicAlg": "token_public_alg",
    "tokenAllowedClockSkewSeconds": "token_allowed_clock_skew_seconds",
    "basicAuthConf": "basic_auth_conf",
    "brokerServicePortTls": "broker_service_port_tls",
    "webServicePortTls": "web_service_port_tls",
    "tlsCertificateFilePath": "tls_certificate_file_path",
    "tlsKeyFilePath": "tls_key_file_path",
    "tlsTrustCertsFilePath": "tls_trust_certs_file_path",
    "tlsRequireTrustedClientCertOnConnect": "tls_require_trusted_client_cert_on_connect",
    "tlsAllowInsecureConnection": "tls_allow_insecure_connection",
    "tlsProtocols": "tls_protocols",
    "tlsCiphers": "tls_ciphers",
    "authorizationAllowWildcardsMatching": "authorization_allow_wildcards_matching",
    "openIDAllowedTokenIssuers": "openid_allowed_token_issuers",
    "openIDAllowedAudiences": "openid_allowed_audiences",
    "openIDRoleClaim": "openid_role_claim",
    "openIDAcceptedTimeLeewaySeconds": "openid_accepted_time_leeway_seconds",
    "openIDCacheSize": "openid_cache_size",
    "openIDCacheRefreshAfterWriteSeconds": "openid_cache_refresh_after_write_seconds",
    "openIDCacheExpirationSeconds": "openid_cache_expiration_seconds",
    "openIDKeyIdCacheMissRefreshSeconds": "openid_key_id_cache_miss_refresh_seconds",
    "openIDHttpConnectionTimeoutMillis": "openid_http_connection_timeout_millis",
    "openIDHttpReadTimeoutMillis": "openid_http_read_timeout_millis",
    "openIDRequireIssuersUseHttps": "openid_require_issuers_use_https",
    "openIDTokenIssuerTrustCertsFilePath": "openid_token_issuer_trust_certs_file_path",
    "openIDFallbackDiscoveryMode": "openid_fallback_discovery_mode",
}
#: SecuritySettings field -> its Pulsar key (for error messages)
PULSAR_NAME_OF_FIELD: dict[str, str] = {field: key for key, field in PULSAR_SECURITY_KEYS.items()}


@dataclass(frozen=True, repr=False, eq=False)
class SecuritySettings:
    """The broker's authentication, authorization and TLS settings (Pulsar's semantics and defaults)."""

    authentication_enabled: bool = False
    #: Pulsar provider class names (or the method names ``token``, ``basic``, ``tls``)
    authentication_providers: tuple[str, ...] = ()
    authorization_enabled: bool = False
    authorization_provider: str = PULSAR_AUTHORIZATION_PROVIDER
    super_user_roles: tuple[str, ...] = ()
    #: the role of clients that present no credentials (or a method no provider serves); None: refuse them
    anonymous_user_role: str | None = None
    #: how often a connection's credentials are checked for expiry
    authentication_refresh_check_seconds: int = 60
    #: HMAC key for tokens: ``file:///path`` (raw bytes), ``data:;base64,...``, a path, or base64 text
    token_secret_key: str | None = None
    #: public key for RS*/ES*/PS* tokens, same forms; DER (as ``pulsar tokens create-key-pair`` writes) or PEM
    token_public_key: str | None = None
    token_auth_claim: str = "sub"
    token_audience_claim: str | None = None
    token_audience: str | None = None
    token_public_alg: str = "RS256"
    token_allowed_clock_skew_seconds: int = 0
    #: htpasswd content for the basic provider: ``file:``/``data:`` URL, a path, or base64 text
    basic_auth_conf: str | None = None
    broker_service_port_tls: int | None = None
    web_service_port_tls: int | None = None
    tls_certificate_file_path: str | None = None
    tls_key_file_path: str | None = None
    tls_trust_certs_file_path: str | None = None
    tls_require_trusted_client_cert_on_connect: bool = False
    tls_allow_insecure_connection: bool = False
    tls_protocols: tuple[str, ...] = ()
    tls_ciphers: tuple[str, ...] = ()
    authorization_allow_wildcards_matching: bool = False
    #: OpenID Connect provider: the issuers whose tokens are accepted (``iss``), https unless allowed otherwise
    openid_allowed_token_issuers: tuple[str, ...] = ()
    #: a token's ``aud`` must name one of these
    openid_allowed_audiences: tuple[str, ...] = ()
    openid_role_claim: str = "sub"
    openid_accepted_time_leeway_seconds: int = 0
    #: issuers (provider metadata) and JWKS documents kept, each
    openid_cache_size: int = 5
    #: a cached document is fetched again after this long (the old one serves while that fails)
    openid_cache_refresh_after_write_seconds: int = 18 * 60 * 60
    #: a cached document is dropped after this long
    openid_cache_expiration_seconds: int = 24 * 60 * 60
    #: an unknown key id fetches the JWKS again at most this often
    openid_key_id_cache_miss_refresh_seconds: int = 5 * 60
    openid_http_connection_timeout_millis: int = 10_000
    openid_http_read_timeout_millis: int = 10_000
    openid_require_issuers_use_https: bool = True
    #: CA certificates (PEM) the issuers' HTTPS certificates are checked against (default: the system's)
    openid_token_issuer_trust_certs_file_path: str | None = None
    #: only DISABLED (Pulsar's Kubernetes discovery modes are not available)
    openid_fallback_discovery_mode: str = "DISABLED"

    # __eq__, __hash__ and __repr__ written out, with the results dataclass's generated ones give (same class and
    # equal fields; the hash of the fields' tuple; every field by name): generated, they are three functions
    # compiled from source whenever the class is made, a third of its cost on every broker's start path
    def __eq__(self, other: object) -> bool:
        """Whether ``other`` is a SecuritySettings with equal fields."""
        if other.__class__ is self.__class__:
            return _field_values(self) == _field_values(other)
        return NotImplemented

    def __hash__(self) -> int:
        """The hash of the fields' values."""
        return hash(_field_values(self))

    def __repr__(self) -> str:
        """Every field, by name."""
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self))
        return f"{type(self).__qualname__}({shown})"

    def __post_init__(self) -> None:
        for name in ("authentication_providers", "super_user_roles", "tls_protocols", "tls_ciphers",
                     "openid_allowed_token_issuers", "openid_allowed_audiences"):
            value = getattr(self, name)
            if isinstance(value, str):
                value = _split_list(value)
            object.__setattr__(self, name, tuple(value))
        if not self.token_auth_claim:
            object.__setattr__(self, "token_auth_claim", "sub")
        for name in ("anonymous_user_role", "token_secret_key", "token_public_key", "token_audience_claim",
                     "token_audience", "basic_auth_conf", "tls_certificate_file_path", "tls_key_file_path",
                     "tls_trust_certs_file_path", "openid_token_issuer_trust_certs_file_path"):
            if getattr(self, name) == "":
                object.__setattr__(self, name, None)
        self._validate()

    @property
    def tls_enabled(self) -> bool:
        """Whether a TLS listener (binary or HTTPS) is configured."""
        return self.broker_service_port_tls is not None or self.web_service_port_tls is not None

    @property
    def provider_classes(self) -> tuple[str, ...]:
        """The Pulsar class names of the configured providers, in configuration order, once each."""
        names = (PROVIDER_ALIASES.get(name, PROVIDER_CLASS_OF_METHOD.get(name, name))
                 for name in self.authentication_providers)
        return tuple(dict.fromkeys(names))

    @property
    def provider_methods(self) -> tuple[str, ...]:
        """The auth method names of the configured providers, in configuration order, once each."""
        return tuple(dict.fromkeys(PROVIDER_CLASSES[name] for name in self.provider_classes))

    def is_super_user(self, role: str | None) -> bool:
        """Whether ``role`` is one of ``superUserRoles``."""
        return role is not None and role in self.super_user_roles

    @classmethod
    def from_pulsar(cls, raw: Mapping[str, str]) -> SecuritySettings:
        """Settings from raw Pulsar key/values (other keys are skipped; an empty value means unset)."""
        kwargs: dict[str, Any] = {}
        kinds = {f.name: f.type for f in dataclasses.fields(cls)}
        for key, field in PULSAR_SECURITY_KEYS.items():
            text = raw.get(key)
            if text is None or not text.strip():
                continue
            kwargs[field] = _convert(key, text.strip(), str(kinds[field]))
        return cls(**kwargs)

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> SecuritySettings:
        """Settings from a mapping keyed by field names or Pulsar names (a TOML ``[security]`` table).

        Values may be typed (``true``, ``6651``, ``["a", "b"]``) or Pulsar's text; an unknown key is
        a SecurityConfigError.
        """
        fields = {f.name: str(f.type) for f in dataclasses.fields(cls)}
        kwargs: dict[str, Any] = {}
        for key, value in values.items():
            field = PULSAR_SECURITY_KEYS.get(key, key)
            if field not in fields:
                raise SecurityConfigError(key, "unknown security setting")
            if isinstance(value, str):
                kwargs[field] = _convert(key, value.strip(), fields[field]) if value.strip() else None
            elif isinstance(value, bool) != (fields[field] == "bool") or isinstance(value, float):
                raise SecurityConfigError(key, f"{value!r} is not a valid {fields[field]}")
            else:
                kwargs[field] = tuple(value) if isinstance(value, list) else value
        return cls(**{k: v for k, v in kwargs.items() if v is not None})

    def _validate(self) -> None:
        for name in self.authentication_providers:
            if name not in PROVIDER_CLASSES and name not in PROVIDER_CLASS_OF_METHOD and name not in PROVIDER_ALIASES:
                known = ", ".join(PROVIDER_CLASSES)
                _fail("authentication_providers", f"unknown provider {name!r} (magnetar has {known})")
        if self.authorization_provider != PULSAR_AUTHORIZATION_PROVIDER:
            _fail("authorization_provider", f"only {PULSAR_AUTHORIZATION_PROVIDER} is available")
        if self.authentication_refresh_check_seconds < 1:
            _fail("authentication_refresh_check_seconds", "must be at least 1 second")
        if self.token_allowed_clock_skew_seconds < 0:
            _fail("token_allowed_clock_skew_seconds", "must not be negative")
        if self.token_public_alg not in TOKEN_PUBLIC_ALGORITHMS:
            _fail("token_public_alg", f"{self.token_public_alg!r} is not one of {', '.join(TOKEN_PUBLIC_ALGORITHMS)}")
        if self.token_audience_claim and not self.token_audience:
            _fail("token_audience", f"tokenAudienceClaim is {self.token_audience_claim!r} but tokenAudience is not set")
        classes = self.provider_classes if self.authentication_enabled else ()
        token_class = PROVIDER_CLASS_OF_METHOD["token"]
        if token_class in classes and not (self.token_secret_key or self.token_public_key):
            _fail("token_secret_key", "the token provider needs tokenSecretKey or tokenPublicKey")
        if PROVIDER_CLASS_OF_METHOD["basic"] in classes and not self.basic_auth_conf:
            _fail("basic_auth_conf", "the basic provider needs an htpasswd file")
        for name in ("broker_service_port_tls", "web_service_port_tls"):
            port = getattr(self, name)
            if port is not None and not 0 <= port <= 65535:
                _fail(name, f"{port} is not a port number (0-65535)")
        if self.tls_enabled:
            if not self.tls_certificate_file_path:
                _fail("tls_certificate_file_path", "a TLS port is set but no certificate file is")
            if not self.tls_key_file_path:
                _fail("tls_key_file_path", "a TLS port is set but no private key file is")
        for protocol in self.tls_protocols:
            if protocol not in TLS_PROTOCOLS:
                _fail("tls_protocols", f"{protocol!r} is not one of {', '.join(TLS_PROTOCOLS)}")
        if any(not role.strip() for role in self.super_user_roles):
            _fail("super_user_roles", "a role name is empty")
        self._validate_openid(OPENID_PROVIDER_CLASS in classes)

    def _validate_openid(self, configured: bool) -> None:
        """Pulsar's checks of the OpenID Connect provider's settings (only when it is configured)."""
        if self.openid_fallback_discovery_mode != "DISABLED":
            _fail("openid_fallback_discovery_mode", "only DISABLED is available (no Kubernetes discovery)")
        for name in ("openid_accepted_time_leeway_seconds", "openid_key_id_cache_miss_refresh_seconds"):
            if getattr(self, name) < 0:
                _fail(name, "must not be negative")
        for name in ("openid_cache_size", "openid_cache_refresh_after_write_seconds",
                     "openid_cache_expiration_seconds", "openid_http_connection_timeout_millis",
                     "openid_http_read_timeout_millis"):
            if getattr(self, name) < 1:
                _fail(name, "must be at least 1")
        if not configured:
            return
        if not self.openid_allowed_token_issuers:
            _fail("openid_allowed_token_issuers", "the OpenID provider needs at least one issuer")
        if not self.openid_allowed_audiences:
            _fail("openid_allowed_audiences", "the OpenID provider needs at least one audience")
        if not self.openid_role_claim:
            _fail("openid_role_claim", "must not be empty")
        for issuer in self.openid_allowed_token_issuers:
            if self.openid_require_issuers_use_https and not issuer.lower().startswith("https://"):
                _fail("openid_allowed_token_issuers",
                      f"issuer URL does not use https, but must: {issuer} (openIDRequireIssuersUseHttps)")


#: the fields' values in their order, as a tuple (what the generated __eq__ and __hash__ compare and hash)
_field_values = operator.attrgetter(*(f.name for f in dataclasses.fields(SecuritySettings)))


def _fail(field: str, reason: str) -> None:
    raise SecurityConfigError(PULSAR_NAME_OF_FIELD.get(field, field), reason)


def _split_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _convert(key: str, text: str, kind: str) -> Any:
    """One Pulsar text value as the field's type; raise SecurityConfigError naming ``key``."""
    if kind == "bool":
        lowered = text.lower()
        if lowered not in ("true", "false"):
            raise SecurityConfigError(key, f"{text!r} is not true or false")
        return lowered == "true"
    if kind in ("int", "int | None"):
        try:
            return int(text)
        except ValueError:
            raise SecurityConfigError(key, f"{text!r} is not an integer") from None
    if kind == "tuple[str, ...]":
        return tuple(_split_list(text))
    return text


def settings_fields() -> Iterable[str]:
    """The field names of SecuritySettings (for tools that list or document them)."""
    return (f.name for f in dataclasses.fields(SecuritySettings))
