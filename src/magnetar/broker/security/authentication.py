"""Who is connecting: the authentication service over the configured providers.

The binary protocol (Pulsar's ``ServerCnx``)::

    state = auth.authenticate(connect.auth_method_name, connect.auth_data, peer_certificate)
    # -> AuthenticationState(role=...), or AuthenticationError: answer ERROR AuthenticationError, close
    # every authenticationRefreshCheckSeconds:
    action = auth.refresh_action(state, time.time())
    # NONE; CHALLENGE: send AUTH_CHALLENGE(method, REFRESH_AUTH_DATA); CLOSE: the challenge went unanswered
    # on AUTH_RESPONSE:
    state = auth.respond_to_challenge(state, response.auth_data, peer_certificate)

A method no provider serves (or none at all) gets ``anonymousUserRole`` when one is set, as in
Pulsar. HTTP: :meth:`AuthenticationService.authenticate_http` takes the ``Authorization`` header
value (``Bearer`` / ``Basic``) and the client certificate. Successes and failures are counted per
provider and reason in :class:`AuthenticationCounters` for ``pulsar_authentication_success_total``
and ``pulsar_authentication_failures_total``.
"""

from __future__ import annotations

import enum
import logging
import math
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from magnetar.broker.security.errors import AuthenticationError
from magnetar.broker.security.settings import SecuritySettings

if TYPE_CHECKING:
    from magnetar.broker.security.providers import AuthenticationProvider, Identity, PeerCertificate

log = logging.getLogger("magnetar.security")

#: the auth data of a broker's AUTH_CHALLENGE that asks the client for fresh credentials
REFRESH_AUTH_DATA = b"PulsarAuthRefresh"
#: the role of a session when authentication is disabled
NO_AUTHENTICATION_ROLE: str | None = None
#: the ``provider_name`` label of failures no provider handled (no credentials, unknown method)
SERVICE_NAME = "AuthenticationService"
SUCCESS_METRIC = "pulsar_authentication_success_total"
FAILURES_METRIC = "pulsar_authentication_failures_total"


class RefreshAction(enum.Enum):
    """What the session does at a refresh check."""

    NONE = "none"
    CHALLENGE = "challenge"
    CLOSE = "close"


@dataclass
class AuthenticationState:
    """One connection's authentication: the role, the method that proved it, and its expiry."""

    role: str | None
    #: the auth method that proved the role; "anonymous" for anonymousUserRole, "none" when disabled
    method: str
    #: epoch seconds after which the credentials must be refreshed; None: they do not expire
    expires_at: float | None = None
    #: an AUTH_CHALLENGE was sent and not answered yet
    challenge_pending: bool = False

    def is_expired(self, now: float | None = None) -> bool:
        """Whether the credentials have expired at ``now`` (epoch seconds; default: the current time)."""
        if self.expires_at is None:
            return False
        return self.expires_at < (time.time() if now is None else now)


@dataclass
class AuthenticationCounters:
    """Plain counters of authentication outcomes, keyed the way Pulsar labels its metrics."""

    #: (provider_name, auth_method) -> successes
    success: Counter[tuple[str, str]] = field(default_factory=Counter)
    #: (provider_name, auth_method, reason) -> failures
    failures: Counter[tuple[str, str, str]] = field(default_factory=Counter)

    def succeeded(self, provider: str, method: str) -> None:
        """Count one success."""
        self.success[(provider, method)] += 1

    def failed(self, provider: str, method: str, reason: str) -> None:
        """Count one failure."""
        self.failures[(provider, method, reason)] += 1

    def samples(self) -> list[tuple[str, dict[str, str], int]]:
        """(metric name, labels, value) for every counter, under Pulsar's metric and label names."""
        out = [(SUCCESS_METRIC, {"provider_name": p, "auth_method": m}, n) for (p, m), n in self.success.items()]
        out += [
            (FAILURES_METRIC, {"provider_name": p, "auth_method": m, "reason": r}, n)
            for (p, m, r), n in self.failures.items()
        ]
        return out


