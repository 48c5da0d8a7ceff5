"""Run a broker service around an async test body: started on a data directory with fsync off,
stopped whatever the body does."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from magnetar.broker.config import BrokerConfig
from magnetar.broker.service import BrokerService


def run_service(data_dir: Path, body: Callable[[BrokerService], Awaitable[None]], **settings: object) -> None:
    """Start a BrokerService on ``data_dir`` (fsync off, ``settings`` as BrokerConfig fields), run
    ``body`` with it on a fresh event loop, and stop it."""

    async def main() -> None:
        service = BrokerService(BrokerConfig(data_dir=data_dir, fsync="never", **settings))  # type: ignore[arg-type]
        await service.start()
        try:
            await body(service)
        finally:
            await service.stop()

    asyncio.run(main())
