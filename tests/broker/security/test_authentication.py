"""The authentication service: providers by method, anonymous role, refresh flow, HTTP, counters."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from magnetar.broker.security import (
    REFRESH_AUTH_DATA,
    AuthenticationError,
    AuthenticationService,
    RefreshAction,
    SecurityConfigError,
    SecuritySettings,
)
from magnetar.broker.security.tokens import create_token, generate_secret_key
from tests.broker.security.conftest import Pki
from tests.broker.security.test_providers import SUITE_HTPASSWD

PROVIDERS = (
    "org.apache.pulsar.broker.authentication.AuthenticationProviderTls",
    "org.apache.pulsar.broker.authentication.AuthenticationProviderToken",
    "org.apache.pulsar.broker.authentication.AuthenticationProviderBasic",
)


@pytest.fixture
def secret(tmp_path: Path) -> bytes:
    key = generate_secret_key()
    (tmp_path / "secret.key").write_bytes(key)
    (tmp_path / ".htpasswd").write_text(SUITE_HTPASSWD)
    return key


def _service(tmp_path: Path, anonymous: str | None = "anonymous", clock: float | None = None,
             **overrides: Any) -> AuthenticationService:
    values: dict[str, Any] = {
        "authentication_enabled": True,
        "authentication_providers": PROVIDERS,
        "token_secret_key": f"file://{tmp_path}/secret.key",
        "basic_auth_conf": str(tmp_path / ".htpasswd"),
        "anonymous_user_role": anonymous,
        "authentication_refresh_check_seconds": 5,
    }
    values.update(overrides)
    settings = SecuritySettings(**values)
    if clock is None:
        return AuthenticationService.from_settings(settings)
    return AuthenticationService.from_settings(settings, clock=lambda: clock)


def test_connect_with_each_method(tmp_path: Path, secret: bytes, pki: Pki) -> None:
    service = _service(tmp_path)
    token_state = service.authenticate("token", create_token(secret, "token-principal", 60).encode())
    assert (token_state.role, token_state.method) == ("token-principal", "token")
    assert token_state.expires_at is not None
    basic = service.authenticate("basic", b"admin:123456")
    assert (basic.role, basic.expires_at) == ("admin", None)
    tls = service.authenticate("tls", b"", pki.client_cert_der)
    assert tls.role == "admin"


def test_unknown_or_missing_method_gets_the_anonymous_role(tmp_path: Path, secret: bytes) -> None:
    service = _service(tmp_path)
    for method in (None, "", "none", "unknown"):
        state = service.authenticate(method, b"admin:123456")
        assert (state.role, state.method, state.expires_at) == ("anonymous", "anonymous", None)
    refused = _service(tmp_path, anonymous=None)
    with pytest.raises(AuthenticationError, match="^No anonymous role, and no authentication provider configured$"):
        refused.authenticate("unknown", b"")
    assert refused.counters.failures[("AuthenticationService", "unknown", "NO_ANONYMOUS_ROLE")] == 1


def test_bad_credentials_of_a_known_method_are_refused_not_made_anonymous(tmp_path: Path, secret: bytes) -> None:
    service = _service(tmp_path)
    with pytest.raises(AuthenticationError, match="Unknown user or invalid password"):
        service.authenticate("basic", b"admin:654321")
    with pytest.raises(AuthenticationError, match="JWT expired"):
        service.authenticate("token", create_token(secret, "alice", 1, now=0).encode())
    with pytest.raises(AuthenticationError, match="Failed to get TLS certificates"):
        service.authenticate("tls", b"")


def test_disabled_authentication_has_no_role(tmp_path: Path) -> None:
    service = AuthenticationService.from_settings(SecuritySettings())
    assert not service.enabled
    assert service.authenticate("token", b"garbage").role is None
    assert service.authenticate_http("Bearer garbage") is None


def test_refresh_flow_challenges_once_then_closes(tmp_path: Path, secret: bytes) -> None:
    service = _service(tmp_path, clock=1000)
    state = service.authenticate("token", create_token(secret, "alice", 10, now=1000).encode())
    assert state.expires_at == 1010
    assert not state.is_expired(1005) and state.is_expired(1011)
    assert service.refresh_action(state, 1005) is RefreshAction.NONE
    assert service.refresh_delay(state, 1008) == 2
    assert service.refresh_action(state, 1011) is RefreshAction.CHALLENGE
    assert REFRESH_AUTH_DATA == b"PulsarAuthRefresh"
    assert service.refresh_action(state, 1016) is RefreshAction.CLOSE
    fresh = service.respond_to_challenge(state, create_token(secret, "alice", 26, now=1000).encode())
    assert (fresh.role, fresh.expires_at, fresh.challenge_pending) == ("alice", 1026, False)
    assert service.refresh_action(fresh, 1020) is RefreshAction.NONE


def test_a_refresh_must_keep_the_role_and_be_valid(tmp_path: Path, secret: bytes) -> None:
    service = _service(tmp_path)
    state = service.authenticate("token", create_token(secret, "alice", 10).encode())
    with pytest.raises(AuthenticationError, match="^Auth role does not match: previous alice, new bob$"):
        service.respond_to_challenge(state, create_token(secret, "bob", 10).encode())
    with pytest.raises(AuthenticationError, match="JWT expired"):
        service.respond_to_challenge(state, create_token(secret, "alice", 1, now=0).encode())
    anonymous = service.authenticate(None, b"")
    assert service.refresh_action(anonymous, 10**12) is RefreshAction.NONE
    assert service.refresh_delay(anonymous) is None


def test_http_bearer_basic_certificate_and_anonymous(tmp_path: Path, secret: bytes, pki: Pki) -> None:
    service = _service(tmp_path)
    assert service.authenticate_http("Bearer " + create_token(secret, "superUser")) == "superUser"
    assert service.authenticate_http("Basic " + base64.b64encode(b"admin:123456").decode()) == "admin"
    assert service.authenticate_http(None, pki.client_cert_der) == "admin"
    assert service.authenticate_http(None) == "anonymous"
    assert service.authenticate_http("", None) == "anonymous"
    assert service.authenticate_http("Bearer " + create_token(secret, "x"), method="token") == "x"


@pytest.mark.parametrize(
    ("header", "method", "message"),
    [
        ("Bearer not-a-jwt", None, "Failed to authentication token"),
        ("Basic " + base64.b64encode(b"admin:nope").decode(), None, "Unknown user or invalid password"),
        ("Digest abc", None, "Unsupported Authorization header scheme"),
        ("Bearer x", "kerberos", "Unsupported authentication method: [kerberos]."),
    ],
)
def test_http_bad_credentials_are_refused(tmp_path: Path, secret: bytes, header: str, method: str | None,
                                          message: str) -> None:
    with pytest.raises(AuthenticationError) as info:
        _service(tmp_path).authenticate_http(header, method=method)
    assert info.value.message.startswith(message)


def test_http_without_credentials_and_without_anonymous_role(tmp_path: Path, secret: bytes) -> None:
    with pytest.raises(AuthenticationError, match="No anonymous role"):
        _service(tmp_path, anonymous=None).authenticate_http(None)


def test_counters_follow_pulsars_labels(tmp_path: Path, secret: bytes) -> None:
    service = _service(tmp_path)
    service.authenticate("basic", b"admin:123456")
    service.authenticate("basic", b"admin:123456")
    for data in (b"admin:x", b"ghost:x"):
        with pytest.raises(AuthenticationError):
            service.authenticate("basic", data)
    assert service.counters.success == {("AuthenticationProviderBasic", "basic"): 2}
    assert service.counters.failures == {
        ("AuthenticationProviderBasic", "basic", "INVALID_PASSWORD"): 1,
        ("AuthenticationProviderBasic", "basic", "UNKNOWN_USER"): 1,
    }
    assert ("pulsar_authentication_success_total", {"provider_name": "AuthenticationProviderBasic",
                                                     "auth_method": "basic"}, 2) in service.counters.samples()
    assert ("pulsar_authentication_failures_total", {"provider_name": "AuthenticationProviderBasic",
            "auth_method": "basic", "reason": "UNKNOWN_USER"}, 1) in service.counters.samples()


def test_unusable_provider_files_are_reported_at_start(tmp_path: Path) -> None:
    with pytest.raises(SecurityConfigError, match="^tokenSecretKey: cannot read"):
        _service(tmp_path)
    (tmp_path / "secret.key").write_bytes(generate_secret_key())
    with pytest.raises(SecurityConfigError, match="^basicAuthConf: is neither"):
        _service(tmp_path)