class AuthenticationService:
    """The configured providers, the anonymous role, and the counters; one per broker."""

    def __init__(
        self,
        settings: SecuritySettings,
        providers: Mapping[str, AuthenticationProvider],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.providers = dict(providers)
        self.clock = clock
        self.counters = AuthenticationCounters()

    @classmethod
    def from_settings(cls, settings: SecuritySettings, clock: Callable[[], float] = time.time) -> AuthenticationService:
        """Load every configured provider (keys, htpasswd); SecurityConfigError names a bad setting.

        ``clock`` is the time tokens are checked against (tests pass their own).
        """
        # jwt, cryptography, bcrypt, passlib: imported only by a broker with authentication on (126 ms CPU)
        from magnetar.broker.security.provider_list import build_providers

        providers = build_providers(settings, clock) if settings.authentication_enabled else {}
        return cls(settings, providers, clock)

    @property
    def enabled(self) -> bool:
        """Whether clients must authenticate (``authenticationEnabled``)."""
        return self.settings.authentication_enabled

    @property
    def anonymous_role(self) -> str | None:
        """``anonymousUserRole``, or None."""
        return self.settings.anonymous_user_role

    def pending_fetch(self, method: str | None, data: bytes | None) -> Callable[[], None] | None:
        """A blocking call that fetches what checking these credentials needs from the network
        (an OpenID issuer's keys), to run off the loop before :meth:`authenticate`; None when
        nothing is missing (the usual case) or the method's providers fetch nothing."""
        if not self.enabled:
            return None
        provider = self.providers.get(method or "none")
        fetch = getattr(provider, "pending_fetch", None)
        if fetch is None:
            return None
        try:
            return fetch(data or b"")  # type: ignore[no-any-return]
        except Exception:  # undecodable credentials: the check that follows refuses them
            return None

    def pending_fetch_http(self, authorization: str | None, method: str | None = None) -> Callable[[], None] | None:
        """:meth:`pending_fetch` for an HTTP request's ``Authorization: Bearer`` token."""
        if not authorization or not authorization.startswith("Bearer ") or (method and method != "token"):
            return None
        return self.pending_fetch("token", authorization[len("Bearer "):].strip().encode())

    def authenticate(
        self, method: str | None, data: bytes | None, peer_certificate: PeerCertificate | None = None
    ) -> AuthenticationState:
        """The state of a CONNECT's credentials, or AuthenticationError (the session then closes)."""
        if not self.enabled:
            return AuthenticationState(NO_AUTHENTICATION_ROLE, "none")
        method = method or "none"
        provider = self.providers.get(method)
        if provider is None:
            return self._anonymous(method)
        identity = self._run(provider, lambda: provider.authenticate(data or b"", peer_certificate))
        return AuthenticationState(identity.role, method, identity.expires_at)

    def respond_to_challenge(
        self, state: AuthenticationState, data: bytes | None, peer_certificate: PeerCertificate | None = None
    ) -> AuthenticationState:
        """The state after an AUTH_RESPONSE: same method, same role, fresh expiry."""
        provider = self.providers.get(state.method)
        if provider is None:
            raise AuthenticationError(f"no provider for auth method {state.method!r} to refresh", "INVALID_AUTH_DATA")
        identity = self._run(provider, lambda: provider.authenticate(data or b"", peer_certificate))
        if identity.role != state.role:
            self.counters.failed(provider.name, provider.method, "ROLE_CHANGED")
            raise AuthenticationError(
                f"Auth role does not match: previous {state.role}, new {identity.role}", "ROLE_CHANGED", provider.name
            )
        return AuthenticationState(identity.role, state.method, identity.expires_at)

    def refresh_action(self, state: AuthenticationState, now: float | None = None) -> RefreshAction:
        """What to do at a refresh check (Pulsar's ``refreshAuthenticationCredentials``).

        Credentials still valid: NONE. Expired, no challenge out: CHALLENGE (and the state records
        it). Expired with a challenge still unanswered since the previous check: CLOSE.
        """
        if not state.is_expired(self.clock() if now is None else now):
            return RefreshAction.NONE
        if state.challenge_pending:
            return RefreshAction.CLOSE
        state.challenge_pending = True
        return RefreshAction.CHALLENGE

    def refresh_delay(self, state: AuthenticationState, now: float | None = None) -> float | None:
        """Seconds until the next refresh check is useful, or None when the credentials never expire."""
        if state.expires_at is None:
            return None
        interval = float(self.settings.authentication_refresh_check_seconds)
        remaining = state.expires_at - (self.clock() if now is None else now)
        return max(0.0, min(interval, remaining)) if math.isfinite(remaining) else interval

    def authenticate_http(
        self,
        authorization: str | None,
        peer_certificate: PeerCertificate | None = None,
        method: str | None = None,
    ) -> str | None:
        """The role of an HTTP request, or AuthenticationError (answer 401).

        ``method`` is the ``X-Pulsar-Auth-Method-Name`` header. Without it, the ``Authorization``
        scheme picks the provider (``Bearer``: token, ``Basic``: basic); credentials that are sent
        must be valid. Without a header, a client certificate is tried (tls provider), then the
        anonymous role. None when authentication is disabled.
        """
        if not self.enabled:
            return NO_AUTHENTICATION_ROLE
        if method:
            provider = self.providers.get(method)
            if provider is None:
                self.counters.failed(SERVICE_NAME, method, "UNSUPPORTED_METHOD")
                raise AuthenticationError(f"Unsupported authentication method: [{method[:64]}].", "UNSUPPORTED_METHOD")
            return self._http(provider, authorization, peer_certificate)
        if authorization and authorization.strip():
            scheme = authorization.split(" ", 1)[0].lower()
            provider = self.providers.get({"bearer": "token", "basic": "basic"}.get(scheme, ""))
            if provider is None:
                self.counters.failed(SERVICE_NAME, scheme[:32], "UNSUPPORTED_METHOD")
                raise AuthenticationError("Unsupported Authorization header scheme", "UNSUPPORTED_METHOD")
            return self._http(provider, authorization, peer_certificate)
        tls = self.providers.get("tls")
        if peer_certificate and tls is not None:
            return self._http(tls, None, peer_certificate)
        return self._anonymous("none").role

    def _http(
        self, provider: AuthenticationProvider, authorization: str | None, peer_certificate: PeerCertificate | None
    ) -> str:
        return self._run(provider, lambda: provider.authenticate_http(authorization, peer_certificate)).role

    def _anonymous(self, method: str) -> AuthenticationState:
        role = self.anonymous_role
        if role is None:
            self.counters.failed(SERVICE_NAME, method[:64], "NO_ANONYMOUS_ROLE")
            raise AuthenticationError(
                "No anonymous role, and no authentication provider configured", "NO_ANONYMOUS_ROLE"
            )
        return AuthenticationState(role, "anonymous")

    def _run(self, provider: AuthenticationProvider, check: Callable[[], Identity]) -> Identity:
        """Run one provider check, count its outcome, and turn any stray error into AuthenticationError."""
        try:
            identity = check()
        except AuthenticationError as exc:
            self.counters.failed(provider.name, provider.method, exc.reason)
            log.debug("authentication failed: provider=%s reason=%s: %s", provider.name, exc.reason, exc.message)
            raise
        except Exception as exc:  # a provider bug must still be a refusal, never a crash of the session
            self.counters.failed(provider.name, provider.method, "INTERNAL_ERROR")
            log.warning("authentication provider %s failed: %s", provider.name, type(exc).__name__)
            raise AuthenticationError("authentication failed", "INTERNAL_ERROR", provider.name) from None
        self.counters.succeeded(provider.name, provider.method)
        return identity
