"""Authentication plugins: what the client sends in CONNECT and answers to AUTH_CHALLENGE.

A plugin has a method name (``auth_method_name``, e.g. ``"token"``) and produces the bytes of
its credentials (``auth_data()``); when a broker challenges the client (AUTH_CHALLENGE, for
example to refresh an expiring token) the plugin's ``respond(challenge)`` gives the bytes of the
AUTH_RESPONSE. ``AuthenticationToken`` is the one implemented here: a fixed token, or a
supplier called each time credentials are needed so a rotated token is picked up.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from magnetar.client.errors import AuthenticationError

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


__all__ = ["REFRESH_AUTH_DATA", "Authentication", "AuthenticationToken"]
