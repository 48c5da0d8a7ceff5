"""A broker with its HTTP server on its own event loop in a background thread of the test process."""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from magnetar.admin.standalone import StandaloneServer
    from magnetar.broker.config import BrokerConfig


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
        # the broker and its admin app: 380-570 ms with python -X importtime on a loaded machine, kept off
        # `import magnetar.testing` (the pytest plugin's fixtures import this package and start brokers
        # in child processes)
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
