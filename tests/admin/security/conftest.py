"""A secured broker in this process (token and basic authentication, authorization) and its roles.

Plain HTTP and binary ports, and HTTPS and pulsar+ssl:// with a test CA (a client certificate with CN
``admin`` authenticates too). Roles: ``super`` (superuser, by token), ``admin`` (superuser, by Basic
``admin:123456`` or the client certificate), ``alice``
(admin of tenant ``acme``), ``bob`` (produce on ``acme/shop``), ``carol`` (consume on
``acme/shop``), ``mallory`` (a valid token and no grant); a request without credentials is
anonymous (no anonymousUserRole: refused with 401).
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from magnetar.broker.config import BrokerConfig
from magnetar.broker.security import SecuritySettings
from magnetar.broker.security.tokens import create_token, generate_secret_key
from magnetar.testing import BrokerThread, free_port
from tests.broker.security.conftest import Pki, pki  # noqa: F401 - the CA and certificates fixture

#: the official client suite's htpasswd line: user admin, password 123456 (Apache MD5)
HTPASSWD = "admin:$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf.\n"
NO_BODY = object()


@dataclass
class Answer:
    """Status and JSON (or text) body of one HTTP answer."""

    status: int
    body: Any

    @property
    def reason(self) -> str | None:
        return self.body.get("reason") if isinstance(self.body, dict) else None


class Caller:
    """HTTP requests as one role (an Authorization header value, or none)."""

    def __init__(self, base: str, authorization: str | None, headers: dict[str, str] | None = None) -> None:
        self.base = base
        self.authorization = authorization
        self.headers = headers or {}

    def __call__(self, method: str, path: str, body: Any = NO_BODY) -> Answer:
        headers = {"Accept": "application/json", **self.headers}
        data = None
        if body is not NO_BODY:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.authorization:
            headers["Authorization"] = self.authorization
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw.decode(errors="replace")
        return Answer(status, parsed)


@dataclass
class SecuredBroker:
    """The running broker, its secret key and a token per role."""

    thread: BrokerThread
    http_url: str
    service_url: str
    secret: bytes
    secret_path: Path
    pki: Pki
    https_port: int
    tls_port: int

    def token(self, role: str, expires_in: int | None = None) -> str:
        """A token for ``role`` signed with the broker's key."""
        return create_token(self.secret, role, expires_in)

    def as_role(self, role: str | None) -> Caller:
        """Requests as ``role`` (token), or anonymous for None."""
        return Caller(self.http_url, f"Bearer {self.token(role)}" if role else None)

    def basic(self, user: str, password: str) -> Caller:
        """Requests with Basic credentials."""
        return Caller(self.http_url, "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())

    def with_header(self, value: str, **headers: str) -> Caller:
        """Requests with this exact Authorization header (and the other headers given)."""
        return Caller(self.http_url, value, headers)


def start_secured_broker(base: Path, pki: Pki) -> SecuredBroker:  # noqa: F811
    """Start a secured broker with its data and keys under ``base``."""
    secret = generate_secret_key()
    (base / "secret.key").write_bytes(secret)
    (base / ".htpasswd").write_text(HTPASSWD)
    settings = SecuritySettings(
        authentication_enabled=True,
        authentication_providers=(
            "org.apache.pulsar.broker.authentication.AuthenticationProviderToken",
            "org.apache.pulsar.broker.authentication.AuthenticationProviderBasic",
            "org.apache.pulsar.broker.authentication.AuthenticationProviderTls",
        ),
        authorization_enabled=True,
        super_user_roles=("super", "admin"),
        token_secret_key=f"file://{base / 'secret.key'}",
        basic_auth_conf=str(base / ".htpasswd"),
        web_service_port_tls=free_port(),
        broker_service_port_tls=free_port(),
        tls_certificate_file_path=str(pki.server_cert),
        tls_key_file_path=str(pki.server_key),
        tls_trust_certs_file_path=str(pki.ca_cert),
    )
    http_port = free_port()
    config = BrokerConfig(data_dir=base / "data", port=free_port(), http_port=http_port, fsync="never",
                          security=settings)
    thread = BrokerThread(config).start()
    return SecuredBroker(thread, f"http://127.0.0.1:{http_port}", thread.service_url, secret, base / "secret.key",
                         pki, settings.web_service_port_tls or 0, settings.broker_service_port_tls or 0)


@pytest.fixture(scope="package")
def secured(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[SecuredBroker]:  # noqa: F811
    """The secured broker, with tenant acme (admin alice), namespace acme/shop (bob produces, carol consumes)."""
    broker = start_secured_broker(tmp_path_factory.mktemp("secured-broker"), pki)
    su = broker.as_role("super")
    assert su("PUT", "/admin/v2/tenants/acme", {"adminRoles": ["alice"], "allowedClusters": ["standalone"]}).status == 204
    assert su("PUT", "/admin/v2/namespaces/acme/shop", {
        "auth_policies": {"namespace_auth": {"bob": ["produce"], "carol": ["consume"]}},
    }).status == 204
    yield broker
    broker.thread.stop()
