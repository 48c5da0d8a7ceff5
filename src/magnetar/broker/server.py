"""The binary-protocol listeners and the lifecycle of a broker's service, on one loop.

``pulsar://`` on ``port`` (unless it is off) and ``pulsar+ssl://`` on ``brokerServicePortTls``
(when set) with the server TLS context of the security settings. The HTTP side (admin API, lookup,
metrics) is not started here: whoever runs a broker composes the two
(``magnetar.admin.standalone``), so the broker imports nothing from ``magnetar.admin``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
import ssl

from magnetar.broker.config import BrokerConfig
from magnetar.broker.security import server_context
from magnetar.broker.service import BrokerService
from magnetar.broker.session.connection import ServerConnection

log = logging.getLogger("magnetar.broker")


def bind_socket(bind: str, port: int) -> socket.socket:
    """A TCP socket bound to ``bind:port`` (0: a free port) and listening: a client that connects
    while the broker is still starting waits in the backlog instead of being refused. A port that
    cannot be bound raises an OSError naming the address and the port."""
    sock = socket.socket(socket.AF_INET6 if ":" in bind else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((bind, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        reason = "is already in use" if exc.errno == errno.EADDRINUSE else f"cannot be bound ({exc.strerror or exc})"
        raise OSError(exc.errno, f"{bind}:{port} {reason}") from exc
    return sock


class BrokerServer:
    """A running broker: the service plus its TCP listeners (plain and TLS)."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        #: the TLS context of the pulsar+ssl:// listener (SecurityConfigError names an unusable file)
        self.ssl_context: ssl.SSLContext | None = (
            server_context(config.security) if config.tls_port is not None else None
        )
        self.service = BrokerService(config)
        self._servers: list[asyncio.AbstractServer] = []
        #: ports bound and listening, not served yet (between bind() and listen())
        self._bound: list[tuple[socket.socket, ssl.SSLContext | None]] = []
        self.port = config.port
        self.tls_port = config.tls_port

    async def start(self) -> None:
        """Bind the ports, then open storage and serve; returns once the listeners accept connections.
        A port that cannot be bound fails before anything in the data directory is touched."""
        self.bind()
        try:
            await self.service.start()
        except BaseException:
            self.unbind()
            raise
        await self.listen()

    def bind(self) -> None:
        """Bind the binary ports (the bound ports replace 0 in the config); served by :meth:`listen`."""
        config = self.config
        try:
            if config.port is not None:
                self._bound.append((bind_socket(config.bind, config.port), None))
                self.port = config.port = self._bound[-1][0].getsockname()[1]
            if config.tls_port is not None:
                self._bound.append((bind_socket(config.bind, config.tls_port), self.ssl_context))
                self.tls_port = self._bound[-1][0].getsockname()[1]
                if config.tls_port != self.tls_port:
                    config.with_security(broker_service_port_tls=self.tls_port)
        except BaseException:
            self.unbind()
            raise

    def unbind(self) -> None:
        """Close the bound ports not served yet (a start that failed)."""
        for sock, _context in self._bound:
            sock.close()
        self._bound.clear()

    async def listen(self) -> None:
        """Serve the binary ports (bound now unless :meth:`bind` did) for a started service."""
        if not self._bound:
            self.bind()
        loop = asyncio.get_running_loop()
        bound, self._bound = self._bound, []
        for sock, context in bound:
            server = await loop.create_server(
                lambda: ServerConnection(self.service), sock=sock, ssl=context,
                ssl_handshake_timeout=10.0 if context is not None else None,
            )
            self._servers.append(server)

    def stop_accepting(self) -> None:
        """Stop accepting connections and close the open ones (storage stays open)."""
        for server in self._servers:
            server.close()
        for conn in list(self.service.connections):
            conn.close()

    async def stop(self) -> None:
        """Stop accepting, close client connections, flush and close storage."""
        self.stop_accepting()
        await self.service.stop()
        for server in self._servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 2)
