"""The standalone broker's start-up order: the binary port answers at once, the HTTP stack loads with the
first HTTP connection (which waits for it and is then served), nothing is served unauthenticated
because of it, and /metrics then reports what the broker recorded since it started."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path

import pytest

import magnetar.admin.standalone as standalone_module
from magnetar.admin.standalone import StandaloneServer
from magnetar.broker.config import BrokerConfig
from magnetar.broker.security import SecuritySettings
from magnetar.broker.security.tokens import generate_secret_key
from magnetar.client import Client
from magnetar.protocol.enums import CommandType
from magnetar.protocol.framing import decode_frame_body, encode_command
from magnetar.protocol.schema import BaseCommand
from magnetar.testing import BrokerProcess, free_port, wait_for_port

#: runs ``magnetar standalone`` with its HTTP app's build held until a file exists
HELD_HTTP_BUILD = Path(__file__).with_name("held_http_build.py")


def connect_command(token: bytes | None = None) -> bytes:
    """A CONNECT frame, with a token when given."""
    command = BaseCommand(type=CommandType.CONNECT)
    command.connect.client_version = "startup-test"
    command.connect.protocol_version = 21
    if token is not None:
        command.connect.auth_method_name = "token"
        command.connect.auth_data = token
    return encode_command(command)


def first_answer(port: int, frame: bytes) -> BaseCommand | None:
    """The broker's first command after ``frame``, None when it closes without one."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(frame)
        data = b""
        while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
            chunk = sock.recv(65536)
            if not chunk:
                return None
            data += chunk
    return decode_frame_body(memoryview(data)[4 : 4 + int.from_bytes(data[:4], "big")]).command


def http_get(port: int, path: str) -> tuple[int | None, bytes]:
    """GET ``path``: the status and body, (None, b"") when nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except OSError:
        return None, b""


def http_status(port: int) -> int | None:
    """GET /admin/v2/tenants (a request only the app answers): the status, None when nothing answers."""
    return http_get(port, "/admin/v2/tenants")[0]


def in_background(call: Callable[[], object]) -> Future:
    """``call()`` run in a daemon thread: the future of its result."""
    future: Future = Future()
    threading.Thread(target=lambda: future.set_result(call()), daemon=True).start()
    return future


class HeldStart:
    """A standalone server started on a loop thread whose HTTP app build waits for :meth:`release`."""

    def __init__(self, config: BrokerConfig, monkeypatch: pytest.MonkeyPatch) -> None:
        self.gate = threading.Event()
        #: set when the HTTP app's build begins
        self.building = threading.Event()
        real_build = standalone_module.build_http_app

        def held_build(service):  # noqa: ANN001, ANN202 - the real signature
            self.building.set()
            assert self.gate.wait(30)
            return real_build(service)

        monkeypatch.setattr(standalone_module, "build_http_app", held_build)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server = StandaloneServer(config)
        self.started: Future = asyncio.run_coroutine_threadsafe(self.server.start(), self.loop)

    def wait_for_binary(self, port: int) -> None:
        """Until the binary port accepts connections."""
        for _ in range(1000):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                threading.Event().wait(0.01)
        raise TimeoutError(f"port {port} never opened")

    def release(self) -> None:
        """Let the HTTP app build (once a connection asks for it), and wait until start() returns."""
        self.gate.set()
        self.started.result(60)

    def stop(self) -> None:
        """Stop the server and its loop."""
        self.gate.set()
        self.started.result(60)
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def held(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[HeldStart, BrokerConfig]]:
    config = BrokerConfig(data_dir=tmp_path / "data", port=free_port(), http_port=free_port(), fsync="never")
    start = HeldStart(config, monkeypatch)
    yield start, config
    start.stop()


def test_binary_port_answers_before_the_http_app_is_built(held: tuple[HeldStart, BrokerConfig]) -> None:
    start, config = held
    start.wait_for_binary(config.port)
    answer = first_answer(config.port, connect_command())
    assert answer is not None and answer.type == CommandType.CONNECTED
    start.started.result(30)  # both ports listen
    threading.Event().wait(0.3)
    assert not start.building.is_set(), "nobody called over HTTP: the app is not built"
    # readiness is answered without the app; a REST call made as soon as the binary port answers (as
    # scripts written for Pulsar do) waits while the app is built, and is then answered
    assert http_get(config.http_port, "/admin/v2/brokers/ready") == (200, b"ok")
    assert not start.building.is_set()
    early = in_background(lambda: http_status(config.http_port))
    assert start.building.wait(10)
    threading.Event().wait(0.5)
    assert not early.done()
    start.release()
    assert early.result(30) == 200
    assert http_status(config.http_port) == 200


def test_the_http_stack_loads_with_the_first_request_the_light_server_does_not_answer(tmp_path: Path) -> None:
    script = f"""
import asyncio, json, sys, urllib.request
from pathlib import Path
from magnetar.admin.standalone import StandaloneServer
from magnetar.broker.config import BrokerConfig
from magnetar.testing import free_port

STACK = ("fastapi", "starlette", "pydantic", "uvicorn", "prometheus_client")

def get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{{port}}{{path}}", timeout=30) as resp:
        return resp.status, resp.read().decode()

