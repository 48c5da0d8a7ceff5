"""Who sends an HTTP request: Pulsar's ``AuthenticationFilter`` as an ASGI middleware.

When the broker's authentication is on, every request except the open paths (health, readiness,
the OpenAPI document, the console's static pages, and ``/metrics`` unless
``authenticateMetricsEndpoint``) must prove a role
with ``Authorization: Bearer <token>``, ``Authorization: Basic <base64 user:password>``, a client
certificate on HTTPS, or fall back to ``anonymousUserRole``. A request that cannot gets 401 with
Pulsar's ``{"reason": ...}`` body and never reaches a route. The role is kept in the request
state (:func:`request_role`) for the authorization checks of :mod:`magnetar.admin.access`.

The client certificate comes from the ASGI TLS extension (``scope["extensions"]["tls"]
["client_cert_chain"]``, PEM, the client's certificate first) that the HTTPS server fills in.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from starlette.requests import Request

from magnetar.broker.security import AuthenticationError, AuthenticationService, AuthorizationService

if TYPE_CHECKING:
    from cryptography import x509

    from magnetar.broker.service import BrokerService

log = logging.getLogger("magnetar.admin.security")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: paths any client may call, as in Pulsar (which also leaves its health and static pages open)
OPEN_PATHS = frozenset({"/", "/admin/v2/brokers/health", "/admin/v2/brokers/ready", "/openapi.json", "/docs", "/redoc"})
#: the console's pages and assets: a browser loads them without credentials, the app then sends its own
OPEN_PREFIXES = ("/console/", "/console")
METRICS_PATH = "/metrics"
#: the header a client names its auth method with (Pulsar's ``X-Pulsar-Auth-Method-Name``)
AUTH_METHOD_HEADER = "x-pulsar-auth-method-name"
#: request-state keys
ROLE_KEY = "auth_role"
AUTHENTICATED_KEY = "authenticated"


def authentication_of(service: BrokerService) -> AuthenticationService | None:
    """The broker's authentication service when authentication is on, else None."""
    authn = getattr(service, "authentication", None)
    return authn if authn is not None and authn.enabled else None


def authorization_of(service: BrokerService) -> AuthorizationService | None:
    """The authorization service when Pulsar would check admin operations: authentication and
    authorization both on (``PulsarWebResource`` checks nothing otherwise)."""
    authz = getattr(service, "authorization", None)
    if authz is None or not authz.enabled or authentication_of(service) is None:
        return None
    return authz


def request_role(request: Request) -> str | None:
    """The role the request authenticated as (None when authentication is off)."""
    return request.scope.get("state", {}).get(ROLE_KEY)


def peer_certificate_of(scope: Scope) -> x509.Certificate | None:
    """The verified client certificate of an HTTPS request, or None."""
    from cryptography import x509  # only client certificates need it: 8.6 MB of RSS, 17 ms to import

    tls = (scope.get("extensions") or {}).get("tls") or {}
    chain = tls.get("client_cert_chain") or ()
    for pem in chain:
        try:
            data = pem.encode() if isinstance(pem, str) else bytes(pem)
            if data.lstrip().startswith(b"-----"):
                return x509.load_pem_x509_certificate(data)
            return x509.load_der_x509_certificate(data)
        except (ValueError, TypeError):
            return None
    return None


def is_open_path(path: str) -> bool:
    """Whether ``path`` is served without credentials (health, documentation, console pages)."""
    return path in OPEN_PATHS or path == OPEN_PREFIXES[1] or path.startswith(OPEN_PREFIXES[0])


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return value.decode("latin-1")
    return None


class AuthenticationMiddleware:
    """Authenticates every HTTP request (when the service's authentication is on) before routing."""

    def __init__(self, app: AsgiApp, service: BrokerService, authenticate_metrics: Callable[[], bool]) -> None:
        self.app = app
        self.service = service
        self.authenticate_metrics = authenticate_metrics

    def _open(self, path: str) -> bool:
        if is_open_path(path):
            return True
        return path == METRICS_PATH and not self.authenticate_metrics()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on with its role, or answer 401."""
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        authn = authentication_of(self.service)
        state = scope.setdefault("state", {})
        state[ROLE_KEY] = None
        state[AUTHENTICATED_KEY] = authn is None
        if authn is None or self._open(scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        authorization, method = _header(scope, b"authorization"), _header(scope, AUTH_METHOD_HEADER.encode())
        fetch = authn.pending_fetch_http(authorization, method)
        if fetch is not None:  # an OpenID issuer's keys, fetched off the loop
            await asyncio.get_running_loop().run_in_executor(None, fetch)
        try:
            role = authn.authenticate_http(authorization, peer_certificate_of(scope), method)
        except AuthenticationError as exc:
            log.info("HTTP authentication refused: %s %s: %s (%s)",
                     scope.get("method"), scope.get("path"), exc.message, exc.reason)
            await _unauthorized(send, f"Authentication required: {exc.message}")
            return
        state[ROLE_KEY] = role
        state[AUTHENTICATED_KEY] = True
        await self.app(scope, receive, send)


async def _unauthorized(send: Send, reason: str) -> None:
    body = json.dumps({"reason": reason}).encode()
    await send({
        "type": "http.response.start",
        "status": 401,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
    })
    await send({"type": "http.response.body", "body": body})
