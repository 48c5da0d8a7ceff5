"""The admin HTTP app served by uvicorn on the caller's running loop (the broker's loop).

Plain HTTP, or HTTPS with a server TLS context (``webServicePortTls``). On HTTPS every request's
ASGI scope carries the ASGI TLS extension (``scope["extensions"]["tls"]``: ``client_cert_chain``
as PEM, leaf first, ``client_cert_name``, ``tls_version``); :func:`peer_certificate_der` reads the
client certificate out of a scope for the authentication service.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import uvicorn
from uvicorn.protocols.http.auto import AutoHTTPProtocol

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]
_TLS_VERSIONS = {"TLSv1": 0x0301, "TLSv1.1": 0x0302, "TLSv1.2": 0x0303, "TLSv1.3": 0x0304}


def tls_extension(ssl_object: Any) -> dict[str, Any]:
    """The ASGI TLS extension of a connection's ``ssl.SSLObject`` (what the handshake verified)."""
    der = None
    with contextlib.suppress(ValueError, ssl.SSLError):
        der = ssl_object.getpeercert(binary_form=True)
    name = None
    if der:
        with contextlib.suppress(ValueError, ssl.SSLError):
            subject = ssl_object.getpeercert().get("subject", ())
            name = ",".join(f"{key}={value}" for rdn in reversed(subject) for key, value in rdn)
    return {
        "server_cert": None,
        "client_cert_chain": [ssl.DER_cert_to_PEM_cert(der)] if der else [],
        "client_cert_name": name,
        "client_cert_error": None,
        "tls_version": _TLS_VERSIONS.get(ssl_object.version() or ""),
        "cipher_suite": None,
    }


def peer_certificate_der(scope: Scope) -> bytes | None:
    """The client certificate (DER) of an HTTPS request's scope, or None (plain HTTP, no certificate)."""
    extensions = scope.get("extensions") or {}
    chain = (extensions.get("tls") or {}).get("client_cert_chain") or []
    if not chain:
        return None
    try:
        return ssl.PEM_cert_to_DER_cert(chain[0])
    except ValueError:
        return None


class TlsScopeProtocol(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
    """uvicorn's HTTP protocol that adds the ASGI TLS extension to the scopes of its connection."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Wrap the app of this connection so that its scopes carry the TLS extension."""
        super().connection_made(transport)
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is None:
            return
        extension = tls_extension(ssl_object)
        app: ASGIApp = self.app

        async def app_with_tls(scope: Scope, receive: Any, send: Any) -> None:
            if scope.get("type") in ("http", "websocket"):
                scope["extensions"] = {**(scope.get("extensions") or {}), "tls": extension}
            await app(scope, receive, send)

        self.app = app_with_tls


class _Server(uvicorn.Server):
    """uvicorn's server ticking once a second (its Date header's resolution, refreshed every tenth
    tick) instead of ten times a second: on an idle broker those wake-ups of the shared loop were
    most of its CPU. :meth:`request_exit` ends the wait at once."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._exit_requested = asyncio.Event()

    def request_exit(self) -> None:
        """Stop serving (what setting ``should_exit`` does, without waiting for the next tick)."""
        self.should_exit = True
        self._exit_requested.set()

    async def main_loop(self) -> None:
        """uvicorn's main loop, one tick a second (the counter steps by ten, as ten of its ticks)."""
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 10) % 864000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._exit_requested.wait(), 1.0)
            should_exit = await self.on_tick(counter)


class HttpServer:
    """uvicorn serving one app on ``bind:port`` (0: a free port) inside the running loop, HTTPS with a context."""

    def __init__(
        self, app: ASGIApp, bind: str, port: int, ssl_context: ssl.SSLContext | None = None,
        sock: socket.socket | None = None,
    ) -> None:
        self.app = app
        self.bind = bind
        self.port = port
        self.ssl_context = ssl_context
        #: a socket bound already (its port wins over ``port``)
        self.sock = sock
        self._server: _Server | None = None
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        """Bind and serve; returns once uvicorn accepts connections."""
        sock = self.sock
        if sock is None:
            sock = socket.socket(socket.AF_INET6 if ":" in self.bind else socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.bind, self.port))
        self.port = sock.getsockname()[1]
        context = self.ssl_context
        config = uvicorn.Config(
            self.app, log_level="warning", access_log=False, lifespan="off", loop="none",
            http=TlsScopeProtocol if context is not None else "auto",
        )
        config.load()
        if context is not None:
            config.ssl = context  # our context (protocols, ciphers, client certificates), not uvicorn's own
        server = _Server(config)
        # the process's owner (the standalone command) handles signals, not uvicorn
        server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
        self._server = server
        self._task = asyncio.create_task(server.serve(sockets=[sock]), name="https" if context else "http")
        while not server.started:
            if self._task.done():
                self._task.result()
            await asyncio.sleep(0.005)

    def adopt(self, transport: asyncio.Transport, data: bytes) -> None:
        """Serve a connection accepted elsewhere (the light server's), ``data`` its bytes read so far; its
        reading, paused by the light server, resumes."""
        server = self._server
        if server is None or transport.is_closing():
            transport.close()
            return
        config = server.config
        protocol = config.http_protocol_class(
            config=config, server_state=server.server_state, app_state=server.lifespan.state,
        )
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        transport.resume_reading()
        if data:
            protocol.data_received(data)

    async def stop(self) -> None:
        """Ask uvicorn to exit and wait for it (at most 5 s)."""
        if self._server is None:
            return
        self._server.request_exit()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, 5)