async def main():
    config = BrokerConfig(data_dir=Path({str(tmp_path / "data")!r}), port=free_port(), http_port=free_port(),
                          fsync="never")
    server = StandaloneServer(config)
    await server.start()
    await asyncio.sleep(0.3)
    idle = [name for name in STACK if name in sys.modules]
    loop = asyncio.get_running_loop()
    light = [await loop.run_in_executor(None, get, config.http_port, path)
             for path in ("/admin/v2/brokers/ready", "/admin/v2/brokers/health", "/admin/v2/clusters")]
    light_metrics = (await loop.run_in_executor(None, get, config.http_port, "/metrics"))[0]
    checked = [name for name in STACK if name in sys.modules]
    answer = await loop.run_in_executor(None, get, config.http_port, "/admin/v2/tenants")
    served = [name for name in STACK if name in sys.modules]
    await server.stop()
    print(json.dumps({{"idle": idle, "light": light, "light_metrics": light_metrics, "checked": checked,
                      "answer": answer, "served": served}}))

asyncio.run(main())
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.splitlines()[-1])
    assert outcome["idle"] == []
    assert outcome["light"] == [[200, "ok"], [200, "ok"], [200, '["standalone"]']]
    assert outcome["light_metrics"] == 200
    assert outcome["checked"] == ["prometheus_client"]
    assert outcome["answer"] == [200, '["public"]']
    assert outcome["served"] == ["fastapi", "starlette", "pydantic", "uvicorn", "prometheus_client"]


def test_authentication_is_enforced_before_the_http_app_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "secret.key").write_bytes(generate_secret_key())
    settings = SecuritySettings(
        authentication_enabled=True,
        authentication_providers=("org.apache.pulsar.broker.authentication.AuthenticationProviderToken",),
        token_secret_key=f"file://{tmp_path / 'secret.key'}",
    )
    config = BrokerConfig(data_dir=tmp_path / "data", port=free_port(), http_port=free_port(), fsync="never",
                          security=settings)
    start = HeldStart(config, monkeypatch)
    try:
        start.wait_for_binary(config.port)
        for frame in (connect_command(), connect_command(b"not-a-token")):
            answer = first_answer(config.port, frame)
            assert answer is None or answer.type == CommandType.ERROR
        early = in_background(lambda: http_status(config.http_port))
        assert start.building.wait(10)
        assert not early.done()
        start.release()
        assert early.result(30) == 401
        assert http_status(config.http_port) == 401
    finally:
        start.stop()


def test_metrics_count_what_happened_before_the_first_http_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = BrokerConfig(data_dir=tmp_path / "data", port=free_port(), http_port=free_port(), fsync="always")
    start = HeldStart(config, monkeypatch)
    start.gate.set()
    try:
        start.started.result(30)
        client = Client(f"pulsar://127.0.0.1:{config.port}", operation_timeout_seconds=10)
        try:
            producer = client.create_producer("persistent://public/default/before-http")
            for number in range(20):
                producer.send(f"m{number}".encode())
            producer.close()
        finally:
            client.close()
        assert not start.building.is_set()
        status, body = http_get(config.http_port, "/metrics")
        assert status == 200
        text = body.decode()

        def value(pattern: str) -> float:
            found = re.search(pattern + r" ([0-9.e+]+)$", text, re.M)
            assert found, pattern
            return float(found.group(1))

        rounds = value(r"^magnetar_fsync_rounds_total")
        assert rounds >= 1
        assert value(r"^magnetar_fsync_round_seconds_count") == rounds
        assert value(r'^magnetar_fsync_round_seconds_bucket\{le="\+Inf"\}') == rounds
        assert value(r"^magnetar_append_latency_seconds_count") >= 1
        assert value(r'^pulsar_in_messages_total\{cluster="standalone",namespace="public/default",'
                     r'topic="persistent://public/default/before-http"\}') == 20
    finally:
        start.stop()


def test_a_busy_http_port_fails_before_the_binary_port_listens(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        config = BrokerConfig(data_dir=tmp_path / "data", port=free_port(), http_port=busy.getsockname()[1],
                              fsync="never")
        server = StandaloneServer(config)

        async def run() -> None:
            try:
                with pytest.raises(OSError):
                    await server.start()
                with pytest.raises(OSError):
                    socket.create_connection(("127.0.0.1", config.port), timeout=1).close()
            finally:
                await server.broker.service.stop()

        asyncio.run(run())


def test_sigterm_while_the_http_app_is_built_stops_the_broker_cleanly(tmp_path: Path) -> None:
    gate = tmp_path / "release-http-build"
    broker = BrokerProcess(tmp_path / "data", args=("--fsync", "never", "--log-level", "INFO"))
    log_path = tmp_path / "broker.log"
    with open(log_path, "wb") as log:
        # the same command line through a script that holds the HTTP app's build until the gate exists
        command = [sys.executable, str(HELD_HTTP_BUILD), str(gate), *broker.command()[3:]]
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=os.environ)
        try:
            wait_for_port(broker.port, 30)
            answer = first_answer(broker.port, connect_command())
            assert answer is not None and answer.type == CommandType.CONNECTED
            # the first request the light server does not answer starts the app's build, which the gate holds
            early = socket.create_connection(("127.0.0.1", broker.http_port), timeout=10)
            early.sendall(b"GET /admin/v2/tenants HTTP/1.1\r\nHost: localhost\r\n\r\n")
            threading.Event().wait(0.3)
            proc.send_signal(signal.SIGTERM)
            threading.Event().wait(0.3)
            assert proc.poll() is None, "the signal waits for the start-up to finish instead of killing the broker"
            gate.touch()
            assert proc.wait(30) == 0
            early.close()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    text = log_path.read_text(errors="replace")
    assert "shutting down" in text and "stopped" in text, text
    assert "Traceback" not in text, text
