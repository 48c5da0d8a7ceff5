"""Error bodies as Pulsar sends them: ``{"reason": "..."}`` with the right status, never a 500 for
a caller's mistake.

The broker refuses with its own errors (:mod:`magnetar.broker.resources.errors` for admin
operations, :class:`~magnetar.broker.errors.BrokerError` with a ServerError code from the
broker core); this module alone decides which HTTP status each one gets.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from magnetar.admin.access import AccessDeniedError
from magnetar.broker.errors import BrokerError
from magnetar.broker.resources.errors import (
    BadRequestError,
    ConflictError,
    ForbiddenError,
    InvalidChangeError,
    NotAllowedError,
    NotFoundError,
    NotReadyError,
    OutOfRangeError,
    PreconditionFailedError,
    ResourceError,
)
from magnetar.broker.security import AuthenticationError, AuthorizationError
from magnetar.protocol.enums import ServerError

log = logging.getLogger("magnetar.admin")


class HttpError(Exception):
    """A refusal decided by the HTTP layer itself (a malformed path or body): status and reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason

    def __repr__(self) -> str:
        return f"HttpError({self.status}, {self.reason!r})"


_RESOURCE_ERROR_STATUS: dict[type[ResourceError], int] = {
    BadRequestError: 400,
    ForbiddenError: 403,
    NotFoundError: 404,
    NotAllowedError: 405,
    OutOfRangeError: 406,
    ConflictError: 409,
    PreconditionFailedError: 412,
    InvalidChangeError: 422,
    NotReadyError: 503,
}

_BROKER_ERROR_STATUS = {
    ServerError.TopicNotFound: 404,
    ServerError.SubscriptionNotFound: 404,
    ServerError.NotAllowedError: 405,
    ServerError.InvalidTopicName: 412,
    ServerError.ConsumerBusy: 412,
    ServerError.ProducerBusy: 412,
    ServerError.ServiceNotReady: 503,
    ServerError.PersistenceError: 500,
    ServerError.MetadataError: 500,
}


def resource_error_status(exc: ResourceError) -> int:
    """The HTTP status of a refused admin operation."""
    for kind in type(exc).__mro__:
        status = _RESOURCE_ERROR_STATUS.get(kind)  # type: ignore[call-overload]
        if status is not None:
            return status
    return 500


def broker_error_status(exc: BrokerError) -> int:
    """The HTTP status of a refusal of the broker core (by its ServerError code)."""
    return _BROKER_ERROR_STATUS.get(exc.code, 412)


def reason(status: int, text: str) -> JSONResponse:
    """An error response with Pulsar's body."""
    return JSONResponse({"reason": text}, status_code=status)


def _describe(errors: list[dict]) -> tuple[bool, str]:
    """Whether the problem is in the request body, and a one-line description."""
    in_body = False
    parts = []
    for err in errors[:3]:
        loc = [str(x) for x in err.get("loc", ())]
        if loc and loc[0] == "body":
            in_body = True
        kind = err.get("type", "")
        where = ".".join(loc[1:]) if len(loc) > 1 else (loc[0] if loc else "request")
        if kind == "json_invalid":
            parts.append("malformed JSON")
        elif kind == "missing" and loc and loc[0] == "body" and len(loc) == 1:
            parts.append("request body is required")
        else:
            parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return in_body, "; ".join(parts)


def install_error_handlers(app: FastAPI) -> None:
    """Map broker refusals, HTTP refusals, validation errors, unknown routes and bugs to ``{"reason": ...}``."""

    @app.exception_handler(HttpError)
    async def _http_refusal(request: Request, exc: HttpError) -> JSONResponse:
        return reason(exc.status, exc.reason)

    @app.exception_handler(AccessDeniedError)
    async def _access_denied(request: Request, exc: AccessDeniedError) -> JSONResponse:
        return reason(403, exc.reason)

    @app.exception_handler(AuthorizationError)
    async def _authorization_error(request: Request, exc: AuthorizationError) -> JSONResponse:
        return reason(403, exc.message)

    @app.exception_handler(AuthenticationError)
    async def _authentication_error(request: Request, exc: AuthenticationError) -> JSONResponse:
        return reason(401, f"Authentication required: {exc.message}")

    @app.exception_handler(ResourceError)
    async def _resource_error(request: Request, exc: ResourceError) -> JSONResponse:
        return reason(resource_error_status(exc), exc.reason)

    @app.exception_handler(BrokerError)
    async def _broker_error(request: Request, exc: BrokerError) -> JSONResponse:
        return reason(broker_error_status(exc), exc.message)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        in_body, text = _describe(list(exc.errors()))
        if in_body:
            return reason(400, f"Invalid request body: {text}")
        return reason(412, f"Invalid parameter: {text}")

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        text = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        return JSONResponse({"reason": text}, status_code=exc.status_code, headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _bug(request: Request, exc: Exception) -> JSONResponse:
        log.exception("admin request %s %s failed", request.method, request.url.path)
        return reason(500, f"Internal error: {type(exc).__name__}: {exc}")
