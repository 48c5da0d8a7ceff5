"""The OAuth 2.0 client credentials flow of the OAuth2 authentication plugin (blocking HTTP).

As the official clients' ``ClientCredentialFlow``: the issuer's token endpoint is read from
``<issuer_url>/.well-known/openid-configuration``; the token is asked for with a form-encoded
POST (``grant_type=client_credentials``, ``client_id``, ``client_secret``, ``audience``,
``scope``); the answer's ``access_token`` and ``expires_in`` are kept. The client id and secret
come from the parameters or from ``private_key``, a JSON key file: a path, ``file:///path``,
``file:/path`` or ``data:application/json;base64,...``.

Everything here blocks: the plugin runs it in a worker thread when called from the event loop
(``Authentication.prepare``). Every failure is an :class:`AuthenticationError` (the official
clients' ``AuthenticationError`` on connecting) naming what went wrong, never the secret.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from magnetar.client.exceptions import AuthenticationError

if TYPE_CHECKING:
    import ssl
    import urllib.request

WELL_KNOWN_PATH = "/.well-known/openid-configuration"
#: seconds allowed for each HTTP request (the C++ client's default)
DEFAULT_TIMEOUT_SECONDS = 10.0
MAX_RESPONSE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class AccessToken:
    """A token the issuer gave, and when it was received (epoch seconds)."""

    token: str
    received_at: float
    #: lifetime in seconds from ``expires_in``; None when the issuer did not say
    expires_in: float | None

    @cached_property
    def expires_at(self) -> float | None:
        """When the token expires: its ``exp`` claim when it is a JWT (the time the broker checks,
        earlier than ``received_at + expires_in`` by the request's time and the issuer's rounding),
        else ``received_at + expires_in``; None when neither says."""
        exp = _jwt_exp(self.token)
        if exp is not None:
            return float(exp) if self.expires_in is None else min(float(exp), self.received_at + self.expires_in)
        return None if self.expires_in is None else self.received_at + self.expires_in

    def due(self, now: float) -> bool:
        """Whether to fetch a new token: less than a tenth of its lifetime (at most 60 s) is left."""
        expires_at = self.expires_at
        if expires_at is None:
            return False
        margin = min(60.0, max(0.0, expires_at - self.received_at) / 10)
        return now >= expires_at - margin


def _jwt_exp(token: str) -> float | None:
    """The ``exp`` claim of a token that is a JWT, read without checking it (only to time the
    renewal: the broker checks the token), or None."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, binascii.Error):
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return float(exp) if isinstance(exp, (int, float)) and not isinstance(exp, bool) else None


def _key_file_text(url: str) -> str:
    """The JSON text ``private_key`` names."""
    if url.startswith("data:"):
        header, comma, payload = url[len("data:"):].partition(",")
        if not comma or header != "application/json;base64":
            raise AuthenticationError("private_key: only data:application/json;base64,... URLs are supported")
        try:
            return base64.b64decode(payload, validate=True).decode()
        except (binascii.Error, ValueError):
            raise AuthenticationError("private_key: the data: URL's content is not base64 of JSON text") from None
    if url.startswith("file://"):
        path = url[len("file://"):]
    elif url.startswith("file:"):
        path = url[len("file:"):]
    elif ":" in url.split("/", 1)[0]:
        raise AuthenticationError(f"private_key: unsupported URL scheme {url.split(':', 1)[0][:32]!r}")
    else:
        path = url
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise AuthenticationError(f"private_key: cannot read {path[:200]}: {exc.strerror or exc}") from None


def client_credentials(params: dict[str, Any]) -> tuple[str, str]:
    """(client_id, client_secret) from the parameters or the key file ``private_key`` names."""
    url = params.get("private_key")
    if url is None:
        source: Any = params
    else:
        try:
            source = json.loads(_key_file_text(str(url)))
        except ValueError:
            raise AuthenticationError("private_key: the key file is not JSON") from None
    if not isinstance(source, dict) or not source.get("client_id") or not source.get("client_secret"):
        raise AuthenticationError("OAuth2 credentials need client_id and client_secret")
    return str(source["client_id"]), str(source["client_secret"])


class ClientCredentialsFlow:
    """Fetches access tokens from an issuer with a client's id and secret."""

    def __init__(self, params: dict[str, Any]) -> None:
        self.params = params
        self.issuer_url = str(params.get("issuer_url") or "")
        self.audience = params.get("audience")
        self.scope = params.get("scope")
        self.timeout = DEFAULT_TIMEOUT_SECONDS
        for name in ("request_timeout_seconds", "connect_timeout_seconds"):
            if str(params.get(name, "")).isdigit() and int(params[name]) > 0:
                self.timeout = float(params[name])
        self._context: ssl.SSLContext | None = None
        self._token_endpoint: str | None = None

    def _tls(self) -> ssl.SSLContext:
        # ssl and urllib (55 ms of import) are loaded by the first token request, not with magnetar.client
        import ssl

        if self._context is None:
            trust = self.params.get("tls_trust_certs_file_path")
            self._context = ssl.create_default_context(cafile=str(trust) if trust else None)
        return self._context

    def _http(self, request: urllib.request.Request, what: str) -> dict[str, Any]:
        import urllib.error
        import urllib.request

        context = self._tls() if request.full_url.lower().startswith("https://") else None
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=context) as response:  # noqa: S310
                body = response.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            raise AuthenticationError(f"{what}: HTTP {exc.code} from {request.full_url[:200]}") from None
        except (OSError, ValueError) as exc:
            raise AuthenticationError(f"{what}: {request.full_url[:200]}: {exc}") from None
        try:
            document = json.loads(body[:MAX_RESPONSE_BYTES])
        except ValueError:
            raise AuthenticationError(f"{what}: {request.full_url[:200]} did not answer JSON") from None
        if not isinstance(document, dict):
            raise AuthenticationError(f"{what}: {request.full_url[:200]} did not answer a JSON object")
        return document

    def token_endpoint(self) -> str:
        """The issuer's token endpoint (from its discovery document, read once)."""
        import urllib.request

        if self._token_endpoint is None:
            if not self.issuer_url.lower().startswith(("https://", "http://")):
                raise AuthenticationError(f"issuer_url {self.issuer_url[:200]!r} is not an http(s) URL")
            url = self.issuer_url.rstrip("/") + WELL_KNOWN_PATH
            document = self._http(urllib.request.Request(url, headers={"Accept": "application/json"}),
                                  "the issuer's well-known configuration")
            endpoint = document.get("token_endpoint")
            if not isinstance(endpoint, str) or not endpoint.lower().startswith(("https://", "http://")):
                raise AuthenticationError(f"the well-known configuration of {self.issuer_url[:200]} has no token_endpoint")
            self._token_endpoint = endpoint
        return self._token_endpoint

    def fetch(self) -> AccessToken:
        """A new access token."""
        import urllib.parse
        import urllib.request

        client_id, client_secret = client_credentials(self.params)
        form = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": client_secret}
        if self.audience:
            form["audience"] = str(self.audience)
        if self.scope:
            form["scope"] = str(self.scope)
        request = urllib.request.Request(
            self.token_endpoint(), data=urllib.parse.urlencode(form).encode(), method="POST",
            headers={"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"})
        document = self._http(request, "the OAuth2 token request")
        token = document.get("access_token")
        if not isinstance(token, str) or not token:
            raise AuthenticationError("the OAuth2 token endpoint's answer has no access_token")
        expires_in = document.get("expires_in")
        lifetime = float(expires_in) if isinstance(expires_in, (int, float)) and expires_in > 0 else None
        return AccessToken(token, time.time(), lifetime)
