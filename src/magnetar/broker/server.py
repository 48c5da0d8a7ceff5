"""The binary-protocol listener and the lifecycle of a broker's service, on one loop.

The HTTP side (admin API, lookup, metrics) is not started here: whoever runs a broker composes
the two (``magnetar.admin.standalone``), so the broker imports nothing from ``magnetar.admin``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from magnetar.broker.config import BrokerConfig
from magnetar.broker.service import BrokerService
from magnetar.broker.session.connection import ServerConnection

log = logging.getLogger("magnetar.broker")


class BrokerServer:
    """A running broker: the service plus its TCP listener."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.service = BrokerService(config)
        self._server: asyncio.AbstractServer | None = None
        self.port = config.port

    async def start(self) -> None:
        """Open storage and start listening; returns once the listener accepts connections."""
        await self.service.start()
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: ServerConnection(self.service), self.config.bind, self.config.port, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]
        if self.config.port == 0:
            self.config.port = self.port

    def stop_accepting(self) -> None:
        """Stop accepting connections and close the open ones (storage stays open)."""
        if self._server is not None:
            self._server.close()
        for conn in list(self.service.connections):
            conn.close()

    async def stop(self) -> None:
        """Stop accepting, close client connections, flush and close storage."""
        self.stop_accepting()
        await self.service.stop()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)
