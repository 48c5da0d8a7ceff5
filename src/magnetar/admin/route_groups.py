"""The admin API's route groups, each built when the first request under its path prefixes comes.

Building FastAPI routes costs: each route's dependencies, parameters and body models are analysed
and a pydantic validator made for each (about 190 routes). A broker serving HTTP needs none of that
to answer its first request, so :func:`magnetar.admin.app.create_lazy_app` builds the app's core
(error handlers, authentication, health, readiness, /metrics) and leaves the groups out:

- a request waits in :class:`LazyRoutesApp` until the groups whose prefixes hold its path are
  built (in a worker thread, so the broker's loop keeps serving), then goes to the app: a route
  is never missing, only later the first time;
- a path under no group's prefix (the OpenAPI pages, a path no route has) builds every group
  first, so it gets what the complete app would answer;
- routes go into the app's router as they are: FastAPI's ``include_router`` would build every
  route a second time (its effective context), on the first request that passes it;
- the disk reads FastAPI makes at a route's first request (its endpoint's source) are made with the
  group in the building thread (:func:`prepare_first_calls`), off the loop; once a group is in the app,
  :attr:`RouteGroups.on_built` runs (the standalone command collects and freezes its objects out of
  the garbage collector's generations then).

The app's routes keep the order of the complete app (core, then the groups in the order of
:data:`GROUP_PREFIXES`), whatever order the groups are built in.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, FastAPI
from starlette.routing import BaseRoute

from magnetar.admin import routes_brokers, routes_lookup, routes_schemas, routes_transactions

if TYPE_CHECKING:
    from magnetar.admin.access import AccessGuard
    from magnetar.broker.resources.admin import BrokerAdmin

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]

#: route group -> the path prefixes its routes live under (a prefix holds itself and what is below it)
GROUP_PREFIXES: dict[str, tuple[str, ...]] = {
    "clusters": ("/admin/v2/clusters",),
    "tenants": ("/admin/v2/tenants",),
    "namespaces": ("/admin/v2/namespaces",),
    "lookup": ("/lookup",),
    "schemas": ("/admin/v2/schemas",),
    "persistent": ("/admin/v2/persistent",),
    "non-persistent": ("/admin/v2/non-persistent",),
    "transactions": ("/admin/v3/transactions",),
    "brokers": ("/admin/v2/brokers",),
    "broker-stats": ("/admin/v2/broker-stats",),
    "console": ("/magnetar", "/topics", "/console"),
}
#: single paths a group answers beyond its prefixes
GROUP_PATHS = {"/": "console"}
#: paths of the core routes, in the app from the start
CORE_PATHS = frozenset({"/admin/v2/brokers/health", "/admin/v2/brokers/ready", "/metrics"})


def groups_for(path: str) -> tuple[str, ...]:
    """The groups whose routes may answer ``path``: none for a core path, every group for a path
    under no group's prefix."""
    if path in CORE_PATHS:
        return ()
    if path in GROUP_PATHS:
        return (GROUP_PATHS[path],)
    for name, prefixes in GROUP_PREFIXES.items():
        if any(path == prefix or path.startswith(prefix + "/") for prefix in prefixes):
            return (name,)
    return tuple(GROUP_PREFIXES)


def _topics(domain: str) -> Callable[[BrokerAdmin, AccessGuard], list[APIRouter]]:
    def build(admin: BrokerAdmin, access: AccessGuard) -> list[APIRouter]:
        # each group's modules load with its first request (python -X importtime, after the app): topics
        # 27 ms CPU, clusters 15, tenants 13, namespaces 17, the console 85-90 ms
        from magnetar.admin import routes_clusters, routes_topics

        return [routes_clusters.topic_replication_router(admin, access, domain), routes_topics.router(admin, access, domain)]

    return build


def _clusters(admin: BrokerAdmin, access: AccessGuard) -> list[APIRouter]:
    # with the group's first request: 15 ms CPU
    from magnetar.admin import routes_clusters

    return [routes_clusters.router(admin, access)]


def _tenants(admin: BrokerAdmin, access: AccessGuard) -> list[APIRouter]:
    # with the group's first request: 13 ms CPU
    from magnetar.admin import routes_tenants

    return [routes_tenants.router(admin, access)]


def _namespaces(admin: BrokerAdmin, access: AccessGuard) -> list[APIRouter]:
    # with the group's first request: 17 ms CPU (clusters: 15 ms)
    from magnetar.admin import routes_clusters, routes_namespaces

    return [routes_clusters.namespace_replication_router(admin, access), routes_namespaces.router(admin, access)]


def _lookup(admin: BrokerAdmin, access: AccessGuard) -> list[APIRouter]:
    return [routes_lookup.router(admin, access)]


def _schemas(admin: BrokerAdmin, access: AccessGuard) -> list[APIRouter]:
    return [routes_schemas.router(admin, access)]


def _transactions(admin: BrokerAdmin, access: AccessGuard) -> list[APIRouter]:
    return [routes_transactions.router(admin, access)]


def _brokers(admin: BrokerAdmin, access: AccessGuard) -> list[APIRouter]:
    return [routes_brokers.router(admin, access)]


def _broker_stats(admin: BrokerAdmin, access: AccessGuard) -> list[APIRouter]:
    # with the group's first request: 17 ms CPU (python -X importtime, after the app)
    from magnetar.admin import routes_broker_stats

    return [routes_broker_stats.router(admin, access)]


