"""A magnetar broker for tests and scripts: ``magnetar standalone`` in a child process on free ports.

``with Broker() as broker:`` (or ``async with``) starts it with its data in a fresh temporary
directory and removes both at the end. The child dies with the process that started it
(:mod:`magnetar.testing.lifeline`). Settings are magnetar's (:class:`magnetar.broker.config.BrokerConfig`
fields and the security settings, by field or Pulsar name) and reach the child as the ``MAGNETAR_*``
environment variables ``magnetar standalone`` reads; a test broker runs with ``fsync = never`` unless
told otherwise.
"""

from __future__ import annotations

import asyncio
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from magnetar.testing.admin import Admin, AdminError
from magnetar.testing.lifeline import die_with_parent, reap_stale, register, unregister
from magnetar.testing.ports import free_port

#: settings every test broker gets unless the caller gives its own value
TEST_DEFAULTS: dict[str, object] = {"fsync": "never"}
#: the role that administers a broker started with ``token_auth`` (a superuser)
ADMIN_ROLE = "admin"
#: the pipe ``magnetar standalone`` writes a byte to once it listens (magnetar.cli.standalone.READY_FD_ENV;
#: that module is not imported here: it loads the whole broker)
READY_FD_ENV = "MAGNETAR_READY_FD"



def _admin_app_answers(probe: Admin) -> bool:
    """Whether the broker's admin app answered a request only it serves (the tenants list: readiness, health and
    /metrics are answered without building it, admin/light_http.py), which has it built; any HTTP status counts."""
    try:
        probe.tenants()
    except AdminError:
        return True
    except OSError:
        return False
    return True

class BrokerStartError(RuntimeError):
    """The broker exited or did not listen in time; the message ends with its log."""


