"""Authentication plugins: what the client sends in CONNECT and answers to AUTH_CHALLENGE.

A plugin has a method name (``auth_method_name``, e.g. ``"token"``) and produces the bytes of
its credentials (``auth_data()``); when a broker challenges the client (AUTH_CHALLENGE, for
example to refresh an expiring token) the plugin's ``respond(challenge)`` gives the bytes of the
AUTH_RESPONSE. ``AuthenticationToken`` sends a fixed token, or asks a supplier each time
credentials are needed so a rotated token is picked up; ``AuthenticationBasic`` sends
``user:password``; ``AuthenticationTLS`` authenticates with the client certificate of the TLS
connection; ``AuthenticationOauth2`` sends a token it gets from an OAuth 2.0 issuer (client
credentials), fetched in a thread by ``prepare()``, which the client awaits before connecting. Each plugin also gives the HTTP headers of HTTP lookups (``http_headers()``) and the
client certificate it brings (``tls_certificate()``).

``Authentication(plugin_name, auth_params)`` is the official client's generic constructor: the
plugin is named as the C++ client names it (``tls``, ``token``, ``basic``, ``oauth2``) or by the Java class
name, and configured from its parameter string. A name magnetar does not know still constructs;
connecting with it fails with AuthenticationError.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from magnetar.client.api.arguments import InvalidArgument, check_type
from magnetar.client.api.oauth2 import AccessToken, ClientCredentialsFlow
from magnetar.client.exceptions import AuthenticationError, InvalidConfiguration

#: the challenge data a broker sends to ask for fresh credentials (as the Java broker)
REFRESH_AUTH_DATA = b"PulsarAuthRefresh"


class InvalidAuthParams(InvalidConfiguration, RuntimeError):
    """A plugin's parameter string cannot configure it: also the RuntimeError the official
    client raises there."""


class Authentication:
    """Base of authentication plugins; the default sends no credentials.

    Made with a plugin name and its parameter string (the official client's
    ``Authentication(dynamicLibPath, authParamsString)``), it is that plugin: see
    :func:`plugin_named`.
    """

    #: the name the broker knows the method by ("" for none)
    auth_method_name = ""
    #: the plugin a name-and-parameters construction chose (None for plugin classes)
    _plugin: Authentication | None = None

    def __init__(self, plugin_name: str | None = None, auth_params: str | None = None) -> None:
        if plugin_name is None and auth_params is None:
            return
        check_type(plugin_name, str, "dynamicLibPath")
        check_type(auth_params, str, "authParamsString")
        self._plugin = plugin_named(plugin_name, auth_params)  # type: ignore[arg-type]
        self.auth_method_name = self._plugin.auth_method_name

    def auth_data(self) -> bytes:
        """Credentials sent in CONNECT."""
        return self._plugin.auth_data() if self._plugin is not None else b""

    def respond(self, challenge: bytes) -> bytes:
        """Credentials sent in AUTH_RESPONSE to a broker's AUTH_CHALLENGE (fresh ones by default)."""
        return self._plugin.respond(challenge) if self._plugin is not None else self.auth_data()

    def http_headers(self) -> dict[str, str]:
        """Headers sent with HTTP lookups (none by default)."""
        return self._plugin.http_headers() if self._plugin is not None else {}

    def tls_certificate(self) -> tuple[str, str] | None:
        """(certificate file, private key file) the plugin presents on TLS connections, if any."""
        return self._plugin.tls_certificate() if self._plugin is not None else None

    async def prepare(self) -> None:
        """Get ready to give credentials without blocking the loop (the client awaits it before
        connecting): a plugin that fetches them over the network does it here, in a thread."""
        if self._plugin is not None:
            await self._plugin.prepare()


class AuthenticationToken(Authentication):
    """Token authentication (``auth_method_name`` "token").

    ``token`` is the token string, or a callable returning it (called for every CONNECT and
    every challenge, so a supplier reading a file or a secret store sees rotations), or a
    ``file:///path`` / ``file:/path`` URL naming a file holding the token.
    """

    auth_method_name = "token"

    def __init__(self, token: str | Callable[[], str]) -> None:
        if callable(token):
            self._supplier: Callable[[], str] = token
        elif isinstance(token, str):
            if token.startswith("file:"):
                path = Path(token[len("file://") :] if token.startswith("file://") else token[len("file:") :])
                self._supplier = lambda: path.read_text().strip()
            else:
                self._supplier = lambda: token
        else:
            raise InvalidArgument("Argument token is expected to be of type 'str' or a function returning 'str'")

    def token(self) -> str:
        """The current token."""
        try:
            value = self._supplier()
        except Exception as exc:  # the supplier is user code: report it as an authentication failure
            raise AuthenticationError(f"the token supplier failed: {exc!r}") from exc
        if not isinstance(value, str):
            raise AuthenticationError(f"the token supplier returned {type(value).__name__}, not str")
        return value

    def auth_data(self) -> bytes:
        return self.token().encode()

    def http_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token()}"}


