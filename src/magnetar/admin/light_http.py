"""The HTTP ports' first server: liveness, readiness, the cluster list and /metrics without the HTTP stack.

A broker that is only health-checked and scraped never needs FastAPI, pydantic and uvicorn (over 20 MB
resident once built). Until the first request that needs the admin app, the HTTP ports are served by
:class:`LightConnection`: a small HTTP/1.1 reader that answers ``GET`` of :data:`LIGHT_PATHS` itself,
byte for byte as the app served by uvicorn does (status line, ``date``, ``server``, ``content-length``,
``content-type``, ``Connection: close`` when the client asks for it or speaks HTTP/1.0), and hands any
other request, with its connection and every byte read so far, to the owner (the standalone server),
which builds the app and gives the connection to uvicorn. Nothing is answered here while the broker's
authentication is on: the app's middleware decides then.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from magnetar.storage.health import storage_health

if TYPE_CHECKING:
    from magnetar.broker.service import BrokerService

READY_PATH = "/admin/v2/brokers/ready"
HEALTH_PATH = "/admin/v2/brokers/health"
CLUSTERS_PATH = "/admin/v2/clusters"
METRICS_PATH = "/metrics"
#: what this module answers (``GET``, no query string); anything else goes to the app
LIGHT_PATHS = frozenset({READY_PATH, HEALTH_PATH, CLUSTERS_PATH, METRICS_PATH})
TEXT = b"text/plain; charset=utf-8"
JSON = b"application/json"
#: uvicorn's default keep-alive timeout (seconds), kept the same
KEEP_ALIVE_SECONDS = 5.0
#: a request head longer than this is the app's to refuse
MAX_HEAD_BYTES = 16384
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

Answer = tuple[int, bytes, bytes]
#: (connection, its transport, the bytes read and not answered): the app takes the connection over
HandOff = Callable[["LightConnection", asyncio.Transport, bytes], None]


def http_date(now: float | None = None) -> bytes:
    """The ``date`` header's value (RFC 7231, GMT), locale-free."""
    t = time.gmtime(now)
    return (f"{_DAYS[t.tm_wday]}, {t.tm_mday:02d} {_MONTHS[t.tm_mon - 1]} {t.tm_year} "
            f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} GMT").encode()


def response_bytes(status: int, content_type: bytes, body: bytes, close: bool) -> bytes:
    """The whole response as uvicorn (h11) writes it for an app's plain or JSON answer."""
    # with the first HTTP answer, not at the broker's start: 1.5 ms (python -X importtime; its enum's build)
    from http import HTTPStatus

    head = [
        b"HTTP/1.1 %d %s" % (status, HTTPStatus(status).phrase.encode()),
        b"date: " + http_date(),
        b"server: uvicorn",
        b"content-length: %d" % len(body),
        b"content-type: " + content_type,
    ]
    if close:
        head.append(b"Connection: close")
    return b"\r\n".join(head) + b"\r\n\r\n" + body


class LightEndpoints:
    """The answers of :data:`LIGHT_PATHS` for one broker (None: the app must answer)."""

    def __init__(self, service: BrokerService) -> None:
        self.service = service
        #: set once the app is served: every request goes to it from then on
        self.app_served = False
        self._registry: Any = None
        self._metrics: Any = None

    def serves(self) -> bool:
        """Whether light answers may be given: not once the app is served, nor while authentication is on
        (the app's middleware decides then; its ``authentication_of``, read here without starlette)."""
        authn = getattr(self.service, "authentication", None)
        return not self.app_served and (authn is None or not authn.enabled)

    async def answer(self, path: str) -> Answer | None:
        """``(status, content type, body)`` of ``GET path``, or None when the app must answer it."""
        running = self.service.running
        if path == READY_PATH:
            return 200, TEXT, b"ok" if running else b"stopping"
        if path == HEALTH_PATH:
            problems = storage_health.problems()
            if problems:
                return 503, TEXT, ("storage: " + "; ".join(problems)).encode()
            return 200, TEXT, b"ok" if running else b"stopping"
        if path == CLUSTERS_PATH:
            admin = await self._admin()
            names = await asyncio.to_thread(admin.clusters.list_clusters)  # a SQLite read: not on the loop
            return 200, JSON, json.dumps(names, ensure_ascii=False, separators=(",", ":")).encode()
        if path == METRICS_PATH:
            return await self._scrape()
        return None

    async def _admin(self) -> Any:
        """The broker's admin facade (its module loaded off the loop the first time)."""
        name = "magnetar.broker.resources.admin"
        module = await asyncio.get_running_loop().run_in_executor(None, importlib.import_module, name)
        return module.admin_for(self.service)

    async def _scrape(self) -> Answer:
        """/metrics from the registry the app would build (prometheus_client loaded off the loop once)."""
        if self._registry is None:
            admin = await self._admin()
            loop = asyncio.get_running_loop()
            metrics = await loop.run_in_executor(None, importlib.import_module, "magnetar.admin.metrics")
            self._metrics = metrics
            self._registry = metrics.build_registry(admin)
        return 200, self._metrics.CONTENT_TYPE.encode(), await self._metrics.scrape(self._registry)


