"""HTTP requests to a broker's admin REST API, with the standard library."""

from __future__ import annotations

import http.client
import json
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

DEFAULT_ADMIN_URL = "http://localhost:8080"
_NO_BODY = object()


class AdminCliError(Exception):
    """A request that failed: refused by the broker, or the broker could not be reached."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass
class RawReply:
    """An answer whose body is not JSON (peeked messages)."""

    body: bytes
    headers: dict[str, str]


class AdminClient:
    """Requests to the admin REST API of one broker, with its credentials and TLS settings."""

    def __init__(
        self,
        base_url: str,
        timeout: float = 30.0,
        authorization: str | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        #: the ``Authorization`` header of every request (``Bearer ...`` / ``Basic ...``), or None
        self.authorization = authorization
        #: the TLS context of https:// URLs (trusted CAs, hostname check, client certificate)
        self.ssl_context = ssl_context

    def request(self, method: str, path: str, body: Any = _NO_BODY, raw: bool = False) -> Any:
        """Send one request; the answer's JSON (or text, or a RawReply with ``raw``)."""
        data = None
        headers = {"Accept": "application/json"}
        if self.authorization:
            headers["Authorization"] = self.authorization
        if body is not _NO_BODY:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        url = self.base_url + path
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout, context=self._context()) as resp:
                payload = resp.read()
                if raw:
                    return RawReply(payload, {k: v for k, v in resp.headers.items()})
                if not payload:
                    return None
                try:
                    return json.loads(payload)
                except ValueError:
                    return payload.decode(errors="replace")
        except urllib.error.HTTPError as exc:
            raise AdminCliError(_describe_http_error(exc)) from None
        except urllib.error.URLError as exc:
            reason = exc.reason.strerror if isinstance(exc.reason, OSError) and exc.reason.strerror else exc.reason
            raise AdminCliError(f"cannot reach {self.base_url}: {reason}") from None
        except TimeoutError:
            raise AdminCliError(f"no answer from {self.base_url} within {self.timeout:.0f} s") from None
        except (http.client.HTTPException, ConnectionError) as exc:
            raise AdminCliError(f"broken answer from {self.base_url}: {exc}") from None

    def _context(self) -> ssl.SSLContext | None:
        return self.ssl_context if self.base_url.startswith("https:") else None

    def get(self, path: str, raw: bool = False) -> Any:
        """GET ``path``."""
        return self.request("GET", path, raw=raw)

    def put(self, path: str, body: Any = _NO_BODY) -> Any:
        """PUT ``path`` with a JSON body (none when not given)."""
        return self.request("PUT", path, body)

    def post(self, path: str, body: Any = _NO_BODY) -> Any:
        """POST ``path`` with a JSON body (none when not given)."""
        return self.request("POST", path, body)

    def delete(self, path: str) -> Any:
        """DELETE ``path``."""
        return self.request("DELETE", path)


def _describe_http_error(exc: urllib.error.HTTPError) -> str:
    try:
        phrase = HTTPStatus(exc.code).phrase
    except ValueError:
        phrase = "Error"
    text = ""
    try:
        body = exc.read()
        data = json.loads(body) if body else None
        if isinstance(data, dict) and data.get("reason"):
            text = str(data["reason"])
        elif body:
            text = body.decode(errors="replace")
    except (ValueError, OSError):
        pass
    text = " ".join(text.split())
    return f"{exc.code} {phrase}: {text}" if text else f"{exc.code} {phrase}"
