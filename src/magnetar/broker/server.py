"""Listeners and lifecycle of a standalone broker (binary protocol + HTTP) on one loop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time

from magnetar.broker.config import BrokerConfig
from magnetar.broker.service import BrokerService
from magnetar.broker.session.connection import ServerConnection

log = logging.getLogger("magnetar.broker")


class BrokerServer:
    """A running broker: the service plus its TCP listener and HTTP server."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.service = BrokerService(config)
        self._server: asyncio.AbstractServer | None = None
        self._http: object | None = None
        self._http_task: asyncio.Task | None = None
        self.port = config.port
        self.http_port = config.http_port

    async def start(self) -> None:
        """Open storage and start listening; returns once both listeners accept connections."""
        await self.service.start()
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: ServerConnection(self.service), self.config.bind, self.config.port, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]
        if self.config.port == 0:
            self.config.port = self.port
        if self.config.http_port:
            await self._start_http()

    async def _start_http(self) -> None:
        import socket

        import uvicorn

        from magnetar.admin.app import create_app

        app = create_app(self.service)
        sock = socket.socket(socket.AF_INET6 if ":" in self.config.bind else socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.config.bind, self.config.http_port))
        self.http_port = sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", loop="none")
        server = uvicorn.Server(config)
        server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
        self._http = server
        self._http_task = asyncio.create_task(server.serve(sockets=[sock]), name="http")
        while not server.started:
            if self._http_task.done():
                self._http_task.result()
            await asyncio.sleep(0.005)

    async def stop(self) -> None:
        """Stop accepting, close client connections, flush and close storage."""
        if self._server is not None:
            self._server.close()
        for conn in list(self.service.connections):
            conn.close()
        if self._http is not None:
            self._http.should_exit = True  # type: ignore[attr-defined]
            if self._http_task is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self._http_task, 5)
        await self.service.stop()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)


async def run_standalone(config: BrokerConfig) -> None:
    """Run a broker until SIGTERM or SIGINT, then shut it down cleanly."""
    started = time.perf_counter()
    server = BrokerServer(config)
    await server.start()
    log.info(
        "magnetar standalone ready in %.0f ms: pulsar://%s:%d, http://%s:%d, data in %s, fsync %s",
        (time.perf_counter() - started) * 1000,
        config.bind,
        server.port,
        config.bind,
        server.http_port,
        config.data_dir,
        config.fsync,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("shutting down")
    await server.stop()
    log.info("stopped")
