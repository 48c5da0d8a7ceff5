"""The errors of the security layer: bad settings, refused credentials."""

from __future__ import annotations


class SecurityConfigError(ValueError):
    """A security setting is missing, malformed or points at unusable key or certificate material.

    The message names the setting under its Pulsar name (``tokenSecretKey: ...``) and never
    contains key material.
    """

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason


class AuthenticationError(Exception):
    """Credentials were refused.

    ``message`` is safe to log and to send to the client (it never echoes a secret); ``reason`` is
    the short code counted in ``pulsar_authentication_failures_total``; ``provider`` is the Pulsar
    provider class name that refused (empty when no provider was involved).
    """

    def __init__(self, message: str, reason: str = "INVALID_AUTH_DATA", provider: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason
        self.provider = provider
