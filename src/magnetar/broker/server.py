"""The binary-protocol listeners and the lifecycle of a broker's service, on one loop.

``pulsar://`` on ``port`` (unless it is off) and ``pulsar+ssl://`` on ``brokerServicePortTls``
(when set) with the server TLS context of the security settings. The HTTP side (admin API, lookup,
metrics) is not started here: whoever runs a broker composes the two
(``magnetar.admin.standalone``), so the broker imports nothing from ``magnetar.admin``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl

from magnetar.broker.config import BrokerConfig
from magnetar.broker.security import server_context
from magnetar.broker.service import BrokerService
from magnetar.broker.session.connection import ServerConnection

log = logging.getLogger("magnetar.broker")


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
        self.port = config.port
        self.tls_port = config.tls_port

    async def start(self) -> None:
        """Open storage and start listening; returns once the listeners accept connections."""
        await self.service.start()
        await self.listen()

    async def listen(self) -> None:
        """Open the binary listeners of a started service (the bound ports replace 0 in the config)."""
        config = self.config
        if config.port is not None:
            self.port = await self._listen(config.port, None)
            config.port = self.port
        if config.tls_port is not None:
            self.tls_port = await self._listen(config.tls_port, self.ssl_context)
            if config.tls_port != self.tls_port:
                config.with_security(broker_service_port_tls=self.tls_port)

    async def _listen(self, port: int, context: ssl.SSLContext | None) -> int:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(
            lambda: ServerConnection(self.service), self.config.bind, port, reuse_address=True, ssl=context,
            ssl_handshake_timeout=10.0 if context is not None else None,
        )
        self._servers.append(server)
        return int(server.sockets[0].getsockname()[1])

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
