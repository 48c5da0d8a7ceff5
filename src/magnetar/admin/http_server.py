"""The admin HTTP app served by uvicorn on the caller's running loop (the broker's loop)."""

from __future__ import annotations

import asyncio
import contextlib
import socket

import uvicorn
from fastapi import FastAPI


class HttpServer:
    """uvicorn serving one app on ``bind:port`` (0: a free port) inside the running loop."""

    def __init__(self, app: FastAPI, bind: str, port: int) -> None:
        self.app = app
        self.bind = bind
        self.port = port
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        """Bind and serve; returns once uvicorn accepts connections."""
        sock = socket.socket(socket.AF_INET6 if ":" in self.bind else socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.bind, self.port))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off", loop="none")
        server = uvicorn.Server(config)
        # the process's owner (the standalone command) handles signals, not uvicorn
        server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
        self._server = server
        self._task = asyncio.create_task(server.serve(sockets=[sock]), name="http")
        while not server.started:
            if self._task.done():
                self._task.result()
            await asyncio.sleep(0.005)

    async def stop(self) -> None:
        """Ask uvicorn to exit and wait for it (at most 5 s)."""
        if self._server is None:
            return
        self._server.should_exit = True
        if self._task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, 5)
