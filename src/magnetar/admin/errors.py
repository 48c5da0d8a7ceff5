"""Error bodies as Pulsar sends them: ``{"reason": "..."}`` with the right status, never a 500 for
a caller's mistake."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from magnetar.broker.admin import AdminError, from_broker_error
from magnetar.broker.errors import BrokerError

log = logging.getLogger("magnetar.admin")


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
    """Map admin errors, validation errors, unknown routes and bugs to ``{"reason": ...}``."""

    @app.exception_handler(AdminError)
    async def _admin_error(request: Request, exc: AdminError) -> JSONResponse:
        return reason(exc.status, exc.reason)

    @app.exception_handler(BrokerError)
    async def _broker_error(request: Request, exc: BrokerError) -> JSONResponse:
        err = from_broker_error(exc)
        return reason(err.status, err.reason)

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
