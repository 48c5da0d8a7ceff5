"""``magnetar standalone`` in a child process on free ports, for the project's end-to-end tests.

The child dies with the process that started it (:mod:`magnetar.testing.lifeline`)."""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
from pathlib import Path

from magnetar.testing.lifeline import die_with_parent
from magnetar.testing.ports import free_port, wait_for_port


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
        return self.launch().wait_ready(timeout)

    def launch(self) -> BrokerProcess:
        """Start the broker's process without waiting for it: :meth:`wait_ready` does (so that
        several brokers of one test start side by side)."""
        env = {**os.environ, **self.env}
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            self.command(), stdout=self._log, stderr=subprocess.STDOUT, env=env, preexec_fn=die_with_parent()
        )
        return self

    def wait_ready(self, timeout: float = 15.0) -> BrokerProcess:
        """Wait until the launched broker's ports accept connections (killed and an error if not)."""
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
        # http.client, not urllib.request: the plugin's fixtures import this module, and urllib.request
        # costs 55 ms (python -X importtime at load 12) before the session broker's launch
        conn = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=timeout)
        try:
            conn.request("GET", "/admin/v2/clusters")
            conn.getresponse().read()
        except (OSError, http.client.HTTPException) as exc:
            raise TimeoutError(f"HTTP port {self.http_port} did not answer: {exc}") from None
        finally:
            conn.close()

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
