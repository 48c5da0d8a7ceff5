"""A standalone broker: the binary-protocol broker and the admin HTTP app composed on one loop.

Used by the ``magnetar standalone`` command and by :mod:`magnetar.testing`. The broker knows
nothing of HTTP; this is where the two meet.
"""

from __future__ import annotations

from magnetar.admin.app import create_app
from magnetar.admin.http_server import HttpServer
from magnetar.broker.config import BrokerConfig
from magnetar.broker.server import BrokerServer
from magnetar.broker.service import BrokerService


class StandaloneServer:
    """A running broker with its HTTP server (when ``http_port`` is not 0)."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.broker = BrokerServer(config)
        self.http: HttpServer | None = None
        self.http_port = config.http_port

    @property
    def service(self) -> BrokerService:
        """The broker service."""
        return self.broker.service

    @property
    def port(self) -> int:
        """The binary protocol port (the bound one once started)."""
        return self.broker.port

    async def start(self) -> None:
        """Start the broker, then the HTTP server; returns once both accept connections."""
        await self.broker.start()
        if self.config.http_port:
            self.http = HttpServer(create_app(self.service), self.config.bind, self.config.http_port)
            await self.http.start()
            self.http_port = self.http.port

    async def stop(self) -> None:
        """Stop accepting, close client connections, stop HTTP, flush and close storage."""
        self.broker.stop_accepting()
        if self.http is not None:
            await self.http.stop()
        await self.broker.stop()
