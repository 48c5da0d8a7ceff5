"""Only the HTTP layer turns broker refusals into statuses: each kind of refusal has one."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fastapi import FastAPI

from magnetar.admin.errors import (
    HttpError,
    broker_error_status,
    install_error_handlers,
    resource_error_status,
)
from magnetar.broker.errors import BrokerError
from magnetar.broker.resources import errors
from magnetar.protocol.enums import ServerError


def asgi_get(app: FastAPI, path: str) -> tuple[int, Any]:
    """GET ``path`` from the ASGI app in process: (status, JSON body)."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(), "query_string": b"",
             "headers": [], "http_version": "1.1", "scheme": "http", "server": ("test", 80), "root_path": ""}
    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(body)


def test_each_resource_error_has_its_status() -> None:
    expected = {
        errors.BadRequestError: 400,
        errors.NotFoundError: 404,
        errors.NotAllowedError: 405,
        errors.OutOfRangeError: 406,
        errors.ConflictError: 409,
        errors.PreconditionFailedError: 412,
        errors.InvalidChangeError: 422,
        errors.NotReadyError: 503,
    }
    for kind, status in expected.items():
        assert resource_error_status(kind("why")) == status, kind


def test_broker_errors_map_by_server_error_code() -> None:
    assert broker_error_status(BrokerError(ServerError.TopicNotFound, "x")) == 404
    assert broker_error_status(BrokerError(ServerError.ServiceNotReady, "x")) == 503
    assert broker_error_status(BrokerError(ServerError.UnknownError, "x")) == 412


def test_refusals_become_pulsar_reason_bodies() -> None:
    app = FastAPI()
    install_error_handlers(app)

    @app.get("/conflict")
    async def conflict() -> None:
        raise errors.ConflictError("Tenant already exists")

    @app.get("/broker")
    async def broker() -> None:
        raise BrokerError(ServerError.TopicNotFound, "Topic not found")

    @app.get("/http")
    async def http() -> None:
        raise HttpError(400, "Invalid request body")

    for path, status, reason in (
        ("/conflict", 409, "Tenant already exists"),
        ("/broker", 404, "Topic not found"),
        ("/http", 400, "Invalid request body"),
    ):
        assert asgi_get(app, path) == (status, {"reason": reason})
