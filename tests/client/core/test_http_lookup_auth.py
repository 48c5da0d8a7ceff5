"""HTTP lookups (http:// and https:// service URLs) carry the plugin's credentials, and answer
refusals as the official client does: against a stub HTTP server for the exact requests and
statuses, and against a secured magnetar broker (token, basic, TLS certificates)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from magnetar.client import (
    AsyncClient,
    Authentication,
    AuthenticationBasic,
    AuthenticationError,
    AuthenticationToken,
    ConnectError,
    TopicNotFound,
)
from tests.broker.security.conftest import Pki, pki  # noqa: F401 - the session's certificates
from tests.e2e.security.conftest import USERS, SecureBroker, secure_broker, topic_name  # noqa: F401

from ..conftest import run


class StubHttp:
    """An HTTP server answering every request with one status and body, keeping the requests' headers."""

    def __init__(self, status: int, body: bytes) -> None:
        self.status = status
        self.body = body
        self.requests: list[dict[str, str]] = []
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> StubHttp:
        self.server = await asyncio.start_server(self._answer, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        request_line, *lines = head.strip().split("\r\n")
        headers = dict(line.split(": ", 1) for line in lines)
        self.requests.append({"request": request_line, **headers})
        writer.write(
            f"HTTP/1.1 {self.status} X\r\nContent-Type: application/json\r\nContent-Length: {len(self.body)}\r\n\r\n".encode()
            + self.body
        )
        await writer.drain()
        writer.close()


def _partitions(status: int, body: bytes, authentication: Authentication | None) -> tuple[list[dict[str, str]], object]:
    """The requests the stub saw for one get_topic_partitions, and its result or exception."""

    async def main() -> tuple[list[dict[str, str]], object]:
        async with StubHttp(status, body) as stub:
            async with AsyncClient(stub.url, authentication=authentication, operation_timeout_seconds=5) as client:
                try:
                    outcome: object = await client.get_topic_partitions("persistent://private/auth/t")
                except Exception as exc:  # the outcome under test
                    outcome = exc
            return stub.requests, outcome

    return run(main())


def test_token_is_sent_as_bearer() -> None:
    requests, outcome = _partitions(200, b'{"partitions": 0}', AuthenticationToken("tok.en"))
    assert outcome == ["persistent://private/auth/t"]
    assert requests[0]["request"] == "GET /admin/v2/persistent/private/auth/t/partitions?checkAllowAutoCreation=true HTTP/1.1"
    assert requests[0]["Authorization"] == "Bearer tok.en"


def test_basic_credentials_are_sent() -> None:
    requests, _ = _partitions(200, b'{"partitions": 2}', AuthenticationBasic("admin", "123456"))
    assert requests[0]["Authorization"] == "Basic YWRtaW46MTIzNDU2"


def test_no_authentication_sends_no_credentials() -> None:
    requests, _ = _partitions(200, b'{"partitions": 0}', None)
    assert "Authorization" not in requests[0]


@pytest.mark.parametrize("status", [401, 403, 500])
def test_refusals_are_connect_errors(status: int) -> None:
    _, outcome = _partitions(status, b'{"reason": "no"}', AuthenticationToken("t"))
    assert isinstance(outcome, ConnectError)
    assert f"HTTP {status}" in str(outcome) and "no" in str(outcome)


def test_not_found_is_topic_not_found() -> None:
    _, outcome = _partitions(404, b'{"reason": "Topic not found"}', None)
    assert isinstance(outcome, TopicNotFound)


def test_unknown_plugin_fails_the_lookup_with_authentication_error() -> None:
    requests, outcome = _partitions(200, b'{"partitions": 0}', Authentication("someoldjunk.so", "blah"))
    assert isinstance(outcome, AuthenticationError) and "someoldjunk.so" in str(outcome)
    assert requests == []


# -- against a secured broker ---------------------------------------------------------------------
@pytest.fixture
def broker(secure_broker: SecureBroker) -> Iterator[SecureBroker]:  # noqa: F811
    """The secured broker of tests/e2e/security."""
    yield secure_broker


def _round_trip(url: str, authentication: Authentication, **options: object) -> bytes:
    """Subscribe, produce and receive one message with magnetar's client; the message's payload."""
    topic = topic_name()

    async def main() -> bytes:
        async with AsyncClient(url, authentication=authentication, operation_timeout_seconds=10, **options) as client:
            consumer = await client.subscribe(topic, "sub")
            producer = await client.create_producer(topic)
            await producer.send(b"hello")
            message = await consumer.receive()
            return message.data()

    return run(main())


def test_token_over_http_lookup(broker: SecureBroker) -> None:
    broker.grant("http-token-role", "produce", "consume")
    assert _round_trip(broker.proc.http_url, AuthenticationToken(broker.token("http-token-role"))) == b"hello"


def test_basic_over_http_lookup(broker: SecureBroker) -> None:
    broker.grant("bea", "produce", "consume")
    assert _round_trip(broker.proc.http_url, AuthenticationBasic("bea", USERS["bea"])) == b"hello"


def test_wrong_basic_password_over_http_is_connect_error(broker: SecureBroker) -> None:
    with pytest.raises(ConnectError, match="HTTP 401"):
        _round_trip(broker.proc.http_url, AuthenticationBasic("bea", "wrong"))


def test_basic_with_an_unserved_method_falls_to_the_anonymous_role(broker: SecureBroker) -> None:
    # the HTTP lookup authenticates "bea" (HTTP basic has no method); CONNECT's method "unknown"
    # has no provider, so the broker takes the client as its anonymous role, and this broker
    # has none (with one, as upstream's standalone-ssl.conf, the role is refused AuthorizationError)
    broker.grant("bea", "produce", "consume")
    with pytest.raises(AuthenticationError, match="No anonymous role"):
        _round_trip(broker.proc.http_url, AuthenticationBasic("bea", USERS["bea"], "unknown"))


@pytest.mark.parametrize("name", ["tls", "org.apache.pulsar.client.impl.auth.AuthenticationTls"])
def test_tls_plugin_by_name_over_https_lookup(broker: SecureBroker, name: str) -> None:
    certs = broker.pki
    auth = Authentication(name, f"tlsCertFile:{certs.client_cert},tlsKeyFile:{certs.client_key}")
    payload = _round_trip(broker.proc.https_url, auth, tls_trust_certs_file_path=str(certs.ca_cert))
    assert payload == b"hello"


def test_unknown_plugin_fails_subscribe_with_authentication_error(broker: SecureBroker) -> None:
    with pytest.raises(AuthenticationError, match="someoldjunk.so"):
        _round_trip(broker.tls_url, Authentication("someoldjunk.so", "blah"), tls_trust_certs_file_path=str(broker.pki.ca_cert))


def test_swapped_certificate_and_key_is_connect_error(broker: SecureBroker) -> None:
    certs: Pki = broker.pki
    with pytest.raises(ConnectError, match="cannot set TLS up"):
        _round_trip(
            broker.tls_url, AuthenticationBasic("bea", USERS["bea"]), tls_trust_certs_file_path=str(certs.ca_cert),
            tls_certificate_file_path=str(certs.client_key), tls_private_key_file_path=str(certs.client_cert),
        )
