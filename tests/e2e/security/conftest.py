"""A broker secured the way Pulsar users secure theirs, started from a Pulsar-format ``standalone.conf``.

TLS on both listeners (certificates made in the session's temporary directory, the server's for
``localhost``), the three authentication providers (token with an HS256 secret, basic with an
htpasswd file, TLS client certificates), authorization with superusers ``superUser`` and ``admin``
(the CN of the test client certificate), and ``authenticationRefreshCheckSeconds=1``. Tenant ``acme``
and namespace ``acme/app`` are created with a superuser token over HTTP; each test grants what it
needs to roles of its own.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulsar
import pytest
from passlib.hash import apr_md5_crypt

from magnetar.broker.security.tokens import create_token, generate_secret_key
from magnetar.protocol.enums import CommandType
from magnetar.protocol.schema import BaseCommand
from magnetar.testing import BrokerProcess, free_port
from tests.broker.security.conftest import Pki, pki  # noqa: F401 - the session's certificates
from tests.broker.session.test_wire_errors import WireClient

PROVIDERS = ",".join(
    f"org.apache.pulsar.broker.authentication.AuthenticationProvider{name}" for name in ("Tls", "Token", "Basic")
)
#: basic users and passwords
USERS = {"bea": "s3cret-pw", "admin": "admin-pw"}
NAMESPACE = "acme/app"


def pulsar_conf(certs: Pki, ports: dict[str, int], extra: dict[str, str]) -> str:
    """A standalone.conf in Pulsar's format for a secured broker on ``ports``."""
    lines = {
        "brokerServicePort": str(ports["port"]),
        "brokerServicePortTls": str(ports["tls_port"]),
        "webServicePort": str(ports["http_port"]),
        "webServicePortTls": str(ports["https_port"]),
        "bindAddress": "127.0.0.1",
        "advertisedAddress": "localhost",
        "clusterName": "standalone",
        "tlsCertificateFilePath": str(certs.server_cert),
        "tlsKeyFilePath": str(certs.server_key),
        "tlsTrustCertsFilePath": str(certs.ca_cert),
        "tlsAllowInsecureConnection": "false",
        "authenticationEnabled": "true",
        "authenticationProviders": PROVIDERS,
        "authorizationEnabled": "true",
        "superUserRoles": "superUser,admin",
        "authenticationRefreshCheckSeconds": "1",
        "zookeeperServers": "",
        **extra,
    }
    return "# a secured magnetar, in Pulsar's format\n" + "".join(f"{k}={v}\n" for k, v in lines.items())


