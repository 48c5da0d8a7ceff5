"""Admin REST calls for the replication tests: (status, JSON body) of one request."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

NO_BODY = object()


def rest(base: str, method: str, path: str, body: Any = NO_BODY, token: str | None = None) -> tuple[int, Any]:
    """One admin request to ``base`` (http://host:port); the status and the decoded body (None if empty)."""
    headers = {"Accept": "application/json"}
    data = None
    if body is not NO_BODY:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            status, raw = answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    return status, (json.loads(raw) if raw else None)
