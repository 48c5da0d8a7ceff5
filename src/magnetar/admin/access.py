"""Who may call which admin route: Pulsar's admin authorization as FastAPI dependencies.

Every route declares what it needs with one of these (``dependencies=[access.topic(...)]``);
:func:`unguarded_routes` lists any route that declares nothing, and a test keeps it empty. The
decisions are the broker's :class:`~magnetar.broker.security.AuthorizationService` (Pulsar's
``PulsarAuthorizationProvider``): superusers for clusters and tenants, tenant admins for what is
inside a tenant, and produce / consume grants for the topic operations Pulsar opens to them
(``TopicOperation``: stats and metadata with either, cursors and peeking with consume). A refusal
raises :class:`AccessDeniedError` (403 with Pulsar's wording); it is logged with the role (never
credentials) and counted for ``/metrics``.

Nothing is checked unless the broker has both authentication and authorization on, as in Pulsar.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastapi import Depends, FastAPI, Request
from fastapi.params import Depends as DependsMarker
from fastapi.routing import APIRoute

from magnetar.admin.security import authorization_of, is_open_path, request_role
from magnetar.broker.security import AuthorizationService, NamespaceOperation, TenantOperation, TopicOperation
from magnetar.protocol.topic_name import InvalidTopicNameError, TopicName

if TYPE_CHECKING:
    from magnetar.broker.service import BrokerService

log = logging.getLogger("magnetar.admin.security")

SUPER_USER_REFUSAL = "This operation requires super-user access"
TENANT_ADMIN_REFUSAL = "Don't have permission to administrate resources on this tenant"
#: the name every dependency of this module carries, so unguarded routes can be found
GUARD_ATTRIBUTE = "__magnetar_access__"

Check = Callable[[AuthorizationService, str | None, dict[str, Any]], str | None]


class AccessDeniedError(Exception):
    """The role may not do this: 403 with ``reason``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class AccessGuard:
    """The checks of one app's routes, over one broker service; counts the refusals."""

    def __init__(self, service: BrokerService) -> None:
        self.service = service
        #: refusals by operation name, for magnetar_authorization_refusals_total
        self.refusals: Counter[str] = Counter()

    def _dependency(self, operation: str, check: Check | None) -> Any:
        async def guard(request: Request) -> None:
            authz = authorization_of(self.service)
            if authz is None or check is None:
                return
            role = request_role(request)
            refusal = check(authz, role, dict(request.path_params))
            if refusal is not None:
                self.refusals[operation] += 1
                log.info("HTTP authorization refused: role=%s %s %s (%s)",
                         role, request.method, request.url.path, operation)
                raise AccessDeniedError(refusal)

        setattr(guard, GUARD_ATTRIBUTE, operation)
        return Depends(guard)

    # -- the requirements -----------------------------------------------------------------------
    def open(self) -> Any:
        """Any authenticated role (Pulsar: listing clusters)."""
        return self._dependency("OPEN", None)

    def super_user(self) -> Any:
        """Superusers only: clusters, tenants, broker-wide operations."""

        def check(authz: AuthorizationService, role: str | None, path: dict[str, Any]) -> str | None:
            return None if authz.allow_super_user_operation(role) else SUPER_USER_REFUSAL

        return self._dependency("SUPER_USER", check)

    def tenant(self, operation: TenantOperation) -> Any:
        """A tenant's admins (and superusers): what the ``{tenant}`` path parameter holds."""

        def check(authz: AuthorizationService, role: str | None, path: dict[str, Any]) -> str | None:
            return None if authz.allow_tenant_operation(path["tenant"], role, operation) else TENANT_ADMIN_REFUSAL

        return self._dependency(str(operation), check)

    def namespace(self, operation: NamespaceOperation) -> Any:
        """A namespace operation on ``{tenant}/{namespace}`` (or a topic's namespace)."""

        def check(authz: AuthorizationService, role: str | None, path: dict[str, Any]) -> str | None:
            ns = f"{path['tenant']}/{path['namespace']}"
            if authz.allow_namespace_operation(ns, role, operation):
                return None
            return f"Unauthorized to validateNamespaceOperation for operation [{operation}] on namespace [{ns}]"

        return self._dependency(str(operation), check)

    def namespace_policy(self, write: bool) -> Any:
        """Reading (or changing) a namespace's policies: tenant admins and superusers."""
        operation = "WRITE" if write else "READ"

        def check(authz: AuthorizationService, role: str | None, path: dict[str, Any]) -> str | None:
            ns = f"{path['tenant']}/{path['namespace']}"
            if authz.allow_namespace_policy_operation(ns, role):
                return None
            return f"Unauthorized to validateNamespacePolicyOperation for operation [{operation}] on namespace [{ns}]"

        return self._dependency(f"NAMESPACE_POLICY_{operation}", check)

    def topic(self, operation: TopicOperation, domain: str | None = None) -> Any:
        """A topic operation on the topic of the path (with its ``{subName}`` when there is one)."""

        def check(authz: AuthorizationService, role: str | None, path: dict[str, Any]) -> str | None:
            name = _topic_of(path, domain)
            if name is None:
                return None  # the route answers 412 for the malformed name
            if authz.allow_topic_operation(name, role, operation, path.get("subName")):
                return None
            return f"Unauthorized to validateTopicOperation for operation [{operation}] on topic [{name}]"

        return self._dependency(str(operation), check)

    def topic_policy(self, write: bool, domain: str | None = None) -> Any:
        """Reading (or changing) a topic's policies: tenant admins and superusers."""
        operation = "WRITE" if write else "READ"

        def check(authz: AuthorizationService, role: str | None, path: dict[str, Any]) -> str | None:
            name = _topic_of(path, domain)
            if name is None or authz.allow_topic_policy_operation(name, role):
                return None
            return f"Unauthorized to validateTopicPolicyOperation for operation [{operation}] on topic [{name}]"

        return self._dependency(f"TOPIC_POLICY_{operation}", check)


def _topic_of(path: dict[str, Any], domain: str | None) -> TopicName | None:
    """The topic a route's path names: ``{domain}`` from the path or the router."""
    kind = path.get("domain", domain or "persistent")
    try:
        return TopicName.parse(f"{kind}://{path['tenant']}/{path['namespace']}/{path['topic']}")
    except (InvalidTopicNameError, KeyError):
        return None


def unguarded_routes(app: FastAPI) -> list[str]:
    """``METHOD path`` of every API route outside the open paths that declares no access requirement."""
    out = []
    for route in app.routes:
        if not isinstance(route, APIRoute) or is_open_path(route.path):
            continue
        guards = [
            d for d in route.dependencies
            if isinstance(d, DependsMarker) and hasattr(d.dependency, GUARD_ATTRIBUTE)
        ]
        if not guards:
            out.extend(f"{m} {route.path}" for m in sorted(route.methods))
    return out