class AuthenticationBasic(Authentication):
    """Basic authentication (``auth_method_name`` "basic", or ``method``): ``user:password`` in
    CONNECT, ``Authorization: Basic ...`` on HTTP lookups.

    Give ``username`` and ``password``, or ``auth_params_string`` as the official client takes
    it: ``{"username": "...", "password": "...", "method": "..."}`` (``userId`` as the Java
    client names it is taken for ``username``); the string, when given, decides alone.
    """

    def __init__(
        self,
        username: str | None = None,
        password: str | None = None,
        method: str = "basic",
        auth_params_string: str | None = None,
    ) -> None:
        if auth_params_string is not None:
            check_type(auth_params_string, str, "auth_params_string")
            username, password, method = _basic_params(auth_params_string)
        else:
            check_type(username, str, "username")
            check_type(password, str, "password")
            check_type(method, str, "method")
        self.auth_method_name = method
        self._data = f"{username}:{password}".encode()

    def auth_data(self) -> bytes:
        return self._data

    def http_headers(self) -> dict[str, str]:
        return {"Authorization": "Basic " + base64.b64encode(self._data).decode()}


def _basic_params(text: str) -> tuple[str, str, str]:
    """(username, password, method) from basic authentication's JSON parameters."""
    try:
        params = json.loads(text)
    except ValueError as exc:
        raise InvalidAuthParams(f"basic authentication parameters are not JSON: {exc}") from None
    if not isinstance(params, dict):
        raise InvalidAuthParams("basic authentication parameters must be a JSON object")
    username = params.get("username", params.get("userId"))
    if username is None:
        raise InvalidAuthParams("No username provided for basic provider")
    if "password" not in params:
        raise InvalidAuthParams("No password provided for basic provider")
    return str(username), str(params["password"]), str(params.get("method", "basic"))


class AuthenticationTLS(Authentication):
    """TLS authentication (``auth_method_name`` "tls"): the broker reads the role from the
    client certificate, which the client presents on its TLS connections."""

    auth_method_name = "tls"

    def __init__(self, certificate_path: str, private_key_path: str) -> None:
        check_type(certificate_path, str, "certificate_path")
        check_type(private_key_path, str, "private_key_path")
        self.certificate_path = certificate_path
        self.private_key_path = private_key_path

    def tls_certificate(self) -> tuple[str, str] | None:
        return self.certificate_path, self.private_key_path


class AuthenticationOauth2(Authentication):
    """OAuth 2.0 client credentials (``auth_method_name`` "token"), as the official client's
    ``AuthenticationOauth2(auth_params_string)``.

    ``auth_params_string`` is a JSON object: ``issuer_url`` (required), ``private_key`` (a JSON
    key file with ``client_id`` and ``client_secret``: a path, ``file:`` or
    ``data:application/json;base64,`` URL) or ``client_id`` and ``client_secret`` themselves,
    ``audience``, ``scope``. The access token is fetched from the issuer's token endpoint when
    first needed and fetched again before it expires (when a tenth of its lifetime, at most 60 s,
    is left) or when the broker challenges an expired one. A failure to get one is an
    AuthenticationError when connecting.
    """

    auth_method_name = "token"

    def __init__(self, auth_params_string: str) -> None:
        check_type(auth_params_string, str, "auth_params_string")
        try:
            params = json.loads(auth_params_string)
        except ValueError as exc:
            raise InvalidAuthParams(f"OAuth2 authentication parameters are not JSON: {exc}") from None
        if not isinstance(params, dict):
            raise InvalidAuthParams("OAuth2 authentication parameters must be a JSON object")
        self._flow = ClientCredentialsFlow(params)
        self._token: AccessToken | None = None
        self._lock = threading.Lock()

    def _current(self, force: bool = False) -> str:
        """The cached token, fetched first when there is none, it is due, or ``force`` (blocking)."""
        with self._lock:
            token = self._token
            if force or token is None or token.due(time.time()):
                token = self._token = self._flow.fetch()
            return token.token

    def _ready(self) -> bool:
        token = self._token
        return token is not None and not token.due(time.time())

    async def prepare(self) -> None:
        """Fetch a token in a worker thread unless a fresh one is cached."""
        if not self._ready():
            await asyncio.to_thread(self._current)

    def auth_data(self) -> bytes:
        return self._current().encode()

    def respond(self, challenge: bytes) -> bytes:
        """A token for the broker's challenge: a new one when the cached one has no known lifetime."""
        token = self._token
        return self._current(force=token is not None and token.expires_at is None).encode()

    def http_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._current()}"}


