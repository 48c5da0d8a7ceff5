"""The HTTP side of the broker (FastAPI): health and readiness for now.

Routes are thin: each calls a method or reads a property of the broker service.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import FastAPI
from fastapi.responses import PlainTextResponse

if TYPE_CHECKING:
    from magnetar.broker.service import BrokerService


def create_app(service: BrokerService) -> FastAPI:
    """Build the HTTP application serving ``service``."""
    app = FastAPI(title="magnetar", description="magnetar broker HTTP API", version="0.1.0")

    @app.get("/admin/v2/brokers/health", response_class=PlainTextResponse)
    async def health() -> str:
        """ok while the broker service is running."""
        return "ok" if service.running else "stopping"

    @app.get("/admin/v2/brokers/ready", response_class=PlainTextResponse)
    async def ready() -> str:
        """ok once the broker accepts clients."""
        return "ok" if service.running else "stopping"

    return app
