"""The HTTP side of the broker (FastAPI): pulsar-admin v2 REST API, HTTP lookup, health, /metrics.

Routes are thin: each calls a method of a resource of
:class:`magnetar.broker.resources.admin.BrokerAdmin`, which raises broker errors to refuse; the
handlers in :mod:`.errors` give each refusal its HTTP status and Pulsar's ``{"reason": "..."}`` body. Every route is ``async``: it runs on the
broker's own event loop, which owns all broker state.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from fastapi import FastAPI
from fastapi.responses import PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST

from magnetar import __version__
from magnetar.admin import (
    metrics,
    routes_clusters,
    routes_lookup,
    routes_namespaces,
    routes_schemas,
    routes_tenants,
    routes_topics,
)
from magnetar.admin.console import mount_console
from magnetar.admin.errors import install_error_handlers
from magnetar.broker.resources.admin import admin_for

if TYPE_CHECKING:
    from magnetar.broker.service import BrokerService


def create_app(service: BrokerService) -> FastAPI:
    """Build the HTTP application serving ``service``."""
    app = FastAPI(
        title="magnetar",
        description="magnetar broker HTTP API: Pulsar admin v2 REST API, HTTP lookup, health and metrics",
        version=__version__,
    )
    admin = admin_for(service)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass  # built outside the broker loop (pure routing tests): no background sampling
    else:
        admin.start()
    install_error_handlers(app)
    registry = metrics.build_registry(admin)

    @app.get("/admin/v2/brokers/health", response_class=PlainTextResponse, tags=["brokers"])
    async def health() -> str:
        """ok while the broker service is running."""
        return "ok" if service.running else "stopping"

    @app.get("/admin/v2/brokers/ready", response_class=PlainTextResponse, tags=["brokers"])
    async def ready() -> str:
        """ok once the broker accepts clients."""
        return "ok" if service.running else "stopping"

    @app.get("/metrics", response_class=Response, tags=["metrics"])
    async def prometheus_metrics() -> Response:
        """Prometheus text: pulsar_* topic metrics and magnetar_* process metrics."""
        return Response(metrics.render(registry), media_type=CONTENT_TYPE_LATEST)

    app.include_router(routes_clusters.router(admin))
    app.include_router(routes_tenants.router(admin))
    app.include_router(routes_namespaces.router(admin))
    app.include_router(routes_lookup.router(admin))
    app.include_router(routes_schemas.router(admin))
    for domain in ("persistent", "non-persistent"):
        app.include_router(routes_topics.router(admin, domain))
    mount_console(app, admin)
    return app
