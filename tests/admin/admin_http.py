"""A tiny HTTP client for the admin API tests (stdlib only)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

_NO_BODY = object()


@dataclass
class Reply:
    """Status, headers and body of one HTTP answer."""

    status: int
    body: bytes
    headers: dict[str, list[str]] = field(default_factory=dict)

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    @property
    def reason(self) -> str | None:
        try:
            data = self.json()
        except ValueError:
            return None
        return data.get("reason") if isinstance(data, dict) else None

    def header(self, name: str) -> str | None:
        for key, values in self.headers.items():
            if key.lower() == name.lower():
                return values[0]
        return None


class Http:
    """Requests to one base URL; never raises for HTTP error statuses."""

    def __init__(self, base: str, timeout: float = 10.0) -> None:
        self.base = base.rstrip("/")
        self.timeout = timeout

    def request(self, method: str, path: str, body: Any = _NO_BODY, raw: bytes | None = None,
                content_type: str = "application/json") -> Reply:
        data = None
        headers = {}
        if raw is not None:
            data = raw
            headers["Content-Type"] = content_type
        elif body is not _NO_BODY:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return Reply(resp.status, resp.read(), _headers(resp.headers))
        except urllib.error.HTTPError as exc:
            return Reply(exc.code, exc.read(), _headers(exc.headers))

    def get(self, path: str) -> Reply:
        return self.request("GET", path)

    def put(self, path: str, body: Any = _NO_BODY, **kw: Any) -> Reply:
        return self.request("PUT", path, body, **kw)

    def post(self, path: str, body: Any = _NO_BODY, **kw: Any) -> Reply:
        return self.request("POST", path, body, **kw)

    def delete(self, path: str) -> Reply:
        return self.request("DELETE", path)


def _headers(msg: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in msg.items():
        out.setdefault(key, []).append(value)
    return out
