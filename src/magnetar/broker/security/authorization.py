"""What a role may do: Pulsar's ``PulsarAuthorizationProvider`` as pure logic over plain data.

The service reads tenants and namespace policies through two callables it is given (no storage
import): ``tenant_info(tenant)`` returns the tenant's dict (``adminRoles``) or None, and
``namespace_policies("tenant/ns")`` returns the namespace's policies dict (Pulsar's field names:
``auth_policies`` with ``namespace_auth``, ``destination_auth``, ``subscription_auth_roles``, and
``subscription_auth_mode``) or None. Every check reads them afresh, so grants and revocations take
effect at once.

Pulsar's rules: superusers may do everything; a tenant's admins may do everything inside the
tenant; other roles need a namespace-level or topic-level grant of the action (``produce``,
``consume``, ...), where ``authorizationAllowWildcardsMatching`` lets a granted role ``prefix*`` or
``*suffix`` match; a subscription with ``subscription_auth_roles`` admits only those roles. Clusters
and tenants are administered by superusers only.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from magnetar.broker.security.settings import SecuritySettings
from magnetar.protocol.topic_name import InvalidTopicNameError, TopicName

TenantLookup = Callable[[str], Mapping[str, Any] | None]
PoliciesLookup = Callable[[str], Mapping[str, Any] | None]


class AuthorizationError(Exception):
    """A refused operation; ``message`` is Pulsar's wording, safe to send to the client."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class AuthAction(enum.StrEnum):
    """The actions a namespace or topic permission grants (Pulsar's ``AuthAction``)."""

    produce = "produce"
    consume = "consume"
    functions = "functions"
    sources = "sources"
    sinks = "sinks"
    packages = "packages"


class TenantOperation(enum.StrEnum):
    """Operations inside a tenant (tenant admins and superusers)."""

    CREATE_NAMESPACE = "CREATE_NAMESPACE"
    DELETE_NAMESPACE = "DELETE_NAMESPACE"
    LIST_NAMESPACES = "LIST_NAMESPACES"


class NamespaceOperation(enum.StrEnum):
    """Operations on a namespace (Pulsar's ``NamespaceOperation``)."""

    CREATE_TOPIC = "CREATE_TOPIC"
    GET_TOPIC = "GET_TOPIC"
    GET_TOPICS = "GET_TOPICS"
    DELETE_TOPIC = "DELETE_TOPIC"
    ADD_BUNDLE = "ADD_BUNDLE"
    DELETE_BUNDLE = "DELETE_BUNDLE"
    GET_BUNDLE = "GET_BUNDLE"
    GET_PERMISSION = "GET_PERMISSION"
    GRANT_PERMISSION = "GRANT_PERMISSION"
    REVOKE_PERMISSION = "REVOKE_PERMISSION"
    CLEAR_BACKLOG = "CLEAR_BACKLOG"
    UNSUBSCRIBE = "UNSUBSCRIBE"
    PACKAGES = "PACKAGES"


class TopicOperation(enum.StrEnum):
    """Operations on a topic (Pulsar's ``TopicOperation``)."""

    LOOKUP = "LOOKUP"
    PRODUCE = "PRODUCE"
    CONSUME = "CONSUME"
    SUBSCRIBE = "SUBSCRIBE"
    UNSUBSCRIBE = "UNSUBSCRIBE"
    GET_SUBSCRIPTIONS = "GET_SUBSCRIPTIONS"
    GET_STATS = "GET_STATS"
    GET_METADATA = "GET_METADATA"
    UPDATE_METADATA = "UPDATE_METADATA"
    DELETE_METADATA = "DELETE_METADATA"
    SKIP = "SKIP"
    EXPIRE_MESSAGES = "EXPIRE_MESSAGES"
    PEEK_MESSAGES = "PEEK_MESSAGES"
    RESET_CURSOR = "RESET_CURSOR"
    GET_BACKLOG_SIZE = "GET_BACKLOG_SIZE"
    TERMINATE = "TERMINATE"
    COMPACT = "COMPACT"
    OFFLOAD = "OFFLOAD"
    UNLOAD = "UNLOAD"
    GRANT_PERMISSION = "GRANT_PERMISSION"
    GET_PERMISSION = "GET_PERMISSION"
    REVOKE_PERMISSION = "REVOKE_PERMISSION"