class UnknownAuthentication(Authentication):
    """A plugin name magnetar does not know: constructs, but every use of its credentials fails
    with AuthenticationError (as the official client fails a plugin it cannot load)."""

    def __init__(self, plugin_name: str) -> None:
        self.plugin_name = plugin_name
        self.auth_method_name = plugin_name

    def _refuse(self) -> AuthenticationError:
        return AuthenticationError(
            f"no authentication plugin {self.plugin_name!r}: magnetar.client has tls, token, basic and oauth2"
            " (or their Java class names org.apache.pulsar.client.impl.auth.AuthenticationTls, ...)"
        )

    def auth_data(self) -> bytes:
        raise self._refuse()

    def respond(self, challenge: bytes) -> bytes:
        raise self._refuse()

    def http_headers(self) -> dict[str, str]:
        raise self._refuse()


def _default_format(text: str) -> dict[str, str]:
    """``key:value,key:value`` parameters (the C++ client's default format), or a JSON object."""
    if text.lstrip().startswith("{"):
        try:
            params = json.loads(text)
        except ValueError as exc:
            raise InvalidAuthParams(f"authentication parameters are not JSON: {exc}") from None
        return {str(k): str(v) for k, v in params.items()} if isinstance(params, dict) else {}
    pairs = (item.partition(":") for item in text.split(",") if item)
    return {key.strip(): value.strip() for key, sep, value in pairs if sep}


def _tls_plugin(params: str) -> Authentication:
    values = _default_format(params)
    return AuthenticationTLS(values.get("tlsCertFile", ""), values.get("tlsKeyFile", ""))


def _token_plugin(params: str) -> Authentication:
    if params.startswith("token:"):
        return AuthenticationToken(params[len("token:") :])
    if params.startswith("env:"):
        name = params[len("env:") :]

        def from_environment() -> str:
            if name not in os.environ:
                raise KeyError(f"environment variable {name} is not set")
            return os.environ[name]

        return AuthenticationToken(from_environment)
    return AuthenticationToken(params)  # a file: URL, or the token itself


_JAVA_PACKAGE = "org.apache.pulsar.client.impl.auth."
#: plugin names (lower case) -> the plugin built from its parameter string
_PLUGINS: dict[str, Callable[[str], Authentication]] = {
    "tls": _tls_plugin,
    _JAVA_PACKAGE.lower() + "authenticationtls": _tls_plugin,
    "token": _token_plugin,
    _JAVA_PACKAGE.lower() + "authenticationtoken": _token_plugin,
    "basic": lambda params: AuthenticationBasic(auth_params_string=params),
    _JAVA_PACKAGE.lower() + "authenticationbasic": lambda params: AuthenticationBasic(auth_params_string=params),
    "oauth2": AuthenticationOauth2,
    _JAVA_PACKAGE.lower() + "oauth2.authenticationoauth2": AuthenticationOauth2,
}


def plugin_named(plugin_name: str, auth_params: str) -> Authentication:
    """The plugin ``plugin_name`` (``tls``, ``token``, ``basic``, ``oauth2`` or its Java class name, any case)
    configured by ``auth_params``; an :class:`UnknownAuthentication` for any other name."""
    make = _PLUGINS.get(plugin_name.lower())
    return make(auth_params) if make is not None else UnknownAuthentication(plugin_name)


__all__ = [
    "REFRESH_AUTH_DATA", "Authentication", "AuthenticationBasic", "AuthenticationOauth2", "AuthenticationTLS",
    "AuthenticationToken",
    "InvalidAuthParams", "UnknownAuthentication", "plugin_named",
]
