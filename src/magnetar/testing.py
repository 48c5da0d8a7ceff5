"""Helpers to run a magnetar broker from tests: as a child process (``magnetar standalone``) or in a
background thread (the same composition of broker and HTTP server, in process)."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

from magnetar.broker.config import BrokerConfig

if TYPE_CHECKING:
    from magnetar.admin.standalone import StandaloneServer


_handed_out_ports: set[int] = set()


def _ephemeral_port_floor() -> int:
    """The lowest port the kernel hands to outgoing connections (32768 when it cannot be read)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago and that no outgoing connection will take.

    The port comes from below the kernel's ephemeral range: a port the kernel picked for ``bind(0)``
    is one it may also give, a moment later, to some client socket's outgoing connection, and the
    broker then fails to bind it (``EADDRINUSE``). Ports already handed out in this process are not
    handed out again.
    """
    floor = min(_ephemeral_port_floor(), 32768)
    candidates = random.Random().sample(range(floor // 2, floor), 200)
    for port in candidates:
        if port in _handed_out_ports:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out_ports.add(port)
        return port
    raise RuntimeError(f"no free TCP port on 127.0.0.1 in {floor // 2}-{floor - 1}")


def wait_for_port(port: int, timeout: float = 10.0, host: str = "127.0.0.1") -> None:
    """Block until something accepts TCP connections on ``port``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing listens on {host}:{port} after {timeout} s") from None
            time.sleep(0.02)


class BrokerProcess:
    """``magnetar standalone`` in a child process, on free ports, for end-to-end tests.

    ``tls_port`` / ``https_port`` (``True``: a free port) open the TLS listeners (the certificate
    comes from a ``--config`` file in ``args``); ``plain=False`` leaves the plain ports to that file
    (which may switch them off) instead of passing ``--port`` / ``--http-port``.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        port: int | None = None,
        http_port: int | None = None,
        tls_port: int | bool | None = None,
        https_port: int | bool | None = None,
        plain: bool = True,
        args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        log_path: Path | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.plain = plain
        self.port = port or free_port()
        self.http_port = http_port or free_port()
        self.tls_port = free_port() if tls_port is True else (tls_port or None)
        self.https_port = free_port() if https_port is True else (https_port or None)
        self.args = args
        self.env = env or {}
        self.log_path = log_path or self.data_dir.with_name(self.data_dir.name + ".log")
        self.proc: subprocess.Popen | None = None

    @property
    def service_url(self) -> str:
        """pulsar:// URL of the broker."""
        return f"pulsar://127.0.0.1:{self.port}"

    @property
    def http_url(self) -> str:
        """http:// URL of the broker."""
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def tls_service_url(self) -> str:
        """pulsar+ssl:// URL of the broker, by the name test certificates are made for."""
        return f"pulsar+ssl://localhost:{self.tls_port}"

    @property
    def https_url(self) -> str:
        """https:// URL of the broker, by the name test certificates are made for."""
        return f"https://localhost:{self.https_port}"

    def command(self) -> list[str]:
        """The command line that starts this broker."""
        cmd = [sys.executable, "-m", "magnetar.cli.main", "standalone", "--data-dir", str(self.data_dir)]
        if self.plain:
            cmd += ["--port", str(self.port), "--http-port", str(self.http_port)]
        if self.tls_port is not None:
            cmd += ["--tls-port", str(self.tls_port)]
        if self.https_port is not None:
            cmd += ["--https-port", str(self.https_port)]
        return [*cmd, *self.args]

    def start(self, timeout: float = 15.0) -> BrokerProcess:
        """Start the broker and wait until its ports accept connections."""
        env = {**os.environ, **self.env}
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(self.command(), stdout=self._log, stderr=subprocess.STDOUT, env=env)
        ports = [self.port, self.http_port] if self.plain else []
        ports += [port for port in (self.tls_port, self.https_port) if port is not None]
        try:
            for port in ports:
                wait_for_port(port, timeout)
            if self.plain:
                self._wait_for_http(timeout)
        except TimeoutError:
            self.kill()
            raise RuntimeError(f"broker did not start; log:\n{self.log()}") from None
        return self

    def _wait_for_http(self, timeout: float) -> None:
        """Until the HTTP app answers (its socket listens before the app is built; any status will do)."""
        try:
            with urllib.request.urlopen(f"{self.http_url}/admin/v2/clusters", timeout=timeout):
                pass
        except urllib.error.HTTPError:
            pass
        except OSError as exc:
            raise TimeoutError(f"HTTP port {self.http_port} did not answer: {exc}") from None

    def log(self) -> str:
        """What the broker printed so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM and wait; returns the exit code."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        code = self.proc.returncode
        self.proc = None
        self._log.close()
        return code

    def kill(self) -> None:
        """SIGKILL: the broker gets no chance to flush anything."""
        if self.proc is None:
            return
        self.proc.kill()
        self.proc.wait()
        self.proc = None
        self._log.close()

    def __enter__(self) -> BrokerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class BrokerThread:
    """A broker (with its HTTP server, as ``magnetar standalone`` runs it) on its own event loop in a
    background thread of this process."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="magnetar-broker", daemon=True)
        self.server: StandaloneServer | None = None

    @property
    def service_url(self) -> str:
        """pulsar:// URL of the broker."""
        return f"pulsar://127.0.0.1:{self.server.port}"

    @property
    def tls_service_url(self) -> str:
        """pulsar+ssl:// URL of the broker (its TLS listener), by the name test certificates are made for."""
        return f"pulsar+ssl://localhost:{self.server.tls_port}"

    def start(self) -> BrokerThread:
        """Start the loop thread and the broker on it; returns once the broker and its HTTP app serve."""
        from magnetar.admin.standalone import StandaloneServer

        self._thread.start()
        self.server = StandaloneServer(self.config)
        asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(15)
        # ready as before HTTP came with the first connection: the app is served when start() returns
        asyncio.run_coroutine_threadsafe(self.server.serve_http(), self.loop).result(30)
        return self

    def call(self, fn, *args):  # noqa: ANN001, ANN201 - any callable on the broker loop
        """Run ``fn(*args)`` on the broker's loop and return its result."""

        async def run():  # noqa: ANN202
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(15)

    def stop(self) -> None:
        """Stop the broker and its loop thread."""
        if self.server is not None:
            asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    def __enter__(self) -> BrokerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
