"""The OpenID Connect provider against a local issuer: discovery, JWKS caching, every refusal."""

from __future__ import annotations

import base64
import os
import time
from collections.abc import Iterator

import jwt
import pytest

from magnetar.broker.security import (
    AuthenticationError,
    AuthenticationService,
    SecurityConfigError,
    SecuritySettings,
)
from magnetar.broker.security.openid import OpenIDProvider
from magnetar.broker.security.provider_list import ProviderList
from magnetar.broker.security.tokens import create_token
from tests.broker.security.oidc_issuer import Issuer, new_key

OPENID = "org.apache.pulsar.broker.authentication.oidc.AuthenticationProviderOpenID"


@pytest.fixture(params=["RS256", "ES256"])
def issuer(request: pytest.FixtureRequest) -> Iterator[Issuer]:
    with Issuer(algorithm=request.param) as running:
        yield running


def settings(issuer: Issuer, **extra: object) -> SecuritySettings:
    return SecuritySettings.from_pulsar({
        "authenticationEnabled": "true",
        "authenticationProviders": OPENID,
        "openIDAllowedTokenIssuers": issuer.url,
        "openIDAllowedAudiences": f"other-cluster,{issuer.audience}",
        "openIDRequireIssuersUseHttps": "false",
        **{key: str(value) for key, value in extra.items()},
    })


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        # a little ahead: tokens minted later in the test (whole seconds) are never "not yet valid"
        self.now = time.time() + 2

    def __call__(self) -> float:
        return self.now


def authenticate(service: AuthenticationService, token: str) -> str | None:
    """CONNECT as the session does it: fetch what is missing (here inline), then check."""
    fetch = service.pending_fetch("token", token.encode())
    if fetch is not None:
        fetch()
    return service.authenticate("token", token.encode()).role


def refusal(service: AuthenticationService, token: str) -> AuthenticationError:
    with pytest.raises(AuthenticationError) as info:
        authenticate(service, token)
    return info.value


def test_a_token_of_the_issuer_authenticates_and_expires_at_its_exp(issuer: Issuer) -> None:
    service = AuthenticationService.from_settings(settings(issuer))
    assert isinstance(service.providers["token"], OpenIDProvider)
    token = issuer.token("app-1", lifetime=600)
    with pytest.raises(AuthenticationError) as info:
        service.authenticate("token", token.encode())
    assert info.value.reason == "ERROR_RETRIEVING_PROVIDER_METADATA"
    assert authenticate(service, token) == "app-1"
    full = service.authenticate("token", token.encode())
    assert full.method == "token" and full.expires_at is not None and 590 < full.expires_at - time.time() <= 600
    assert issuer.requests == {"/.well-known/openid-configuration": 1, "/jwks": 1}
    assert service.pending_fetch("token", issuer.token("app-2").encode()) is None  # cached: nothing to fetch
    assert service.counters.success[("AuthenticationProviderOpenID", "token")] == 2


def test_refusals_name_pulsars_reasons(issuer: Issuer) -> None:
    service = AuthenticationService.from_settings(settings(issuer))
    assert authenticate(service, issuer.token()) == "my-id"
    cases = {
        "UNSUPPORTED_ISSUER": issuer.token(issuer="https://elsewhere.example"),
        "INVALID_JWT_CLAIM": issuer.token(audience="not-this-cluster"),
        "EXPIRED_JWT": issuer.token(lifetime=-5),
        "ERROR_VERIFYING_JWT_SIGNATURE": issuer.token(key=new_key(issuer.algorithm)),
        "ERROR_DECODING_JWT": "not-a-jwt",
    }
    for reason, token in cases.items():
        assert refusal(service, token).reason == reason, reason
    missing_nbf = refusal(service, issuer.token(nbf=None))
    assert missing_nbf.reason == "INVALID_JWT_CLAIM" and "nbf" in missing_nbf.message
    assert "Issuer not allowed: https://elsewhere.example" in refusal(service, cases["UNSUPPORTED_ISSUER"]).message
    assert refusal(service, issuer.token(iss=None)).message == "Issuer cannot be null"
    # only the first token fetched; the refused ones fetched nothing more
    assert issuer.requests == {"/.well-known/openid-configuration": 1, "/jwks": 1}


def test_the_role_claim_and_the_leeway(issuer: Issuer) -> None:
    clock = Clock()
    service = AuthenticationService.from_settings(
        settings(issuer, openIDRoleClaim="roles", openIDAcceptedTimeLeewaySeconds=30), clock)
    assert authenticate(service, issuer.token("svc", roles=["producer-role", "other"])) == "producer-role"
    assert refusal(service, issuer.token("svc")).reason == "INVALID_JWT_CLAIM"  # the role claim is required
    token = issuer.token("svc", lifetime=60, roles="r")
    clock.now += 80  # expired 20 s ago: within the leeway
    assert authenticate(service, token) == "r"
    clock.now += 20
    assert refusal(service, token).reason == "EXPIRED_JWT"


def test_a_new_key_id_fetches_the_jwks_again_at_most_once_per_interval(issuer: Issuer) -> None:
    clock = Clock()
    service = AuthenticationService.from_settings(settings(issuer, openIDKeyIdCacheMissRefreshSeconds=60), clock)
    assert authenticate(service, issuer.token("a")) == "a"
    issuer.rotate()
    assert authenticate(service, issuer.token("b")) == "b"  # unknown kid: the JWKS fetched again
    assert issuer.requests["/jwks"] == 2
    unknown = issuer.token("c", kid="never-published")
    for _ in range(3):  # the set was fetched for a missing key id less than 60 s ago: not again
        assert refusal(service, unknown).reason == "ERROR_RETRIEVING_PUBLIC_KEY"
    assert issuer.requests["/jwks"] == 2
    clock.now += 61
    assert refusal(service, unknown).reason == "ERROR_RETRIEVING_PUBLIC_KEY"
    assert refusal(service, unknown).reason == "ERROR_RETRIEVING_PUBLIC_KEY"
    assert issuer.requests["/jwks"] == 3


