"""The configured providers by auth method; several providers of one method tried in turn.

Pulsar's token provider and its OpenID Connect provider both serve the auth method ``token``. As
Pulsar's ``AuthenticationProviderList``, a method served by more than one configured provider
accepts credentials any of them accepts, and refuses with the last provider's error.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from magnetar.broker.security.errors import AuthenticationError
from magnetar.broker.security.openid import OpenIDProvider
from magnetar.broker.security.providers import (
    AuthenticationProvider,
    Identity,
    PeerCertificate,
    build_provider,
)
from magnetar.broker.security.settings import OPENID_PROVIDER_CLASS, PROVIDER_CLASSES, SecuritySettings


class ProviderList:
    """Providers of one auth method, tried in configuration order."""

    name = "AuthenticationProviderList"

    def __init__(self, providers: Sequence[AuthenticationProvider]) -> None:
        self.providers = tuple(providers)
        self.method = self.providers[0].method

    def _first(self, check: Callable[[AuthenticationProvider], Identity]) -> Identity:
        error: AuthenticationError | None = None
        for provider in self.providers:
            try:
                return check(provider)
            except AuthenticationError as exc:
                error = exc
        assert error is not None
        raise error

    def authenticate(self, data: bytes, peer_certificate: PeerCertificate | None) -> Identity:
        """The identity the first accepting provider finds."""
        return self._first(lambda provider: provider.authenticate(data, peer_certificate))

    def authenticate_http(self, authorization: str | None, peer_certificate: PeerCertificate | None) -> Identity:
        """The identity the first accepting provider finds in an HTTP ``Authorization`` header."""
        return self._first(lambda provider: provider.authenticate_http(authorization, peer_certificate))

    def pending_fetch(self, data: bytes) -> Callable[[], None] | None:
        """What the providers that fetch keys need fetched before these credentials can be checked."""
        fetches = [fetch(data) for provider in self.providers
                   if (fetch := getattr(provider, "pending_fetch", None)) is not None]
        needed = [fetch for fetch in fetches if fetch is not None]
        if not needed:
            return None

        def fetch_all() -> None:
            for fetch in needed:
                fetch()

        return fetch_all


def build_providers(
    settings: SecuritySettings, clock: Callable[[], float] = time.time
) -> dict[str, AuthenticationProvider]:
    """Every configured provider, loaded (keys, htpasswd), by the auth method it serves."""
    by_method: dict[str, list[AuthenticationProvider]] = {}
    for class_name in settings.provider_classes:
        method = PROVIDER_CLASSES[class_name]
        if class_name == OPENID_PROVIDER_CLASS:
            provider: AuthenticationProvider = OpenIDProvider.from_settings(settings, clock)
        else:
            provider = build_provider(method, settings, clock)
        by_method.setdefault(method, []).append(provider)
    return {method: found[0] if len(found) == 1 else ProviderList(found) for method, found in by_method.items()}
