"""The light HTTP server: readiness, health, the cluster list and /metrics answered byte for byte as the
app answers them, without building the app; the app takes a connection over at its first other request."""

from __future__ import annotations

import asyncio
import re
import socket
import ssl
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from magnetar.admin import standalone as standalone_module
from magnetar.admin.light_http import http_date, light_request
from magnetar.admin.standalone import StandaloneServer
from magnetar.broker.config import BrokerConfig
from magnetar.broker.security import SecuritySettings
from magnetar.storage.health import storage_health
from magnetar.testing import free_port
from tests.broker.security.conftest import Pki, pki  # noqa: F401 - the CA and certificates fixture

GET = "GET {path} HTTP/1.1\r\nHost: localhost\r\nAccept-Encoding: gzip\r\n\r\n"
LIGHT_REQUESTS = [
    GET.format(path="/admin/v2/brokers/ready"),
    GET.format(path="/admin/v2/brokers/health"),
    GET.format(path="/admin/v2/clusters"),
    "GET /admin/v2/brokers/ready HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    "GET /admin/v2/clusters HTTP/1.0\r\n\r\n",
]
DATE = re.compile(rb"\r\ndate: [^\r]*\r\n")


class Exchange:
    """Raw HTTP/1.1 on one connection: requests written as given, responses read by their content-length."""

    def __init__(self, port: int, context: ssl.SSLContext | None = None) -> None:
        sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock = context.wrap_socket(sock, server_hostname="localhost") if context else sock
        self.buffer = b""

    def send(self, request: str) -> None:
        self.sock.sendall(request.encode())

    def response(self) -> bytes:
        """The next whole response (head and body), its date header's value blanked."""
        while b"\r\n\r\n" not in self.buffer:
            self._read()
        end = self.buffer.index(b"\r\n\r\n") + 4
        length = int(re.search(rb"content-length: (\d+)", self.buffer[:end]).group(1))
        while len(self.buffer) < end + length:
            self._read()
        whole, self.buffer = self.buffer[: end + length], self.buffer[end + length :]
        return DATE.sub(b"\r\ndate: -\r\n", whole)

    def call(self, request: str) -> bytes:
        self.send(request)
        return self.response()

    def closed(self) -> bool:
        """Whether the server closed the connection (nothing more to read)."""
        return self.sock.recv(1) == b""

    def _read(self) -> None:
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("closed")
        self.buffer += data

    def close(self) -> None:
        self.sock.close()


def one_shot(port: int, request: str, context: ssl.SSLContext | None = None) -> bytes:
    """One request on its own connection."""
    exchange = Exchange(port, context)
    try:
        return exchange.call(request)
    finally:
        exchange.close()


def run_broker(config: BrokerConfig, body: Callable[[StandaloneServer], Awaitable[Any]]) -> Any:
    """Start a standalone server on a new loop, run ``body`` with it, stop it."""

    async def main() -> Any:
        server = StandaloneServer(config)
        await server.start()
        try:
            return await body(server)
        finally:
            await server.stop()

    return asyncio.run(main())


def blocking(call: Callable[..., Any], *args: Any) -> Awaitable[Any]:
    return asyncio.get_running_loop().run_in_executor(None, call, *args)


@pytest.fixture
def config(tmp_path: Path) -> BrokerConfig:
    return BrokerConfig(data_dir=tmp_path / "data", port=free_port(), http_port=free_port(), fsync="never")


def metrics_shape(response: bytes) -> tuple[bytes, list[bytes]]:
    """A /metrics response's head without its length, and its HELP / TYPE lines (the values move)."""
    head, body = response.split(b"\r\n\r\n", 1)
    head = re.sub(rb"content-length: \d+", b"content-length: -", head)
    return head, [line for line in body.split(b"\n") if line.startswith(b"#")]