_LOOKUP_OPERATIONS = {TopicOperation.LOOKUP, TopicOperation.GET_STATS, TopicOperation.GET_METADATA}
_CONSUME_OPERATIONS = {
    TopicOperation.CONSUME, TopicOperation.SUBSCRIBE, TopicOperation.UNSUBSCRIBE, TopicOperation.GET_SUBSCRIPTIONS,
    TopicOperation.SKIP, TopicOperation.EXPIRE_MESSAGES, TopicOperation.PEEK_MESSAGES, TopicOperation.RESET_CURSOR,
    TopicOperation.GET_BACKLOG_SIZE,
}
_NAMESPACE_CONSUME_OPERATIONS = {
    NamespaceOperation.GET_TOPIC, NamespaceOperation.GET_TOPICS, NamespaceOperation.UNSUBSCRIBE,
    NamespaceOperation.CLEAR_BACKLOG,
}

#: Pulsar's refusal messages on the binary protocol, by command
REFUSALS: dict[str, str] = {
    "lookup": "Client is not authorized to Lookup",
    "partitioned_metadata": "Client is not authorized to Get Partition Metadata",
    "producer": "Client is not authorized to Publish",
    "subscribe": "Client is not authorized to subscribe",
    "topics_of_namespace": "Client is not authorized to GetTopicsOfNamespace",
    "schema": "Client is not authorized to access the schema",
}


def _actions(values: Iterable[Any]) -> frozenset[AuthAction]:
    out = set()
    for value in values:
        try:
            out.add(AuthAction(str(value)))
        except ValueError:
            continue
    return frozenset(out)


@dataclass(frozen=True)
class AuthPolicies:
    """A namespace's ``auth_policies``: namespace grants, topic grants, subscription roles."""

    namespace_auth: Mapping[str, frozenset[AuthAction]] = field(default_factory=dict)
    destination_auth: Mapping[str, Mapping[str, frozenset[AuthAction]]] = field(default_factory=dict)
    subscription_auth_roles: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def from_json(cls, value: Any) -> AuthPolicies:
        """Read Pulsar's JSON shape; malformed parts are treated as empty (they grant nothing)."""
        if not isinstance(value, Mapping):
            return cls()
        ns = value.get("namespace_auth")
        topics = value.get("destination_auth")
        subs = value.get("subscription_auth_roles")
        return cls(
            {str(r): _actions(a) for r, a in ns.items() if isinstance(a, list)} if isinstance(ns, Mapping) else {},
            {
                str(t): {str(r): _actions(a) for r, a in roles.items() if isinstance(a, list)}
                for t, roles in topics.items() if isinstance(roles, Mapping)
            } if isinstance(topics, Mapping) else {},
            {str(s): frozenset(map(str, r)) for s, r in subs.items() if isinstance(r, list)}
            if isinstance(subs, Mapping) else {},
        )

    def to_json(self) -> dict[str, Any]:
        """Pulsar's JSON shape, with sorted lists."""
        return {
            "namespace_auth": {r: sorted(a) for r, a in self.namespace_auth.items()},
            "destination_auth": {
                t: {r: sorted(a) for r, a in roles.items()} for t, roles in self.destination_auth.items()
            },
            "subscription_auth_roles": {s: sorted(r) for s, r in self.subscription_auth_roles.items()},
        }

    def grant_namespace(self, role: str, actions: Iterable[str]) -> AuthPolicies:
        """A copy where ``role`` has exactly ``actions`` on the namespace."""
        return AuthPolicies({**self.namespace_auth, role: _actions(actions)}, self.destination_auth,
                            self.subscription_auth_roles)

    def revoke_namespace(self, role: str) -> AuthPolicies:
        """A copy without ``role``'s namespace grant."""
        grants = {r: a for r, a in self.namespace_auth.items() if r != role}
        return AuthPolicies(grants, self.destination_auth, self.subscription_auth_roles)

    def grant_topic(self, topic: str, role: str, actions: Iterable[str]) -> AuthPolicies:
        """A copy where ``role`` has exactly ``actions`` on ``topic`` (a full topic name)."""
        roles = {**self.destination_auth.get(topic, {}), role: _actions(actions)}
        return AuthPolicies(self.namespace_auth, {**self.destination_auth, topic: roles}, self.subscription_auth_roles)

    def revoke_topic(self, topic: str, role: str) -> AuthPolicies:
        """A copy without ``role``'s grant on ``topic`` (the topic entry goes when empty)."""
        roles = {r: a for r, a in self.destination_auth.get(topic, {}).items() if r != role}
        topics = {t: r for t, r in self.destination_auth.items() if t != topic}
        if roles:
            topics[topic] = roles
        return AuthPolicies(self.namespace_auth, topics, self.subscription_auth_roles)

    def grant_subscription(self, subscription: str, roles: Iterable[str]) -> AuthPolicies:
        """A copy where only ``roles`` may consume from ``subscription``."""
        subs = {**self.subscription_auth_roles, subscription: frozenset(roles)}
        return AuthPolicies(self.namespace_auth, self.destination_auth, subs)

    def revoke_subscription(self, subscription: str, role: str) -> AuthPolicies:
        """A copy with ``role`` removed from ``subscription``'s roles."""
        subs = dict(self.subscription_auth_roles)
        if subscription in subs:
            subs[subscription] = subs[subscription] - {role}
        return AuthPolicies(self.namespace_auth, self.destination_auth, subs)