@dataclass
class SecureBroker:
    """A running secured broker, the key that signs its tokens, and the clients opened on it."""

    proc: BrokerProcess
    pki: Pki
    secret: bytes
    clients: list[pulsar.Client] = field(default_factory=list)
    #: the superuser's token for admin calls (default: one signed with ``secret``)
    super_token: str = ""

    @property
    def plain_url(self) -> str:
        return f"pulsar://localhost:{self.proc.port}"

    @property
    def tls_url(self) -> str:
        return self.proc.tls_service_url

    def token(self, role: str, expires_in: int | None = None) -> str:
        """A token for ``role`` signed with the broker's secret key."""
        return create_token(self.secret, role, expires_in)

    def client(self, url: str | None = None, **options: Any) -> pulsar.Client:
        """An official client (closed after the test); TLS URLs trust the test CA and check the host name."""
        url = url or self.plain_url
        if url.startswith("pulsar+ssl"):
            options.setdefault("tls_trust_certs_file_path", str(self.pki.ca_cert))
            options.setdefault("tls_validate_hostname", True)
        c = pulsar.Client(
            url, operation_timeout_seconds=options.pop("operation_timeout_seconds", 10), connection_timeout_ms=5000,
            logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error), **options,
        )
        self.clients.append(c)
        return c

    def admin(self, method: str, path: str, body: Any = None) -> int:
        """One admin call as the superuser over HTTPS; returns the status."""
        context = ssl.create_default_context(cafile=str(self.pki.ca_cert))
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            f"{self.proc.https_url}/admin/v2/{path}", data=data, method=method,
            headers={"Authorization": f"Bearer {self.super_token or self.token('superUser')}",
                     "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=10, context=context) as resp:
                return int(resp.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)

    def metrics(self) -> str:
        """The /metrics text, read as the superuser over HTTPS."""
        context = ssl.create_default_context(cafile=str(self.pki.ca_cert))
        req = urllib.request.Request(
            f"{self.proc.https_url}/metrics", headers={"Authorization": f"Bearer {self.token('superUser')}"})
        with urllib.request.urlopen(req, timeout=10, context=context) as resp:
            return str(resp.read().decode())

    def grant(self, role: str, *actions: str, namespace: str = NAMESPACE) -> None:
        """Grant ``actions`` on a namespace to ``role`` (takes effect at once)."""
        assert self.admin("POST", f"namespaces/{namespace}/permissions/{role}", list(actions)) in (200, 204)

    def revoke(self, role: str, namespace: str = NAMESPACE) -> None:
        """Revoke ``role``'s namespace permissions."""
        assert self.admin("DELETE", f"namespaces/{namespace}/permissions/{role}") in (200, 204)

    def wire(self, tls: bool = False, cert: tuple[Path, Path] | None = None) -> WireClient:
        """A raw protocol connection (plain, or TLS trusting the test CA, with a client certificate)."""
        port = self.proc.tls_port if tls else self.proc.port
        assert port is not None
        client = WireClient(port)
        if tls:
            context = ssl.create_default_context(cafile=str(self.pki.ca_cert))
            if cert is not None:
                context.load_cert_chain(str(cert[0]), str(cert[1]))
            client.sock = context.wrap_socket(client.sock, server_hostname="localhost")
        return client


def connect_frame(method: str | None, data: bytes | None) -> BaseCommand:
    """A CONNECT carrying ``method`` / ``data`` (either may be left out)."""
    cmd = BaseCommand(type=CommandType.CONNECT)
    cmd.connect.client_version = "magnetar-security-test"
    cmd.connect.protocol_version = 20
    if method is not None:
        cmd.connect.auth_method_name = method
    if data is not None:
        cmd.connect.auth_data = data
    return cmd


def topic_name(namespace: str = NAMESPACE) -> str:
    """A fresh persistent topic of ``namespace``."""
    return f"persistent://{namespace}/t-{uuid.uuid4().hex[:12]}"


def start_secure_broker(
    directory: Path, certs: Pki, secret: bytes, extra: dict[str, str] | None = None, plain: bool = True
) -> BrokerProcess:
    """Write the conf, the key and the htpasswd into ``directory`` and start the broker.

    ``plain=False``: the conf switches the plain listeners off (empty ports), only TLS listens.
    """
    (directory / "secret.key").write_bytes(secret)
    (directory / "htpasswd").write_text("".join(f"{u}:{apr_md5_crypt.hash(p)}\n" for u, p in USERS.items()))
    ports = {name: free_port() for name in ("port", "tls_port", "http_port", "https_port")}
    settings = {"tokenSecretKey": f"file://{directory}/secret.key", "basicAuthConf": str(directory / "htpasswd")}
    if not plain:
        settings.update(brokerServicePort="", webServicePort="")
    conf = directory / "standalone.conf"
    conf.write_text(pulsar_conf(certs, ports, {**settings, **(extra or {})}))
    proc = BrokerProcess(
        directory / "data", port=ports["port"], http_port=ports["http_port"], tls_port=ports["tls_port"],
        https_port=ports["https_port"], plain=plain, args=("--config", str(conf), "--fsync", "never"),
    )
    return proc.start()


@pytest.fixture(scope="module")
def secure_broker(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[SecureBroker]:  # noqa: F811
    """The module's secured broker, with tenant ``acme`` and namespace ``acme/app``."""
    directory = tmp_path_factory.mktemp("secure-broker")
    secret = generate_secret_key()
    proc = start_secure_broker(directory, pki, secret)
    broker = SecureBroker(proc, pki, secret)
    try:
        assert broker.admin("PUT", "tenants/acme", {"adminRoles": ["acme-admin"], "allowedClusters": ["standalone"]}) in (200, 204)
        assert broker.admin("PUT", f"namespaces/{NAMESPACE}") in (200, 204)
        yield broker
    finally:
        proc.stop()


@pytest.fixture
def broker(secure_broker: SecureBroker) -> Iterator[SecureBroker]:
    """The secured broker; the clients a test opens are closed after it."""
    yield secure_broker
    for c in secure_broker.clients:
        with contextlib.suppress(Exception):
            c.close()
    secure_broker.clients.clear()


@pytest.fixture
def wire_clients() -> Iterator[Callable[[WireClient], WireClient]]:
    """Track raw connections so that each is closed after the test."""
    opened: list[WireClient] = []

    def track(client: WireClient) -> WireClient:
        opened.append(client)
        return client

    yield track
    for c in opened:
        with contextlib.suppress(OSError):
            c.close()


def socket_closed(sock: socket.socket) -> bool:
    """Whether the peer closed ``sock`` (reads EOF or a reset)."""
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, ssl.SSLError):
        return True
