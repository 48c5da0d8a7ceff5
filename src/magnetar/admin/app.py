"""The HTTP side of the broker (FastAPI): pulsar-admin v2 REST API, HTTP lookup, health, /metrics.

Every request is authenticated first when the broker's authentication is on (:mod:`.security`), and
every route declares who may call it (:mod:`.access`). Routes are thin: each calls a method of a resource of
:class:`magnetar.broker.resources.admin.BrokerAdmin`, which raises broker errors to refuse; the
handlers in :mod:`.errors` give each refusal its HTTP status and Pulsar's ``{"reason": "..."}`` body. Every route is ``async``: it runs on the
broker's own event loop, which owns all broker state.

:func:`create_app` builds every route; :func:`create_lazy_app` (a broker's start-up) builds the core
and leaves each group of routes to the first request that needs it (:mod:`.route_groups`).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST

from magnetar import __version__
from magnetar.admin import metrics
from magnetar.admin.access import AccessGuard
from magnetar.admin.chart_history import chart_history_for
from magnetar.admin.durability import DurableResponses
from magnetar.admin.errors import install_error_handlers
from magnetar.admin.route_groups import LazyRoutesApp, RouteGroups
from magnetar.admin.security import AuthenticationMiddleware
from magnetar.broker.resources.admin import admin_for
from magnetar.storage.health import storage_health

if TYPE_CHECKING:
    from magnetar.broker.service import BrokerService

#: Swagger UI's files, shipped with the console's (swagger-ui-dist, vendored): /docs works offline
SWAGGER_UI_ASSETS = "/console/static/vendor/swagger-ui"


def create_app(service: BrokerService) -> FastAPI:
    """Build the HTTP application serving ``service``, every route in it."""
    app, groups = create_core_app(service)
    groups.build_all()
    return app


def create_lazy_app(service: BrokerService) -> LazyRoutesApp:
    """The HTTP application serving ``service`` with its core routes built, and every other group of routes
    built when the first request under its paths comes (that request waits for it)."""
    app, groups = create_core_app(service)
    return LazyRoutesApp(app, groups)


def create_core_app(service: BrokerService) -> tuple[FastAPI, RouteGroups]:
    """The app with its error handlers, authentication, health, readiness and /metrics, and its route
    groups, none built yet."""
    app = FastAPI(
        title="magnetar",
        description="magnetar broker HTTP API: Pulsar admin v2 REST API, HTTP lookup, health and metrics",
        version=__version__,
        docs_url=None,  # served below, from the package instead of a CDN
        redoc_url=None,  # ReDoc loads its script from a CDN: /docs is the one OpenAPI page
    )
    admin = admin_for(service)
    #: the console charts' last ten minutes, sampled from the broker's start
    app.state.chart_history = history = chart_history_for(admin)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass  # built outside the broker loop (pure routing tests): no background sampling
    else:
        admin.start()
        history.start()
    install_error_handlers(app)
    access = AccessGuard(service)
    app.state.access = access
    app.add_middleware(AuthenticationMiddleware, service=service, authenticate_metrics=lambda: _authenticate_metrics(service))
    app.add_middleware(DurableResponses, service=service)
    registry = metrics.build_registry(admin, access)

    @app.get("/admin/v2/brokers/health", response_class=PlainTextResponse, tags=["brokers"], dependencies=[access.open()])
    async def health() -> Response:
        """ok while the broker service is running and its storage accepts writes; else 503 and what is wrong."""
        problems = storage_health.problems()
        if problems:
            return PlainTextResponse("storage: " + "; ".join(problems), status_code=503)
        return PlainTextResponse("ok" if service.running else "stopping")

    @app.get("/admin/v2/brokers/ready", response_class=PlainTextResponse, tags=["brokers"], dependencies=[access.open()])
    async def ready() -> str:
        """ok once the broker accepts clients."""
        return "ok" if service.running else "stopping"

    @app.get("/metrics", response_class=Response, tags=["metrics"], dependencies=[access.open()])
    async def prometheus_metrics() -> Response:
        """Prometheus text: pulsar_* topic metrics and magnetar_* process metrics."""
        return Response(await metrics.scrape(registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        """Swagger UI over /openapi.json, its script and style served by this broker."""
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title="magnetar - Swagger UI",
            swagger_js_url=f"{SWAGGER_UI_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{SWAGGER_UI_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{SWAGGER_UI_ASSETS}/favicon-32x32.png",
        )

    return app, RouteGroups(app, admin, access)


def _authenticate_metrics(service: BrokerService) -> bool:
    """Pulsar's ``authenticateMetricsEndpoint`` (default false): whether /metrics needs credentials."""
    authn = getattr(service, "authentication", None)
    settings = getattr(authn, "settings", None)
    return bool(
        getattr(settings, "authenticate_metrics_endpoint", False)
        or getattr(service.config, "authenticate_metrics_endpoint", False)
    )
