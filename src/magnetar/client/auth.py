"""Authentication plugins: what the client sends in CONNECT and answers to AUTH_CHALLENGE.

A plugin has a method name (``auth_method_name``, e.g. ``"token"``) and produces the bytes of
its credentials (``auth_data()``); when a broker challenges the client (AUTH_CHALLENGE, for
example to refresh an expiring token) the plugin's ``respond(challenge)`` gives the bytes of the
AUTH_RESPONSE. ``AuthenticationToken`` sends a fixed token, or asks a supplier each time
credentials are needed so a rotated token is picked up; ``AuthenticationBasic`` sends
``user:password``; ``AuthenticationTLS`` authenticates with the client certificate of the TLS
connection.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from magnetar.client.errors import AuthenticationError, InvalidConfiguration

#: the challenge data a broker sends to ask for fresh credentials (as the Java broker)
REFRESH_AUTH_DATA = b"PulsarAuthRefresh"


class Authentication:
    """Base of authentication plugins; the default sends no credentials."""

    #: the name the broker knows the method by ("" for none)
    auth_method_name = ""

    def auth_data(self) -> bytes:
        """Credentials sent in CONNECT."""
        return b""

    def respond(self, challenge: bytes) -> bytes:
        """Credentials sent in AUTH_RESPONSE to a broker's AUTH_CHALLENGE (fresh ones by default)."""
        return self.auth_data()


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
            raise TypeError(f"token must be a str or a callable returning one, not {type(token).__name__}")

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


class AuthenticationBasic(Authentication):
    """Basic authentication (``auth_method_name`` "basic"): ``user:password`` in CONNECT.

    Give ``username`` and ``password``, or ``auth_params_string`` as the official client takes
    it: ``{"userId": "...", "password": "..."}``.
    """

    def __init__(
        self,
        username: str | None = None,
        password: str | None = None,
        method: str = "basic",
        auth_params_string: str | None = None,
    ) -> None:
        if auth_params_string is not None:
            try:
                params = json.loads(auth_params_string)
                username, password = params["userId"], params["password"]
            except (ValueError, KeyError, TypeError) as exc:
                raise InvalidConfiguration(f"auth_params_string must be JSON with userId and password: {exc}") from None
        if not isinstance(username, str) or not isinstance(password, str):
            raise InvalidConfiguration("AuthenticationBasic needs a username and a password")
        self.auth_method_name = method
        self._data = f"{username}:{password}".encode()

    def auth_data(self) -> bytes:
        return self._data


class AuthenticationTLS(Authentication):
    """TLS authentication (``auth_method_name`` "tls"): the broker reads the role from the
    client certificate, which the client presents on its TLS connections."""

    auth_method_name = "tls"

    def __init__(self, certificate_path: str, private_key_path: str) -> None:
        self.certificate_path = certificate_path
        self.private_key_path = private_key_path


__all__ = ["REFRESH_AUTH_DATA", "Authentication", "AuthenticationBasic", "AuthenticationTLS", "AuthenticationToken"]
