"""A standalone broker: the binary-protocol broker and the admin HTTP app composed on one loop.

Used by the ``magnetar standalone`` command and by :mod:`magnetar.testing`. The broker knows
nothing of HTTP; this is where the two meet. The HTTP ports and the binary listeners open at start;
the HTTP ports are served first by :mod:`magnetar.admin.light_http` (readiness, health, the cluster list
and /metrics, without the HTTP stack); the HTTP stack (FastAPI, uvicorn, pydantic: over 20 MB) is
imported and the app's core built only when the first request those do not answer arrives, in a worker
thread (the broker's loop must not wait for it), and that request's connection is then given to uvicorn,
which serves the ports from then on. The admin routes (about 190) are built a group at a time,
on the first request under each group's paths (:mod:`magnetar.admin.route_groups`). The app is served on
plain HTTP (``http_port``, unless 0) and on HTTPS (``webServicePortTls``, when set) with the broker's
server TLS context.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import logging
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING

from magnetar.admin.commit_latencies import record_commit_latencies
from magnetar.admin.light_http import LightConnection, LightEndpoints
from magnetar.broker.config import BrokerConfig
from magnetar.broker.dynamic_config import apply_stored_overrides
from magnetar.broker.security.tls import server_context
from magnetar.broker.server import BrokerServer, bind_socket
from magnetar.broker.service import BrokerService

if TYPE_CHECKING:
    import ssl

    from magnetar.admin.http_server import HttpServer
    from magnetar.admin.route_groups import LazyRoutesApp

log = logging.getLogger("magnetar.admin")


#: seconds from start to the statistics sampling's start (rates are over 10 s windows)
SAMPLING_DELAY = 1.0

def build_http_app(service: BrokerService) -> LazyRoutesApp:
    """Import the HTTP stack and build the app of ``service`` (its route groups come on first use); runs in a
    worker thread, off the loop."""
    # the HTTP stack, imported in this worker thread, never on the loop or at start-up: FastAPI and the
    # app 650-750 ms CPU, uvicorn and the server 80-90 ms (python -X importtime)
    from magnetar.admin import http_server  # noqa: F401 - uvicorn loads here too, not on the loop
    from magnetar.admin.app import create_lazy_app

    return create_lazy_app(service)


class StandaloneServer:
    """A running broker with its HTTP servers (plain when ``http_port`` is not 0, HTTPS when configured).

    The HTTP ports listen from :meth:`start` on, served by the light server (:mod:`.light_http`); the
    HTTP stack is imported and the app built only when the first request the light server does not
    answer arrives on one of them (or :meth:`serve_http` asks): a broker only health-checked and scraped
    never loads it. That request's connection waits meanwhile (its reading paused) and is then served by
    uvicorn, as every later one.
    """

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.broker = BrokerServer(config)
        self.http: HttpServer | None = None
        self.https: HttpServer | None = None
        self.http_port = config.http_port
        self.https_port = config.https_port
        #: called on the loop once the HTTP app is built and served (the standalone command freezes the
        #: garbage collector's view of start-up objects then)
        self.on_http_serving: Callable[[], None] | None = None
        #: called on the loop once a group of admin routes is built for the first request that needed it,
        #: at most once per group (the standalone command collects and freezes the group's objects then)
        self.on_routes_built: Callable[[], None] | None = None
        #: why the HTTP app could not be built (its ports are closed then), None while all is well
        self.http_error: BaseException | None = None
        self._sockets: list[tuple[socket.socket, ssl.SSLContext | None]] = []
        self._light = LightEndpoints(self.broker.service)
        self._light_servers: list[asyncio.Server] = []
        self._light_connections: set[LightConnection] = set()
        self._adoptions: set[asyncio.Task[None]] = set()
        self._http_task: asyncio.Task[None] | None = None
        self._sampling_task: asyncio.Task[None] | None = None
        self._stopping = False

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

    @property
    def http_listening(self) -> bool:
        """Whether HTTP ports listen (served now, or as soon as a connection comes)."""
        return bool(self._sockets) or self.http is not None or self.https is not None

    async def start(self) -> None:
        """Bind every port, then lock and open the data directory, then serve; returns once all accept
        connections (the HTTP ones are served from their first connection on). A port that cannot be
        bound fails before anything serves and before the data directory is touched (not even created),
        and the bound HTTP ports are in the config before the first client can ask."""
        config = self.config
        https_context = server_context(config.security) if config.https_port is not None else None
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
            self.broker.bind()
            await self.broker.service.start()
            await apply_stored_overrides(self.broker.service)  # the dynamic configuration, before any client
            await self.broker.listen()
        except BaseException:
            for sock, _context in sockets:
                sock.close()
            self.broker.unbind()
            raise
        if sockets:
            self._sockets = sockets
            self._start_recording()
            await self._serve_light(sockets)

    async def _serve_light(self, sockets: list[tuple[socket.socket, ssl.SSLContext | None]]) -> None:
        """The light server on a duplicate of each HTTP socket (the original is uvicorn's once the app is built)."""
        loop = asyncio.get_running_loop()
        for sock, context in sockets:
            hand_off = functools.partial(self._hand_off, context is not None)

            def connection(hand_off: functools.partial[None] = hand_off) -> LightConnection:
                return LightConnection(self._light, hand_off, self._light_connections)

            self._light_servers.append(await loop.create_server(connection, sock=sock.dup(), ssl=context))

    def _hand_off(self, tls: bool, light: LightConnection, transport: asyncio.Transport, data: bytes) -> None:
        """A light connection's request needs the app: build it (unless it is) and give uvicorn the connection."""
        task = asyncio.get_running_loop().create_task(self._adopt(tls, transport, data), name="http-adopt")
        self._adoptions.add(task)
        task.add_done_callback(self._adoptions.discard)

    async def _adopt(self, tls: bool, transport: asyncio.Transport, data: bytes) -> None:
        await asyncio.shield(self._begin_http())
        server = self.https if tls else self.http
        if server is None or self._stopping:
            transport.close()
            return
        server.adopt(transport, data)

    def _close_light(self) -> None:
        """Stop the light server accepting (its duplicate sockets close; the originals stay uvicorn's)."""
        for server in self._light_servers:
            server.close()
        self._light_servers = []

    def _start_recording(self) -> None:
        """What /metrics reports from the broker's start: the commit latency histograms, and the statistics
        sampling behind the rates (light: no HTTP stack)."""
        record_commit_latencies(getattr(self.service, "committer", None))
        self._sampling_task = asyncio.get_running_loop().create_task(self._start_sampling(), name="admin-sampling")

    async def _start_sampling(self) -> None:
        """Start the statistics sampling once start-up's first clients are served: its modules load then,
        off the loop (the sampler takes its first sample a second later in any case)."""
        await asyncio.sleep(SAMPLING_DELAY)
        await asyncio.get_running_loop().run_in_executor(None, importlib.import_module, "magnetar.broker.resources.admin")
        # imported just above off the loop, not at start-up: 21 ms CPU (python -X importtime)
        from magnetar.broker.resources.admin import admin_for

        if not self._stopping:
            admin = admin_for(self.service)
            admin.start()
            # with the sampling, not at start-up: 3 ms CPU (python -X importtime)
            from magnetar.admin.chart_history import chart_history_for

            chart_history_for(admin).start()  # the console charts' last minutes, from the start

    def _begin_http(self) -> asyncio.Task[None]:
        """The task that builds and serves the HTTP app, started now unless it was."""
        if self._http_task is None:
            self._http_task = asyncio.get_running_loop().create_task(self._serve_http(), name="http-build")
        return self._http_task

    async def serve_http(self) -> None:
        """Build and serve the HTTP app now (unless it is), and return once it is served; raises when it
        could not be built."""
        if not self._sockets and self._http_task is None:
            return
        await asyncio.shield(self._begin_http())
        if self.http_error is not None:
            raise RuntimeError("the HTTP app could not be built") from self.http_error

    async def _serve_http(self) -> None:
        """Build the app off the loop, then serve the bound sockets (unless the server stops meanwhile)."""
        try:
            app = await asyncio.get_running_loop().run_in_executor(None, build_http_app, self.service)
        except Exception as exc:
            log.exception("the HTTP app could not be built: HTTP ports closed")
            self.http_error = exc
            self._close_sockets()
            return
        if self._stopping:
            return
        app.groups.on_built = self._routes_built
        # loaded by now (build_http_app imported it in its thread), never at start-up: 80-90 ms CPU
        from magnetar.admin.http_server import HttpServer

        sockets, self._sockets = self._sockets, []
        for sock, context in sockets:
            server = HttpServer(app, self.config.bind, 0, context, sock=sock)
            if context is None:
                self.http = server
            else:
                self.https = server
            await server.start()
        self._light.app_served = True
        self._close_light()
        if self.on_http_serving is not None:
            self.on_http_serving()

    def _routes_built(self, _group: str) -> None:
        if self.on_routes_built is not None:
            self.on_routes_built()

    def _close_sockets(self) -> None:
        self._close_light()
        for light in list(self._light_connections):
            light.close()
        for sock, _context in self._sockets:
            sock.close()
        self._sockets = []

    async def stop(self) -> None:
        """Stop accepting, close client connections, stop HTTP (after a build under way: a worker thread
        cannot be interrupted), flush and close storage."""
        self._stopping = True
        self.broker.stop_accepting()
        self._close_light()
        if self._sampling_task is not None:
            self._sampling_task.cancel()
        if self._http_task is not None:
            await asyncio.wait({self._http_task})
        if self._adoptions:
            await asyncio.wait(set(self._adoptions))
        self._close_sockets()
        for server in (self.http, self.https):
            if server is not None:
                await server.stop()
        await self.broker.stop()