def wildcard_grants(role: str, action: AuthAction, grants: Mapping[str, frozenset[AuthAction]]) -> bool:
    """Whether a granted role ``prefix*`` or ``*suffix`` covers ``role`` for ``action``."""
    for granted, actions in grants.items():
        if action not in actions or not granted:
            continue
        if granted.endswith("*") and role.startswith(granted[:-1]):
            return True
        if granted.startswith("*") and role.endswith(granted[1:]):
            return True
    return False


class AuthorizationService:
    """Pulsar's authorization decisions; every method answers True when authorization is disabled."""

    def __init__(self, settings: SecuritySettings, tenant_info: TenantLookup, namespace_policies: PoliciesLookup) -> None:
        self.settings = settings
        self.tenant_info = tenant_info
        self.namespace_policies = namespace_policies
        #: binary-protocol refusals by command (PRODUCER, SUBSCRIBE, LOOKUP, ...), for the metrics
        self.refusals: Counter[str] = Counter()

    @property
    def enabled(self) -> bool:
        """Whether operations are checked (``authorizationEnabled``)."""
        return self.settings.authorization_enabled

    def is_super_user(self, role: str | None) -> bool:
        """Whether ``role`` is in ``superUserRoles``."""
        return self.settings.is_super_user(role)

    def is_tenant_admin(self, tenant: str, role: str | None) -> bool:
        """Superuser, or one of the tenant's ``adminRoles``."""
        if self.is_super_user(role):
            return True
        if role is None:
            return False
        info = self.tenant_info(tenant)
        roles = info.get("adminRoles") if isinstance(info, Mapping) else None
        return isinstance(roles, list) and role in roles

    # -- topic permissions (PulsarAuthorizationProvider.canProduce / canConsume / canLookup) ----------

    def can_produce(self, topic: str | TopicName, role: str | None) -> bool:
        """A namespace or topic grant of ``produce`` (superusers always)."""
        if not self.enabled or self.is_super_user(role):
            return True
        return self._has_permission(topic, role, AuthAction.produce)

    def can_consume(self, topic: str | TopicName, role: str | None, subscription: str | None = None) -> bool:
        """A grant of ``consume`` and, for a subscription with roles, membership in them."""
        if not self.enabled or self.is_super_user(role):
            return True
        return self._consume_refusal(topic, role, subscription) is None

    def can_lookup(self, topic: str | TopicName, role: str | None) -> bool:
        """Produce or consume permission."""
        return self.can_produce(topic, role) or self.can_consume(topic, role)

    def _consume_refusal(self, topic: str | TopicName, role: str | None, subscription: str | None) -> str | None:
        name = _topic(topic)
        if name is None:
            return REFUSALS["subscribe"]
        policies = self.namespace_policies(name.namespace)
        if subscription and isinstance(policies, Mapping):
            roles = AuthPolicies.from_json(policies.get("auth_policies")).subscription_auth_roles.get(subscription)
            if roles and role not in roles:
                return REFUSALS["subscribe"]
            if policies.get("subscription_auth_mode") == "Prefix" and not subscription.startswith(role or "\0"):
                return (
                    "Failed to create consumer - The subscription name needs to be prefixed by the "
                    f"authentication role, like {role}-xxxx for topic: {name}"
                )
        if not self._has_permission(name, role, AuthAction.consume):
            return REFUSALS["subscribe"]
        return None

    def _has_permission(self, topic: str | TopicName, role: str | None, action: AuthAction) -> bool:
        name = _topic(topic)
        if name is None or role is None:
            return False
        policies = self.namespace_policies(name.namespace)
        if not isinstance(policies, Mapping):
            return False
        auth = AuthPolicies.from_json(policies.get("auth_policies"))
        if action in auth.namespace_auth.get(role, ()):
            return True
        topic_grants = auth.destination_auth.get(str(name))
        if topic_grants is not None and action in topic_grants.get(role, ()):
            return True
        if self.settings.authorization_allow_wildcards_matching:
            if wildcard_grants(role, action, auth.namespace_auth):
                return True
            if topic_grants is not None and wildcard_grants(role, action, topic_grants):
                return True
        if name.partition_index >= 0:
            parent_grants = auth.destination_auth.get(str(name.partitioned_parent), {})
            if action in parent_grants.get(role, ()):
                return True
        return False

    # -- admin checks ---------------------------------------------------------------------------

    def allow_super_user_operation(self, role: str | None) -> bool:
        """Clusters, tenants (create, update, delete, list) and broker-wide settings."""
        return not self.enabled or self.is_super_user(role)

    def allow_tenant_operation(self, tenant: str, role: str | None, operation: TenantOperation) -> bool:
        """Operations inside a tenant: its admins and superusers."""
        return not self.enabled or self.is_tenant_admin(tenant, role)

    def allow_namespace_operation(self, namespace: str, role: str | None, operation: NamespaceOperation) -> bool:
        """Tenant admins always; others only read topics / unsubscribe / clear backlog with ``consume``."""
        if not self.enabled or self.is_tenant_admin(namespace.split("/", 1)[0], role):
            return True
        if role is None:
            return False
        if operation == NamespaceOperation.PACKAGES:
            return self._namespace_grant(namespace, role, AuthAction.packages)
        if operation in _NAMESPACE_CONSUME_OPERATIONS:
            return self._namespace_grant(namespace, role, AuthAction.consume)
        return False

    def allow_namespace_policy_operation(self, namespace: str, role: str | None) -> bool:
        """Reading or changing a namespace policy: tenant admins and superusers."""
        return not self.enabled or self.is_tenant_admin(namespace.split("/", 1)[0], role)

    def allow_topic_operation(
        self, topic: str | TopicName, role: str | None, operation: TopicOperation, subscription: str | None = None
    ) -> bool:
        """Tenant admins always; others by produce / consume / lookup permission; the rest is admin-only."""
        if not self.enabled:
            return True
        name = _topic(topic)
        if name is None:
            return False
        if self.is_tenant_admin(name.tenant, role):
            return True
        if operation in _LOOKUP_OPERATIONS:
            return self.can_lookup(name, role)
        if operation == TopicOperation.PRODUCE:
            return self.can_produce(name, role)
        if operation in _CONSUME_OPERATIONS:
            return self.can_consume(name, role, subscription)
        return False

    def allow_topic_policy_operation(self, topic: str | TopicName, role: str | None) -> bool:
        """Reading or changing a topic policy: tenant admins and superusers."""
        name = _topic(topic)
        return not self.enabled or (name is not None and self.is_tenant_admin(name.tenant, role))

    def _namespace_grant(self, namespace: str, role: str, action: AuthAction) -> bool:
        policies = self.namespace_policies(namespace)
        if not isinstance(policies, Mapping):
            return False
        grants = AuthPolicies.from_json(policies.get("auth_policies")).namespace_auth
        if action in grants.get(role, ()):
            return True
        return self.settings.authorization_allow_wildcards_matching and wildcard_grants(role, action, grants)

    # -- the binary protocol's checks, raising Pulsar's refusals -----------------------------------

    def check_producer(self, topic: str | TopicName, role: str | None) -> None:
        """PRODUCER: AuthorizationError("Client is not authorized to Publish") when refused."""
        if not self.allow_topic_operation(topic, role, TopicOperation.PRODUCE):
            raise AuthorizationError(REFUSALS["producer"])

    def check_subscribe(self, topic: str | TopicName, role: str | None, subscription: str) -> None:
        """SUBSCRIBE: AuthorizationError with Pulsar's reason when refused."""
        if not self.enabled:
            return
        name = _topic(topic)
        if name is not None and self.is_tenant_admin(name.tenant, role):
            return
        refusal = self._consume_refusal(topic, role, subscription)
        if refusal is not None:
            raise AuthorizationError(refusal)

    def check_lookup(self, topic: str | TopicName, role: str | None, command: str = "lookup") -> None:
        """LOOKUP, PARTITIONED_METADATA and schema commands (``command`` picks the refusal's wording)."""
        if not self.allow_topic_operation(topic, role, TopicOperation.LOOKUP):
            raise AuthorizationError(REFUSALS.get(command, REFUSALS["lookup"]))

    def check_topics_of_namespace(self, namespace: str, role: str | None) -> None:
        """GET_TOPICS_OF_NAMESPACE."""
        if not self.allow_namespace_operation(namespace, role, NamespaceOperation.GET_TOPICS):
            raise AuthorizationError(REFUSALS["topics_of_namespace"])

    def check_schema_update(self, topic: str | TopicName, role: str | None) -> None:
        """GET_OR_CREATE_SCHEMA registers a schema as a producer does: produce permission."""
        if not self.allow_topic_operation(topic, role, TopicOperation.PRODUCE):
            raise AuthorizationError(REFUSALS["schema"])


def _topic(topic: str | TopicName) -> TopicName | None:
    if isinstance(topic, TopicName):
        return topic
    try:
        return TopicName.parse(topic)
    except InvalidTopicNameError:
        return None