def test_light_answers_equal_the_apps_byte_for_byte(config: BrokerConfig) -> None:
    async def body(server: StandaloneServer) -> tuple[list[bytes], list[bytes], bool]:
        port = config.http_port
        light = [await blocking(one_shot, port, request) for request in LIGHT_REQUESTS]
        light.append(await blocking(one_shot, port, GET.format(path="/metrics")))
        built = server.http is not None
        await server.serve_http()
        full = [await blocking(one_shot, port, request) for request in LIGHT_REQUESTS]
        full.append(await blocking(one_shot, port, GET.format(path="/metrics")))
        return light, full, built

    light, full, built = run_broker(config, body)
    assert not built, "light requests built the app"
    assert light[:-1] == full[:-1]
    assert light[0] == (b"HTTP/1.1 200 OK\r\ndate: -\r\nserver: uvicorn\r\ncontent-length: 2\r\n"
                        b"content-type: text/plain; charset=utf-8\r\n\r\nok")
    assert light[3].endswith(b"\r\nConnection: close\r\n\r\nok")
    assert light[4].endswith(b'content-type: application/json\r\nConnection: close\r\n\r\n["standalone"]')
    assert metrics_shape(light[-1]) == metrics_shape(full[-1])
    assert b"# TYPE magnetar_fsync_round_seconds histogram" in metrics_shape(light[-1])[1]


def test_an_unhealthy_storage_answers_503_alike(config: BrokerConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storage_health, "problems", lambda: ["disk full on /data"])

    async def body(server: StandaloneServer) -> tuple[bytes, bytes]:
        request = GET.format(path="/admin/v2/brokers/health")
        light = await blocking(one_shot, config.http_port, request)
        await server.serve_http()
        return light, await blocking(one_shot, config.http_port, request)

    light, full = run_broker(config, body)
    assert light == full
    assert light.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
    assert light.endswith(b"\r\n\r\nstorage: disk full on /data")


def test_the_app_takes_a_keep_alive_connection_over_at_its_first_other_request(config: BrokerConfig) -> None:
    def session(port: int) -> list[bytes]:
        exchange = Exchange(port)
        try:
            answers = [exchange.call(GET.format(path="/admin/v2/brokers/ready"))]
            answers.append(exchange.call(GET.format(path="/admin/v2/tenants")))
            answers.append(exchange.call(GET.format(path="/admin/v2/brokers/ready")))
            # pipelined: a light request, then one for the app, in one write
            exchange.send(GET.format(path="/admin/v2/clusters") + GET.format(path="/admin/v2/namespaces/public"))
            answers += [exchange.response(), exchange.response()]
            return answers
        finally:
            exchange.close()

    async def body(server: StandaloneServer) -> tuple[list[bytes], list[bytes], bool]:
        first = await blocking(session, config.http_port)
        built = server.http is not None
        return first, await blocking(session, config.http_port), built

    first, again, built = run_broker(config, body)
    assert built
    assert [answer.rsplit(b"\r\n\r\n", 1)[1] for answer in first] == [
        b"ok", b'["public"]', b"ok", b'["standalone"]', b'["public/default"]']
    assert first == again  # the second session, all of it served by uvicorn


