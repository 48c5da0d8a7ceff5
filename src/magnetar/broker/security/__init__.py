"""Security building blocks: settings, authentication providers and service, authorization, TLS.

The session, the HTTP app and the config use these names::

    settings = SecuritySettings.from_pulsar(raw)          # or SecuritySettings(...)
    authn = AuthenticationService.from_settings(settings) # loads keys and htpasswd
    authz = AuthorizationService(settings, tenant_info, namespace_policies)
    context = server_context(settings)                    # for the TLS listeners

Names load on first use (PEP 562), so a broker without authentication never imports the
providers (jwt, cryptography, bcrypt, passlib). Nothing here imports the session, the service,
topics, subscriptions or the admin layer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magnetar.lazy_names import lazy_names

if TYPE_CHECKING:
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
    from magnetar.broker.security.providers import PeerCertificate
    from magnetar.broker.security.settings import PROVIDER_CLASSES, PULSAR_SECURITY_KEYS, SecuritySettings
    from magnetar.broker.security.tls import client_context, peer_certificate, server_context

#: public name -> the module of this package that defines it
_MODULES = {
    **dict.fromkeys(
        ("REFRESH_AUTH_DATA", "AuthenticationCounters", "AuthenticationService", "AuthenticationState", "RefreshAction"),
        "authentication",
    ),
    **dict.fromkeys(
        ("REFUSALS", "AuthAction", "AuthorizationError", "AuthorizationService", "AuthPolicies",
         "NamespaceOperation", "TenantOperation", "TopicOperation"),
        "authorization",
    ),
    "AuthenticationError": "errors",
    "SecurityConfigError": "errors",
    "PeerCertificate": "providers",
    **dict.fromkeys(("PROVIDER_CLASSES", "PULSAR_SECURITY_KEYS", "SecuritySettings"), "settings"),
    **dict.fromkeys(("client_context", "peer_certificate", "server_context"), "tls"),
}

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
    "PeerCertificate",
    "RefreshAction",
    "SecurityConfigError",
    "SecuritySettings",
    "TenantOperation",
    "TopicOperation",
    "client_context",
    "peer_certificate",
    "server_context",
]


__getattr__, __dir__ = lazy_names(__name__, _MODULES)
