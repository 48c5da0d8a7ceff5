"""A standalone broker: the binary-protocol broker and the admin HTTP app composed on one loop.

Used by the ``magnetar standalone`` command and by :mod:`magnetar.testing`. The broker knows
nothing of HTTP; this is where the two meet. The app is served on plain HTTP (``http_port``, unless
0) and on HTTPS (``webServicePortTls``, when set) with the broker's server TLS context.
"""

from __future__ import annotations

from magnetar.admin.app import create_app
from magnetar.admin.http_server import HttpServer
from magnetar.broker.config import BrokerConfig
from magnetar.broker.security import server_context
from magnetar.broker.server import BrokerServer
from magnetar.broker.service import BrokerService


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
        """Open the service, start the HTTP servers, then the binary listeners; returns once all accept
        connections (a client that reaches the binary port finds the admin API up)."""
        config = self.config
        https_context = server_context(config.security) if config.https_port is not None else None
        await self.broker.service.start()
        if config.http_port or config.https_port is not None:
            app = create_app(self.service)
            if config.http_port:
                self.http = HttpServer(app, config.bind, config.http_port)
                await self.http.start()
                self.http_port = self.http.port
                config.http_port = self.http.port
            if config.https_port is not None:
                self.https = HttpServer(app, config.bind, config.https_port, https_context)
                await self.https.start()
                self.https_port = self.https.port
                if config.https_port != self.https.port:
                    config.with_security(web_service_port_tls=self.https.port)
        await self.broker.listen()

    async def stop(self) -> None:
        """Stop accepting, close client connections, stop HTTP, flush and close storage."""
        self.broker.stop_accepting()
        for server in (self.http, self.https):
            if server is not None:
                await server.stop()
        await self.broker.stop()