def test_a_request_the_light_server_does_not_answer_waits_for_the_build(
    config: BrokerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_build = standalone_module.build_http_app
    built: list[str] = []

    def counted_build(service: Any) -> Any:
        built.append("app")
        return real_build(service)

    monkeypatch.setattr(standalone_module, "build_http_app", counted_build)

    async def body(server: StandaloneServer) -> tuple[bytes, bytes, bytes]:
        port = config.http_port
        held = Exchange(port)
        held.send("GET /admin/v2/tenants HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n")
        ready = await blocking(one_shot, port, GET.format(path="/admin/v2/brokers/ready"))
        tenants = await blocking(held.response)
        held.close()
        # a query string is the app's to answer too
        query = await blocking(one_shot, port, "GET /admin/v2/clusters?x=1 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        return ready, tenants, query

    ready, tenants, query = run_broker(config, body)
    assert ready.endswith(b"\r\n\r\nok")
    assert tenants.endswith(b'\r\n\r\n["public"]')
    assert query.endswith(b'\r\n\r\n["standalone"]')
    assert built == ["app"]


def test_light_answers_over_https_then_the_app_on_the_same_connection(tmp_path: Path, pki: Pki) -> None:  # noqa: F811
    settings = SecuritySettings(
        web_service_port_tls=free_port(),
        tls_certificate_file_path=str(pki.server_cert),
        tls_key_file_path=str(pki.server_key),
        tls_trust_certs_file_path=str(pki.ca_cert),
    )
    config = BrokerConfig(data_dir=tmp_path / "data", port=free_port(), http_port=0, fsync="never", security=settings)
    context = ssl.create_default_context(cafile=str(pki.ca_cert))

    def session(port: int) -> tuple[list[bytes], bool]:
        exchange = Exchange(port, context)
        try:
            answers = [exchange.call(GET.format(path=path))
                       for path in ("/admin/v2/brokers/ready", "/admin/v2/clusters", "/admin/v2/tenants")]
            return answers, exchange.call(GET.format(path="/admin/v2/brokers/health")).endswith(b"ok")
        finally:
            exchange.close()

    async def body(server: StandaloneServer) -> tuple[list[bytes], bool, bool]:
        port = server.https_port
        ready = await blocking(one_shot, port, GET.format(path="/admin/v2/brokers/ready"), context)
        built = server.https is not None
        answers, healthy = await blocking(session, port)
        return [ready, *answers], healthy, built

    answers, healthy, built_early = run_broker(config, body)
    assert not built_early
    assert [answer.rsplit(b"\r\n\r\n", 1)[1] for answer in answers] == [b"ok", b"ok", b'["standalone"]', b'["public"]']
    assert healthy


def test_nothing_is_answered_lightly_while_authentication_is_on(tmp_path: Path) -> None:
    config = BrokerConfig(data_dir=tmp_path / "data", port=free_port(), http_port=free_port(), fsync="never",
                          security=SecuritySettings(
                              authentication_enabled=True,
                              authentication_providers=(
                                  "org.apache.pulsar.broker.authentication.AuthenticationProviderToken",),
                              token_secret_key="data:;base64,c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA=="))

    async def body(server: StandaloneServer) -> tuple[bytes, bytes, bool]:
        ready = await blocking(one_shot, config.http_port, GET.format(path="/admin/v2/brokers/ready"))
        clusters = await blocking(one_shot, config.http_port, GET.format(path="/admin/v2/clusters"))
        return ready, clusters, server.http is not None

    ready, clusters, built = run_broker(config, body)
    assert built
    assert ready.endswith(b"\r\n\r\nok")  # open, as in Pulsar
    assert clusters.startswith(b"HTTP/1.1 401 ")


@pytest.mark.parametrize(("head", "expected"), [
    (b"GET /metrics HTTP/1.1\r\nHost: x", ("/metrics", False)),
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: Close", ("/metrics", True)),
    (b"GET /metrics HTTP/1.0\r\nUser-Agent: probe", ("/metrics", True)),
    (b"GET /metrics HTTP/1.0\r\nConnection: keep-alive", None),
    (b"GET /metrics HTTP/1.1\r\nConnection: upgrade", None),
    (b"HEAD /metrics HTTP/1.1\r\nHost: x", None),
    (b"GET /metrics?name[]=x HTTP/1.1\r\nHost: x", None),
    (b"GET /admin/v2/tenants HTTP/1.1\r\nHost: x", None),
    (b"GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked", None),
    (b"GET /metrics HTTP/1.1\r\nHost : x", None),
    (b"GET /metrics HTTP/2\r\nHost: x", None),
    (b"GET  /metrics HTTP/1.1", None),
])
def test_which_requests_are_light(head: bytes, expected: tuple[str, bool] | None) -> None:
    assert light_request(head) == expected


def test_http_date_is_rfc_7231_in_gmt() -> None:
    assert http_date(0) == b"Thu, 01 Jan 1970 00:00:00 GMT"
    assert http_date(1_800_000_000) == b"Fri, 15 Jan 2027 08:00:00 GMT"


def test_the_light_cluster_list_is_read_off_the_loop(config: BrokerConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    """The light server's cluster list is a SQLite read: it runs in a worker thread, the loop awaits it."""
    from magnetar.storage.metadata import MetadataStore

    threads: list[int] = []
    original = MetadataStore.list_clusters

    def recording(store: MetadataStore) -> list[str]:
        threads.append(threading.get_ident())
        return original(store)

    monkeypatch.setattr(MetadataStore, "list_clusters", recording)

    async def body(server: StandaloneServer) -> tuple[bytes, int, bool]:
        answer = await blocking(one_shot, config.http_port, GET.format(path="/admin/v2/clusters"))
        return answer, threading.get_ident(), server.http is not None

    answer, loop_thread, built = run_broker(config, body)
    assert not built and answer.endswith(b'\r\n\r\n["standalone"]')
    assert len(threads) == 1 and loop_thread not in threads
