"""The admin HTTP server: uvicorn on the broker's loop, ticking once a second, stopping at once."""

from __future__ import annotations

import asyncio
import http.client
import time
from typing import Any

from magnetar.admin.http_server import HttpServer


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"ok"})


def _get(port: int) -> tuple[int, str | None, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/")
        response = conn.getresponse()
        return response.status, response.getheader("date"), response.read()
    finally:
        conn.close()


def test_ticks_once_a_second_serves_with_a_date_and_stops_at_once() -> None:
    async def run() -> tuple[int, tuple[int, str | None, bytes], float]:
        server = HttpServer(_app, "127.0.0.1", 0)
        await server.start()
        ticks = 0
        tick = server._server.on_tick  # noqa: SLF001

        async def counted(counter: int) -> bool:
            nonlocal ticks
            ticks += 1
            return await tick(counter)

        server._server.on_tick = counted  # type: ignore[method-assign]  # noqa: SLF001
        answer = await asyncio.to_thread(_get, server.port)
        await asyncio.sleep(2.1)
        started = time.monotonic()
        await server.stop()
        return ticks, answer, time.monotonic() - started

    ticks, (status, date, body), stop_s = asyncio.run(run())
    assert (status, body) == (200, b"ok")
    assert date is not None and date.endswith(" GMT")
    assert 1 <= ticks <= 4  # ten a second before (about 21 in this time)
    assert stop_s < 0.5  # the exit ends the tick's wait
