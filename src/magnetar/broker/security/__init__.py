"""Security building blocks: settings, authentication providers and service, authorization, TLS.

The session, the HTTP app and the config use these names::

    settings = SecuritySettings.from_pulsar(raw)          # or SecuritySettings(...)
    authn = AuthenticationService.from_settings(settings) # loads keys and htpasswd
    authz = AuthorizationService(settings, tenant_info, namespace_policies)
    context = server_context(settings)                    # for the TLS listeners

The providers (:mod:`.providers`, :mod:`.tokens`: jwt, cryptography, bcrypt, passlib) are not
re-exported: only a broker with authentication on imports them.
"""

from __future__ import annotations

from magnetar.broker.security.authentication import (
    REFRESH_AUTH_DATA,
    AuthenticationCounters,
    AuthenticationService,
    AuthenticationState,
    RefreshAction,
)
from magnetar.broker.security.authorization import (
    REFUSALS,
    AuthAction,
    AuthorizationError,
    AuthorizationService,
    AuthPolicies,
    NamespaceOperation,
    TenantOperation,
    TopicOperation,
)
from magnetar.broker.security.errors import AuthenticationError, SecurityConfigError
from magnetar.broker.security.settings import PROVIDER_CLASSES, PULSAR_SECURITY_KEYS, SecuritySettings
from magnetar.broker.security.tls import client_context, peer_certificate, server_context

__all__ = [
    "PROVIDER_CLASSES",
    "PULSAR_SECURITY_KEYS",
    "REFRESH_AUTH_DATA",
    "REFUSALS",
    "AuthAction",
    "AuthPolicies",
    "AuthenticationCounters",
    "AuthenticationError",
    "AuthenticationService",
    "AuthenticationState",
    "AuthorizationError",
    "AuthorizationService",
    "NamespaceOperation",
    "RefreshAction",
    "SecurityConfigError",
    "SecuritySettings",
    "TenantOperation",
    "TopicOperation",
    "client_context",
    "peer_certificate",
    "server_context",
]
