"""How this broker presents itself as a client: Pulsar's ``brokerClientAuthenticationPlugin`` /
``brokerClientAuthenticationParameters``, or a cluster's ``authenticationPlugin`` /
``authenticationParameters`` (ClusterData), turned into what CONNECT and HTTP requests carry.

The plugins are Pulsar's client plugins by their short or Java class names: token, basic and TLS.
Reading a ``file:`` token touches the disk: call :func:`client_credentials` off the event loop.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

_JAVA = "org.apache.pulsar.client.impl.auth."
_METHODS = {
    "token": "token",
    _JAVA + "authenticationtoken": "token",
    "basic": "basic",
    _JAVA + "authenticationbasic": "basic",
    "tls": "tls",
    _JAVA + "authenticationtls": "tls",
}


class CredentialsError(ValueError):
    """Authentication plugin settings that cannot be used."""


@dataclass(frozen=True)
class ClientCredentials:
    """What a broker sends to authenticate: CONNECT's method and data, HTTP headers, a TLS client certificate."""

    method: str = ""
    data: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    #: (certificate file, key file) for TLS client authentication
    certificate: tuple[str, str] | None = None

    @property
    def empty(self) -> bool:
        """Whether no credentials are presented at all."""
        return not self.method


def _params(text: str) -> dict[str, str]:
    """``key:value,key:value`` or a JSON object (the forms Pulsar's plugins accept)."""
    if text.lstrip().startswith("{"):
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise CredentialsError(f"authentication parameters are not JSON: {exc}") from None
        return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
    pairs = (item.partition(":") for item in text.split(",") if item)
    return {key.strip(): value.strip() for key, sep, value in pairs if sep}


def _token(params: str) -> str:
    """The token of the token plugin's parameters: ``token:...``, ``file:///path``, ``env:NAME``,
    ``{"token": "..."}`` or the token itself."""
    text = params.strip()
    if text.startswith("{"):
        return _params(text).get("token", "")
    if text.startswith("token:"):
        return text[len("token:"):]
    if text.startswith("env:"):
        name = text[len("env:"):]
        if name not in os.environ:
            raise CredentialsError(f"environment variable {name} is not set")
        return os.environ[name]
    if text.startswith("file:"):
        path = Path(unquote(urlparse(text).path))
        try:
            return path.read_text().strip()
        except OSError as exc:
            raise CredentialsError(f"cannot read token file {path}: {exc.strerror}") from None
    return text


def client_credentials(plugin: str | None, params: str | None) -> ClientCredentials:
    """The credentials a plugin name and its parameter string give (none for an empty name)."""
    if not plugin:
        return ClientCredentials()
    method = _METHODS.get(plugin.strip().lower())
    if method is None:
        raise CredentialsError(f"unknown authentication plugin {plugin!r} (token, basic and tls are available)")
    params = params or ""
    if method == "token":
        token = _token(params)
        return ClientCredentials("token", token.encode(), {"Authorization": f"Bearer {token}"})
    if method == "basic":
        values = _params(params)
        user = values.get("userId", values.get("username", ""))
        data = f"{user}:{values.get('password', '')}".encode()
        return ClientCredentials(values.get("method", "basic"), data,
                                 {"Authorization": "Basic " + base64.b64encode(data).decode()})
    values = _params(params)
    cert, key = values.get("tlsCertFile", ""), values.get("tlsKeyFile", "")
    if not cert or not key:
        raise CredentialsError("the tls plugin needs tlsCertFile and tlsKeyFile")
    return ClientCredentials("tls", b"", {}, (cert, key))