def test_the_cache_refreshes_after_write_and_serves_while_the_issuer_is_down(issuer: Issuer) -> None:
    clock = Clock()
    service = AuthenticationService.from_settings(
        settings(issuer, openIDCacheRefreshAfterWriteSeconds=100, openIDCacheExpirationSeconds=1000), clock)
    assert authenticate(service, issuer.token("a")) == "a"
    clock.now += 101
    assert authenticate(service, issuer.token("a", lifetime=3600)) == "a"
    assert issuer.requests == {"/.well-known/openid-configuration": 2, "/jwks": 2}
    issuer.stop()
    clock.now += 101  # stale: the fetch fails, the cached keys still serve
    assert authenticate(service, issuer.token("a", lifetime=3600)) == "a"
    clock.now += 1000  # expired: nothing left
    error = refusal(service, issuer.token("a", lifetime=3600))
    assert error.reason == "ERROR_RETRIEVING_PROVIDER_METADATA" and "Connection refused" in error.message


def test_a_discovery_document_naming_another_issuer_is_refused(issuer: Issuer) -> None:
    issuer.advertised_issuer = "https://impostor.example"
    service = AuthenticationService.from_settings(settings(issuer))
    error = refusal(service, issuer.token())
    assert error.reason == "ERROR_RETRIEVING_PROVIDER_METADATA" and "Issuer URL mismatch" in error.message


def test_a_key_of_another_algorithm_is_refused() -> None:
    with Issuer(algorithm="RS256") as issuer:
        service = AuthenticationService.from_settings(settings(issuer))
        assert authenticate(service, issuer.token()) == "my-id"
        forged = jwt.encode({"iss": issuer.url, "sub": "x", "aud": issuer.audience, "iat": 0, "nbf": 0, "exp": 2**40},
                            "secret-guessed-of-32-bytes-length", algorithm="HS256", headers={"kid": issuer.kid})
        assert refusal(service, forged).reason == "UNSUPPORTED_ALGORITHM"
        es_key = new_key("ES256")
        es_token = jwt.encode({"iss": issuer.url, "sub": "x", "aud": issuer.audience, "iat": 0, "nbf": 0,
                               "exp": 2**40}, es_key, algorithm="ES256", headers={"kid": issuer.kid})
        assert refusal(service, es_token).reason == "ALGORITHM_MISMATCH"


def test_http_bearer_tokens(issuer: Issuer) -> None:
    service = AuthenticationService.from_settings(settings(issuer))
    header = f"Bearer {issuer.token('web')}"
    fetch = service.pending_fetch_http(header)
    assert fetch is not None
    fetch()
    assert service.authenticate_http(header) == "web"
    with pytest.raises(AuthenticationError):
        service.authenticate_http(f"Bearer {issuer.token(audience='x')}")


def test_with_the_token_provider_either_accepts() -> None:
    secret = os.urandom(32)
    with Issuer() as issuer:
        service = AuthenticationService.from_settings(SecuritySettings.from_pulsar({
            "authenticationEnabled": "true",
            "authenticationProviders": f"org.apache.pulsar.broker.authentication.AuthenticationProviderToken,{OPENID}",
            "tokenSecretKey": "data:;base64," + base64.b64encode(secret).decode(),
            "openIDAllowedTokenIssuers": issuer.url, "openIDAllowedAudiences": issuer.audience,
            "openIDRequireIssuersUseHttps": "false",
        }))
        assert isinstance(service.providers["token"], ProviderList)
        assert authenticate(service, create_token(secret, "by-secret")) == "by-secret"
        assert authenticate(service, issuer.token("by-oidc")) == "by-oidc"
        error = refusal(service, issuer.token(audience="x"))
        assert error.provider == "AuthenticationProviderOpenID" and error.reason == "INVALID_JWT_CLAIM"


def test_settings_are_checked_as_pulsar_checks_them() -> None:
    base = {"authenticationEnabled": "true", "authenticationProviders": "openid"}
    with pytest.raises(SecurityConfigError, match="openIDAllowedTokenIssuers"):
        SecuritySettings.from_pulsar({**base, "openIDAllowedAudiences": "a"})
    with pytest.raises(SecurityConfigError, match="openIDAllowedAudiences"):
        SecuritySettings.from_pulsar({**base, "openIDAllowedTokenIssuers": "https://i.example"})
    with pytest.raises(SecurityConfigError, match="does not use https"):
        SecuritySettings.from_pulsar({**base, "openIDAllowedTokenIssuers": "http://i.example",
                                      "openIDAllowedAudiences": "a"})
    with pytest.raises(SecurityConfigError, match="openIDFallbackDiscoveryMode"):
        SecuritySettings.from_pulsar({"openIDFallbackDiscoveryMode": "KUBERNETES_DISCOVER_TRUSTED_ISSUER"})
    ok = SecuritySettings.from_pulsar({**base, "openIDAllowedTokenIssuers": "https://a.example, https://b.example",
                                       "openIDAllowedAudiences": "x"})
    assert ok.openid_allowed_token_issuers == ("https://a.example", "https://b.example")
    assert ok.provider_methods == ("token",) and ok.provider_classes == (OPENID,)