class LightConnection(asyncio.Protocol):
    """One HTTP connection on the light server, until its first request the app must answer."""

    def __init__(self, endpoints: LightEndpoints, hand_off: HandOff, connections: set[LightConnection]) -> None:
        self.endpoints = endpoints
        self.hand_off = hand_off
        self.connections = connections
        self.transport: asyncio.Transport | None = None
        self._buffer = b""
        self._task: asyncio.Task[None] | None = None
        self._idle: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:  # noqa: D102 - asyncio's
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports are not its subclasses
        self.connections.add(self)
        self._arm_idle()

    def connection_lost(self, exc: Exception | None) -> None:  # noqa: D102 - asyncio's
        self.connections.discard(self)
        self._disarm_idle()
        if self._task is not None:
            self._task.cancel()

    def data_received(self, data: bytes) -> None:  # noqa: D102 - asyncio's
        self._buffer += data
        self._disarm_idle()
        if self._task is None:
            self._next()

    def close(self) -> None:
        """Close the connection (the server stops)."""
        if self.transport is not None:
            self.transport.close()

    def _arm_idle(self) -> None:
        self._idle = asyncio.get_running_loop().call_later(KEEP_ALIVE_SECONDS, self.close)

    def _disarm_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None

    def _next(self) -> None:
        """Answer the next whole request in the buffer, or hand the connection over."""
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buffer) > MAX_HEAD_BYTES:
                self._give_away()
            elif not self._buffer:
                self._arm_idle()
            return
        parsed = light_request(self._buffer[:end])
        if parsed is None or not self.endpoints.serves():
            self._give_away()
            return
        path, close = parsed
        self._task = asyncio.get_running_loop().create_task(self._answer(path, close, end + 4), name="http-light")

    async def _answer(self, path: str, close: bool, length: int) -> None:
        try:
            answer = await self.endpoints.answer(path)
        except Exception:  # the app answers what went wrong, as it always did
            answer = None
        self._task = None
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if answer is None:
            self._give_away()
            return
        self._buffer = self._buffer[length:]
        transport.write(response_bytes(*answer, close=close))
        if close:
            transport.close()
            return
        self._next()

    def _give_away(self) -> None:
        """The app takes the connection with every unanswered byte (reading paused until it is served)."""
        transport, self.transport = self.transport, None
        self.connections.discard(self)
        self._disarm_idle()
        if transport is None or transport.is_closing():
            return
        transport.pause_reading()
        self.hand_off(self, transport, self._buffer)


def light_request(head: bytes) -> tuple[str, bool] | None:
    """``(path, close after answering)`` of a request head (without its blank line) this module answers,
    None when the app must answer it."""
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or parts[0] != b"GET" or parts[2] not in (b"HTTP/1.1", b"HTTP/1.0"):
        return None
    path = parts[1].decode("latin-1")
    if path not in LIGHT_PATHS:
        return None
    connection = None
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep or name != name.strip():
            return None
        key = name.lower()
        if key in (b"content-length", b"transfer-encoding", b"upgrade", b"expect"):
            return None
        if key == b"connection":
            connection = value.strip().lower()
    if parts[2] == b"HTTP/1.0":
        return (path, True) if connection is None else None
    if connection in (None, b"keep-alive"):
        return path, False
    return (path, True) if connection == b"close" else None
