"""HTTP requests to a broker's admin REST API: http:// over a plain socket
(:mod:`magnetar.cli.admin.plain_http`), https:// with the standard library's ``http.client`` and
``ssl`` (every ``magnetar admin`` command pays for its imports, and a plain one needs neither)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from magnetar.cli.admin.plain_http import BrokenAnswer, connect, exchange

if TYPE_CHECKING:
    import ssl

DEFAULT_ADMIN_URL = "http://localhost:8080"
_NO_BODY = object()
_REDIRECTS = (301, 302, 303, 307, 308)
_MAX_REDIRECTS = 5


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
        #: whether a request that changes something (PUT, POST, DELETE) was answered with success
        self.changed = False

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
        for _ in range(_MAX_REDIRECTS + 1):
            status, reply_headers, payload = self._exchange(method, url, data, headers)
            if status in _REDIRECTS and reply_headers.get("location"):
                url = urljoin(url, reply_headers["location"])
                continue
            break
        if status >= 400:
            raise AdminCliError(_describe_http_error(status, payload))
        if method != "GET":
            self.changed = True
        if raw:
            return RawReply(payload, reply_headers)
        if not payload:
            return None
        try:
            return json.loads(payload)
        except ValueError:
            return payload.decode(errors="replace")

    def _exchange(
        self, method: str, url: str, data: bytes | None, headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        """One HTTP exchange: (status, headers with lower-case names, body)."""
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            if parts.scheme == "https":
                return self._exchange_tls(parts.hostname or "", parts.port, method, target, data, headers)
            return exchange(parts.hostname or "", parts.port or 80, method, target, data, headers, self.timeout)
        except TimeoutError:
            raise AdminCliError(f"no answer from {self.base_url} within {self.timeout:.0f} s") from None
        except (BrokenAnswer, ConnectionResetError, ConnectionAbortedError) as exc:
            raise AdminCliError(f"broken answer from {self.base_url}: {exc}") from None
        except OSError as exc:
            raise AdminCliError(f"cannot reach {self.base_url}: {exc.strerror or exc}") from None

    def _exchange_tls(
        self, host: str, port: int | None, method: str, target: str, data: bytes | None, headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        """One exchange over TLS, with ``http.client``."""
        # http.client (with email and ssl): 20-30 ms CPU, for https:// only
        import http.client

        conn = http.client.HTTPSConnection(host, port, timeout=self.timeout, context=self.ssl_context)
        conn._create_connection = connect  # type: ignore[attr-defined]
        try:
            conn.request(method, target, body=data, headers=headers)
            resp = conn.getresponse()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
        except http.client.HTTPException as exc:
            raise BrokenAnswer(str(exc) or type(exc).__name__) from None
        finally:
            conn.close()

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


def _describe_http_error(status: int, body: bytes) -> str:
    # the HTTPStatus enum (its 60-odd members built at import): 2-5 ms CPU, for a refused request only
    from http import HTTPStatus

    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Error"
    text = ""
    try:
        data = json.loads(body) if body else None
        if isinstance(data, dict) and data.get("reason"):
            text = str(data["reason"])
        elif body:
            text = body.decode(errors="replace")
    except ValueError:
        text = body.decode(errors="replace")
    text = " ".join(text.split())
    return f"{status} {phrase}: {text}" if text else f"{status} {phrase}"