def setting_value(value: object) -> str:
    """A setting as the text of its ``MAGNETAR_*`` variable (booleans lower case, lists comma-separated)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple | set | frozenset):
        return ",".join(str(item) for item in value)
    return str(value)


class Broker:
    """``magnetar standalone`` in a child process, for tests (the pytest plugin's brokers are these).

    ``settings``: broker settings by name (``{"deduplication_enabled": True, "max_message_size": 1024 * 1024}``).
    ``token_auth``: token authentication and authorization on, with a fresh secret key; :meth:`token` makes
    tokens, :attr:`admin_token` is a superuser's. ``directory``: where data, log and keys go (default: a new
    temporary directory, removed by :meth:`stop` unless ``keep_data``).
    """

    def __init__(
        self,
        settings: Mapping[str, object] | None = None,
        *,
        token_auth: bool = False,
        directory: Path | str | None = None,
        keep_data: bool = False,
        port: int | None = None,
        http_port: int | None = None,
    ) -> None:
        self.settings = {**TEST_DEFAULTS, **(settings or {})}
        self.token_auth = token_auth
        self.keep_data = keep_data
        self._owns_directory = directory is None
        self.directory: Path | None = Path(directory) if directory is not None else None
        self._fixed_ports = (port, http_port)
        self.port = port or 0
        self.http_port = http_port or 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._secret: bytes | None = None
        self._admin: Admin | None = None
        #: set once the admin API answers (or cannot), with why it cannot; one pair per launch
        self._http_ready = threading.Event()
        self._http_errors: list[str] = []
        #: whether the admin API's warm-up was asked for since the last launch
        self._warming = False
        #: the read end of the pipe the launched broker writes a byte to once it listens (until then)
        self._ready_pipe: int | None = None

    # -- addresses and files ----------------------------------------------------------------------
    @property
    def service_url(self) -> str:
        """The ``pulsar://`` URL."""
        return f"pulsar://127.0.0.1:{self.port}"

    @property
    def http_url(self) -> str:
        """The ``http://`` URL of the admin API."""
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def data_dir(self) -> Path:
        """The broker's data directory."""
        return self._base() / "data"

    @property
    def log_path(self) -> Path:
        """What the broker prints goes here."""
        return self._base() / "broker.log"

    @property
    def running(self) -> bool:
        """Whether the broker process runs."""
        return self.proc is not None and self.proc.poll() is None

    def _base(self) -> Path:
        if self.directory is None:
            raise RuntimeError("the broker has not been started")
        return self.directory

    def log(self) -> str:
        """What the broker printed so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except (OSError, RuntimeError):
            return ""

    # -- authentication ---------------------------------------------------------------------------
    def token(self, role: str) -> str:
        """A token for ``role``, signed with this broker's secret key (``token_auth`` brokers only)."""
        if self._secret is None:
            raise RuntimeError("this broker was not started with token_auth=True")
        # magnetar.broker.security.tokens loads PyJWT and cryptography: 190 ms on the test machine
        # (python -X importtime), paid only by brokers with authentication
        from magnetar.broker.security.tokens import create_token

        return create_token(self._secret, role)

    @property
    def admin_token(self) -> str | None:
        """A superuser's token on a ``token_auth`` broker, else None."""
        return self.token(ADMIN_ROLE) if self._secret is not None else None

    @property
    def admin(self) -> Admin:
        """The admin API of this broker (waits until it answers; a superuser's with ``token_auth``)."""
        self.warm_admin()
        if not self._http_ready.wait(30) or self._http_errors:
            why = self._http_errors[0] if self._http_errors else "no answer in 30 s"
            raise BrokerStartError(f"the admin API at {self.http_url} did not answer: {why}\n{self.log()}")
        if self._admin is None:
            self._admin = Admin(self.http_url, self.admin_token)
        return self._admin

    # -- start ------------------------------------------------------------------------------------
    def _prepare(self) -> None:
        """Reap brokers of dead test processes, make the directory, the secret key and the log file."""
        reap_stale()
        if self.directory is None:
            self.directory = Path(tempfile.mkdtemp(prefix="magnetar-broker-"))
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.token_auth and self._secret is None:
            self._secret = os.urandom(32)  # HS256's key length, as `magnetar tokens create-secret-key` makes
            (self.directory / "secret.key").write_bytes(self._secret)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed when the process ends

    def _environment(self) -> dict[str, str]:
        settings = dict(self.settings)
        if self.token_auth:
            settings = {"authentication_enabled": True, "authentication_providers": ["token"],
                        "token_secret_key": f"file://{self._base() / 'secret.key'}", "authorization_enabled": True,
                        "super_user_roles": [ADMIN_ROLE], **settings}
        env = dict(os.environ)
        env.update({f"MAGNETAR_{name.upper()}": setting_value(value) for name, value in settings.items()})
        return env

    def _launch(self) -> None:
        self.port = self.port or free_port()
        self.http_port = self.http_port or free_port()
        command = [sys.executable, "-m", "magnetar.cli.main", "standalone", "--data-dir", str(self.data_dir),
                   "--port", str(self.port), "--http-port", str(self.http_port)]
        self._http_ready, self._http_errors, self._warming = threading.Event(), [], False
        env, pass_fds = self._environment(), ()
        self._close_ready_pipe()
        if os.name == "posix":  # the broker says when it listens, on a pipe (a polled port answers later)
            self._ready_pipe, ready_write = os.pipe()
            env[READY_FD_ENV], pass_fds = str(ready_write), (ready_write,)
        try:
            self.proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
                                         env=env, pass_fds=pass_fds, preexec_fn=die_with_parent())
        finally:
            for fd in pass_fds:
                os.close(fd)
        register(self.proc.pid, self.directory if self._owns_directory and not self.keep_data else None)

    def _close_ready_pipe(self) -> None:
        if self._ready_pipe is not None:
            os.close(self._ready_pipe)
            self._ready_pipe = None

    def _listening(self, wait: float = 0.0) -> bool:
        """Whether the binary port accepts, waiting up to ``wait`` s for the broker's word on its pipe; raises
        BrokerStartError when the process is gone."""
        assert self.proc is not None
        if self._ready_pipe is not None and select.select([self._ready_pipe], [], [], wait)[0]:
            said = os.read(self._ready_pipe, 1)
            self._close_ready_pipe()
            if said:
                return True
            # the pipe closed without a word: the broker exited (the port and its status tell below)
        if self.proc.poll() is not None:
            raise BrokerStartError(f"the broker exited with status {self.proc.returncode}; its log:\n{self.log()}")
        with socket.socket() as sock:
            return sock.connect_ex(("127.0.0.1", self.port)) == 0

    def _port_taken(self) -> bool:
        """Whether the broker exited because a port it was given is in use (another test run took it)."""
        assert self.proc is not None
        return self.proc.poll() is not None and "in use" in self.log() and self._fixed_ports == (None, None)

    def warm_admin(self) -> None:
        """Have the broker build its admin API now (it does at the first request only the app answers), in a thread, unless
        asked since the last launch; :attr:`admin` waits for it."""
        if self._warming or self.proc is None:
            return
        self._warming = True
        probe, proc, ready, errors = Admin(self.http_url), self.proc, threading.Event(), []
        self._http_ready, self._http_errors = ready, errors

        def wait() -> None:
            deadline = time.monotonic() + 30
            while not _admin_app_answers(probe):
                if time.monotonic() > deadline or proc is None or proc.poll() is not None:
                    errors.append("the broker exited" if proc is None or proc.poll() is not None else "not ready after 30 s")
                    break
                time.sleep(0.01)
            probe.close()
            ready.set()

        threading.Thread(target=wait, name="magnetar-admin-warmup", daemon=True).start()

    def launch(self) -> Broker:
        """Start the broker's process without waiting for it (:meth:`start` waits)."""
        if self.directory is None or self._log is None:
            self._prepare()
        if self.proc is None:
            self._launch()
        return self

    def _relaunch_on_taken_port(self, attempt: int) -> bool:
        """After a failed start: whether it was a port another process took (then launched anew)."""
        if attempt == 2 or not self._port_taken():
            return False
        self._terminate(graceful=False)
        self.port = self.http_port = 0
        self._launch()
        return True

    def start(self, timeout: float = 15.0, *, warm_admin: bool = True) -> Broker:
        """Start the broker; returns once its binary port accepts connections. The admin API follows: its build
        starts now, or with ``warm_admin=False`` at :meth:`warm_admin` or the first use of :attr:`admin` (the
        build takes 0.7 s of the broker's CPU, which a client's first requests would share)."""
        self.launch()
        for attempt in range(3):
            deadline = time.monotonic() + timeout
            try:
                while not self._listening(wait=0.05):
                    if time.monotonic() > deadline:
                        raise BrokerStartError(f"the broker did not listen within {timeout} s; its log:\n{self.log()}")
                    if self._ready_pipe is None:
                        time.sleep(0.005)
            except BrokerStartError:
                if self._relaunch_on_taken_port(attempt):
                    continue
                self.stop()
                raise
            break
        self._close_ready_pipe()
        if warm_admin:
            self.warm_admin()
        if self.token_auth:
            self._open_defaults()
        return self

    def _open_defaults(self) -> None:
        """With authentication on, a broker starts without tenant ``public``: make it and ``public/default``,
        as a secured Pulsar's set-up scripts do (a superuser's; other roles need :meth:`Admin.grant_permission`)."""
        admin = self.admin
        if "public" not in admin.tenants():
            admin.create_tenant("public")
        if "public/default" not in admin.namespaces("public"):
            admin.create_namespace("public/default")

    async def astart(self, timeout: float = 15.0) -> Broker:
        """:meth:`start` for a running event loop: file work in a thread, the wait without blocking."""
        if self.directory is None or self._log is None:
            await asyncio.to_thread(self._prepare)
        self.launch()
        for attempt in range(3):
            deadline = time.monotonic() + timeout
            try:
                while not await self._alistening():
                    if time.monotonic() > deadline:
                        raise BrokerStartError(f"the broker did not listen within {timeout} s; its log:\n{self.log()}")
                    await asyncio.sleep(0.005)
            except BrokerStartError:
                if self._relaunch_on_taken_port(attempt):
                    continue
                await self.astop()
                raise
            break
        self._close_ready_pipe()
        self.warm_admin()
        if self.token_auth:
            await asyncio.to_thread(self._open_defaults)
        return self

    async def _alistening(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise BrokerStartError(f"the broker exited with status {self.proc.returncode}; its log:\n{self.log()}")
        try:
            _reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        except OSError:
            return False
        writer.close()
        return True

    # -- stop -------------------------------------------------------------------------------------
    def _terminate(self, graceful: bool, timeout: float = 15.0) -> int | None:
        """End the process (SIGTERM and wait, else or then SIGKILL); its exit status."""
        proc, self.proc = self.proc, None
        self._close_ready_pipe()
        if proc is None:
            return None
        if proc.poll() is None:
            if graceful:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
            else:
                proc.kill()
        code = proc.wait()
        unregister(proc.pid)
        return code

    def kill(self) -> None:
        """SIGKILL the broker: it flushes nothing (its data stays; :meth:`restart` starts it again)."""
        self._terminate(graceful=False)

    def restart(self, timeout: float = 15.0) -> Broker:
        """Stop the broker (if it runs) and start it again on the same ports and data."""
        self._terminate(graceful=True)
        return self.start(timeout)

    def _close(self) -> None:
        """Close the log and the admin connection; remove the temporary directory unless kept."""
        if self._admin is not None:
            self._admin.close()
            self._admin = None
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._owns_directory and not self.keep_data and self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None

    def stop(self) -> int | None:
        """Stop the broker (SIGTERM, then SIGKILL after 15 s) and clean up; its exit status."""
        code = self._terminate(graceful=True)
        self._close()
        return code

    async def astop(self) -> int | None:
        """:meth:`stop` without blocking the running event loop."""
        code = await asyncio.to_thread(self._terminate, True)
        await asyncio.to_thread(self._close)
        return code

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> Broker:
        return await self.astart()

    async def __aexit__(self, *exc: object) -> None:
        await self.astop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<Broker {self.service_url} {self.http_url} {state} in {self.directory}>"


class ExternalBroker:
    """A broker that already runs (Apache Pulsar, or a shared magnetar), in the place of a started one.

    It has the addresses and the admin API of a :class:`Broker`; it cannot be restarted or killed.
    """

    directory = None
    running = True

    def __init__(self, service_url: str, http_url: str, token: str | None = None) -> None:
        self.service_url = service_url
        self.http_url = http_url.rstrip("/")
        #: the token the admin helper and the client fixtures authenticate with (None: none)
        self.admin_token = token
        self.admin = Admin(self.http_url, token)

    def _not_ours(self, what: str) -> BrokerStartError:
        return BrokerStartError(f"{what}: the broker at {self.service_url} is an external one (--pulsar-service-url)")

    def restart(self, timeout: float = 15.0) -> ExternalBroker:
        """Not possible: the broker is not this process's."""
        raise self._not_ours("cannot restart")

    def kill(self) -> None:
        """Not possible: the broker is not this process's."""
        raise self._not_ours("cannot kill")

    def stop(self) -> None:
        """Close the admin connection (the broker runs on)."""
        self.admin.close()

    def __repr__(self) -> str:
        return f"<ExternalBroker {self.service_url} {self.http_url}>"