def _console(admin: BrokerAdmin, access: AccessGuard) -> list[APIRouter]:
    """The console's routes, then its pages (static files, the app shell, ``/``), as ``mount_console`` adds them."""
    # with the console's first request: 85-90 ms CPU
    from magnetar.admin.console.pages import add_console_pages
    from magnetar.admin.console.routes import router

    pages = APIRouter()
    add_console_pages(pages)  # type: ignore[arg-type] - it uses mount() and get(), which a router has too
    return [router(admin, access), pages]


#: how each group's routers are made (imports its modules; touches no app, so any thread may run it)
BUILDERS: dict[str, Callable[[BrokerAdmin, AccessGuard], list[APIRouter]]] = {
    "clusters": _clusters,
    "tenants": _tenants,
    "namespaces": _namespaces,
    "lookup": _lookup,
    "schemas": _schemas,
    "persistent": _topics("persistent"),
    "non-persistent": _topics("non-persistent"),
    "transactions": _transactions,
    "brokers": _brokers,
    "broker-stats": _broker_stats,
    "console": _console,
}


def prepare_first_calls(routers: list[APIRouter]) -> None:
    """Do now, in the calling thread, the disk work of each route's first request: FastAPI then notes
    where the endpoint is defined, for its error messages (``inspect.getsourcelines``, once per endpoint),
    which reads the endpoint's source file and, for a module not seen before, ``realpath``s every loaded
    module's file (``inspect.getmodule``). Once per source file here, both are cached for the loop's
    first calls, which are left the tokenizing of their own function (0.44 ms of CPU a route, 467 routes
    in 205 ms; doing it for every route here doubled the CPU of building every group, 0.21 s)."""
    endpoints: dict[str, Callable[..., Any]] = {}
    for router in routers:
        for route in router.routes:
            endpoint = getattr(route, "endpoint", None)
            code = getattr(endpoint, "__code__", None)
            if code is not None:
                endpoints.setdefault(code.co_filename, endpoint)
    for endpoint in endpoints.values():
        try:
            inspect.getsourcelines(endpoint)
        except (OSError, TypeError):  # no source (a frozen or generated module): FastAPI makes do too
            continue


class RouteGroups:
    """The route groups of one app: which are in it, and building the missing ones."""

    def __init__(self, app: FastAPI, admin: BrokerAdmin, access: AccessGuard) -> None:
        self.app = app
        self.admin = admin
        self.access = access
        #: called on the loop with a group's name once a group a request needed is built and in the app
        #: (each group once: a group is built once); its routes, fields and validators are all made by then
        self.on_built: Callable[[str], None] | None = None
        #: the app's routes before any group (FastAPI's own pages and the core routes)
        self._core: list[BaseRoute] = list(app.router.routes)
        #: routes of the groups built, by group
        self._routes: dict[str, list[BaseRoute]] = {}
        self._building: dict[str, asyncio.Future[None]] = {}
        # one group built at a time: FastAPI's route analysis is not safe in parallel threads (pydantic
        # warned of a field attribute in the wrong place when two groups were built at once)
        self._build_lock = threading.Lock()

    @property
    def complete(self) -> bool:
        """Whether every group is in the app."""
        return len(self._routes) == len(BUILDERS)

    @property
    def built(self) -> list[str]:
        """The groups in the app, in the app's order."""
        return [name for name in BUILDERS if name in self._routes]

    def attach(self, name: str, routers: list[APIRouter]) -> None:
        """Put a group's routes into the app, in their place; the OpenAPI schema is made afresh."""
        self._routes[name] = [route for router in routers for route in router.routes]
        routes = list(self._core)
        for group in self.built:
            routes.extend(self._routes[group])
        self.app.router.routes[:] = routes
        self.app.openapi_schema = None

    def build_all(self) -> None:
        """Build and attach every missing group now, in this thread (an app built outside any loop)."""
        for name in BUILDERS:
            if name not in self._routes:
                self.attach(name, self._routers(name))

    def _routers(self, name: str) -> list[APIRouter]:
        """The routers of group ``name``, made now (in any thread)."""
        with self._build_lock:
            routers = BUILDERS[name](self.admin, self.access)
            prepare_first_calls(routers)
            return routers

    async def ensure(self, path: str) -> None:
        """Return once the groups that may answer ``path`` are in the app (each built once, off the loop)."""
        missing = [name for name in groups_for(path) if name not in self._routes]
        if missing:
            await asyncio.gather(*(asyncio.shield(self._build_once(name)) for name in missing))

    def _build_once(self, name: str) -> asyncio.Future[None]:
        future = self._building.get(name)
        if future is None:
            future = self._building[name] = asyncio.ensure_future(self._build(name))
        return future

    async def _build(self, name: str) -> None:
        try:
            routers = await asyncio.get_running_loop().run_in_executor(None, self._routers, name)
        except BaseException:
            del self._building[name]  # the next request tries again
            raise
        self.attach(name, routers)  # on the loop: the app's routes change only here
        if self.on_built is not None:
            self.on_built(name)


class LazyRoutesApp:
    """The ASGI app to serve: each request waits until the groups that may answer it are built."""

    def __init__(self, app: FastAPI, groups: RouteGroups) -> None:
        self.app = app
        self.groups = groups

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Build what ``scope``'s path needs, then hand the request to the app."""
        if scope["type"] == "http" and not self.groups.complete:
            await self.groups.ensure(scope["path"])
        await self.app(scope, receive, send)
