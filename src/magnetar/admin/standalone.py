"""A standalone broker: the binary-protocol broker and the admin HTTP app composed on one loop.

Used by the ``magnetar standalone`` command and by :mod:`magnetar.testing`. The broker knows
nothing of HTTP; this is where the two meet. The binary listeners open first and answer while the
HTTP stack (FastAPI, uvicorn, pydantic) is imported and the app's core built in a worker thread: the
broker's loop must not wait for it. The admin routes (about 190) are built a group at a time, on the
first request under each group's paths (:mod:`magnetar.admin.route_groups`). The app is served on
plain HTTP (``http_port``, unless 0) and on HTTPS (``webServicePortTls``, when set) with the broker's
server TLS context.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from typing import TYPE_CHECKING

from magnetar.broker.config import BrokerConfig
from magnetar.broker.security.tls import server_context
from magnetar.broker.server import BrokerServer
from magnetar.broker.service import BrokerService

if TYPE_CHECKING:
    import ssl

    from magnetar.admin.http_server import ASGIApp, HttpServer


def bind_socket(bind: str, port: int) -> socket.socket:
    """A TCP socket bound to ``bind:port`` (0: a free port) and listening: a client that calls the
    REST API as soon as the binary port answers (as scripts written for Pulsar do) waits in the
    backlog while the HTTP app is built, instead of being refused."""
    sock = socket.socket(socket.AF_INET6 if ":" in bind else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((bind, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


#: tests only: a file path; the HTTP app's build waits (at most 60 s) until that file exists, so that a
#: test can signal a broker whose binary port answers while its HTTP app is still being built
HOLD_HTTP_BUILD_ENV = "MAGNETAR_TEST_HOLD_HTTP_BUILD"


def build_http_app(service: BrokerService) -> ASGIApp:
    """Import the HTTP stack and build the app of ``service`` (its route groups come on first use); runs in a
    worker thread, off the loop."""
    gate = os.environ.get(HOLD_HTTP_BUILD_ENV)
    deadline = time.monotonic() + 60
    while gate and not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.01)
    from magnetar.admin import http_server  # noqa: F401 - uvicorn loads here too, not on the loop
    from magnetar.admin.app import create_lazy_app

    return create_lazy_app(service)


class StandaloneServer:
    """A running broker with its HTTP servers (plain when ``http_port`` is not 0, HTTPS when configured)."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.broker = BrokerServer(config)
        self.http: HttpServer | None = None
        self.https: HttpServer | None = None
        self.http_port = config.http_port
        self.https_port = config.https_port

    @property
    def service(self) -> BrokerService:
        """The broker service."""
        return self.broker.service

    @property
    def port(self) -> int | None:
        """The plain binary protocol port (the bound one once started), None when it is off."""
        return self.broker.port

    @property
    def tls_port(self) -> int | None:
        """The pulsar+ssl:// port (the bound one once started), None when it is off."""
        return self.broker.tls_port

    async def start(self) -> None:
        """Open the service, bind the HTTP ports, open the binary listeners, then serve HTTP; returns once
        all accept connections. A port in use fails before anything listens, and the bound HTTP ports are
        in the config before the first client can ask for them."""
        config = self.config
        https_context = server_context(config.security) if config.https_port is not None else None
        await self.broker.service.start()
        sockets: list[tuple[socket.socket, ssl.SSLContext | None]] = []
        try:
            if config.http_port:
                sockets.append((bind_socket(config.bind, config.http_port), None))
                self.http_port = config.http_port = sockets[-1][0].getsockname()[1]
            if config.https_port is not None:
                sockets.append((bind_socket(config.bind, config.https_port), https_context))
                self.https_port = sockets[-1][0].getsockname()[1]
                if config.https_port != self.https_port:
                    config.with_security(web_service_port_tls=self.https_port)
            await self.broker.listen()
        except BaseException:
            for sock, _context in sockets:
                sock.close()
            raise
        if sockets:
            await self._serve_http(sockets)

    async def _serve_http(self, sockets: list[tuple[socket.socket, ssl.SSLContext | None]]) -> None:
        """Build the app off the loop, start the service's statistics sampling, serve the bound sockets."""
        app = await asyncio.get_running_loop().run_in_executor(None, build_http_app, self.service)
        # both modules are loaded by now (build_http_app imported them in its thread)
        from magnetar.admin.http_server import HttpServer
        from magnetar.broker.resources.admin import admin_for

        admin_for(self.service).start()
        for sock, context in sockets:
            server = HttpServer(app, self.config.bind, 0, context, sock=sock)
            await server.start()
            if context is None:
                self.http = server
            else:
                self.https = server

    async def stop(self) -> None:
        """Stop accepting, close client connections, stop HTTP, flush and close storage."""
        self.broker.stop_accepting()
        for server in (self.http, self.https):
            if server is not None:
                await server.stop()
        await self.broker.stop()
