"""Permissions: who may produce to and consume from a namespace, a topic, a subscription.

Stored where Pulsar stores them, in the namespace's policies under ``auth_policies``
(``namespace_auth``: role -> actions; ``destination_auth``: topic -> role -> actions;
``subscription_auth_roles``: subscription -> roles). The broker's authorization service reads the
namespace policies afresh on every check, so a grant or a revocation takes effect at once for new
producers, consumers, lookups and admin calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from magnetar.broker.resources.base import ResourceContext
from magnetar.broker.resources.errors import BadRequestError, PreconditionFailedError
from magnetar.broker.security import AuthAction, AuthPolicies
from magnetar.protocol.topic_name import TopicName

AUTH_POLICIES = "auth_policies"
_ACTIONS = frozenset(a.value for a in AuthAction)


def check_actions(actions: Any) -> list[str]:
    """The actions of a grant, each one of Pulsar's ``AuthAction`` names; BadRequestError otherwise."""
    if not isinstance(actions, list | tuple | set | frozenset) or not all(isinstance(a, str) for a in actions):
        raise BadRequestError("Invalid request body: the actions must be a list of strings")
    unknown = sorted(set(actions) - _ACTIONS)
    if unknown:
        raise BadRequestError(f"Invalid request body: unknown actions {unknown} (known: {sorted(_ACTIONS)})")
    return sorted(set(actions))


def _check_roles(roles: Any) -> list[str]:
    if not isinstance(roles, list | tuple | set | frozenset) or not all(isinstance(r, str) and r for r in roles):
        raise BadRequestError("Invalid request body: the roles must be a list of non-empty strings")
    return sorted(set(roles))


def check_auth_policies(value: Any) -> dict[str, Any]:
    """An ``auth_policies`` object of a namespace body, checked and in Pulsar's shape."""
    if value is None:
        return AuthPolicies().to_json()
    if not isinstance(value, Mapping):
        raise PreconditionFailedError("auth_policies must be an object")
    namespace_auth = value.get("namespace_auth") or {}
    topic_auth = value.get("destination_auth") or {}
    subscription_roles = value.get("subscription_auth_roles") or {}
    if not all(isinstance(x, Mapping) for x in (namespace_auth, topic_auth, subscription_roles)):
        raise PreconditionFailedError("auth_policies: namespace_auth, destination_auth and subscription_auth_roles are objects")
    policies = AuthPolicies()
    for role, actions in namespace_auth.items():
        policies = policies.grant_namespace(str(role), check_actions(actions))
    for topic, grants in topic_auth.items():
        if not isinstance(grants, Mapping):
            raise PreconditionFailedError(f"auth_policies.destination_auth[{topic!r}] must be an object")
        for role, actions in grants.items():
            policies = policies.grant_topic(str(topic), str(role), check_actions(actions))
    for subscription, roles in subscription_roles.items():
        policies = policies.grant_subscription(str(subscription), _check_roles(roles))
    return policies.to_json()


class PermissionResources:
    """Grants and revocations on namespaces, topics and subscriptions."""

    def __init__(self, ctx: ResourceContext) -> None:
        self.ctx = ctx

    def _auth(self, ns: str) -> tuple[dict[str, Any], AuthPolicies]:
        policies = self.ctx.check_namespace(ns)
        return policies, AuthPolicies.from_json(policies.get(AUTH_POLICIES))

    async def _auth_read(self, ns: str) -> AuthPolicies:
        """The namespace's grants, on the loop (:meth:`ResourceContext.namespace_read`)."""
        return AuthPolicies.from_json((await self.ctx.namespace_read(ns)).get(AUTH_POLICIES))

    def _save(self, ns: str, policies: dict[str, Any], auth: AuthPolicies) -> None:
        policies[AUTH_POLICIES] = auth.to_json()
        self.ctx.metadata.set_namespace_policies(ns, policies)

    # -- namespaces ----------------------------------------------------------------------------
    async def namespace_permissions(self, ns: str) -> dict[str, list[str]]:
        """Role -> actions granted on the namespace."""
        return (await self._auth_read(ns)).to_json()["namespace_auth"]

    def grant_on_namespace(self, ns: str, role: str, actions: Iterable[str]) -> None:
        """Give ``role`` exactly ``actions`` on every topic of the namespace."""
        checked = check_actions(list(actions))
        policies, auth = self._auth(ns)
        self._save(ns, policies, auth.grant_namespace(role, checked))

    def revoke_on_namespace(self, ns: str, role: str) -> None:
        """Take ``role``'s namespace grant away (nothing happens when it had none)."""
        policies, auth = self._auth(ns)
        self._save(ns, policies, auth.revoke_namespace(role))

    # -- subscriptions -------------------------------------------------------------------------
    async def subscription_permissions(self, ns: str) -> dict[str, list[str]]:
        """Subscription -> the roles allowed to consume from it."""
        return (await self._auth_read(ns)).to_json()["subscription_auth_roles"]

    def grant_on_subscription(self, ns: str, subscription: str, roles: Iterable[str]) -> None:
        """Only ``roles`` (besides tenant admins) may consume from ``subscription`` in the namespace."""
        checked = _check_roles(list(roles) if not isinstance(roles, str) else roles)
        policies, auth = self._auth(ns)
        self._save(ns, policies, auth.grant_subscription(subscription, checked))

    def revoke_on_subscription(self, ns: str, subscription: str, role: str) -> None:
        """Remove ``role`` from the roles of ``subscription``."""
        policies, auth = self._auth(ns)
        self._save(ns, policies, auth.revoke_subscription(subscription, role))

    # -- topics --------------------------------------------------------------------------------
    async def topic_permissions(self, tn: TopicName) -> dict[str, list[str]]:
        """Role -> actions on the topic: the namespace's grants joined with the topic's own."""
        auth = await self._auth_read(tn.namespace)
        merged: dict[str, set[str]] = {r: set(a) for r, a in auth.namespace_auth.items()}
        for role, actions in auth.destination_auth.get(str(tn), {}).items():
            merged.setdefault(role, set()).update(actions)
        return {role: sorted(actions) for role, actions in merged.items()}

    def _with_partitions(self, tn: TopicName) -> list[TopicName]:
        return [tn, *self.ctx.partitions(tn)]

    def grant_on_topic(self, tn: TopicName, role: str, actions: Iterable[str]) -> None:
        """Give ``role`` exactly ``actions`` on the topic (and each partition of a partitioned topic)."""
        checked = check_actions(list(actions))
        policies, auth = self._auth(tn.namespace)
        for name in self._with_partitions(tn):
            auth = auth.grant_topic(str(name), role, checked)
        self._save(tn.namespace, policies, auth)

    def revoke_on_topic(self, tn: TopicName, role: str) -> None:
        """Take ``role``'s topic grant away; 412 when the role has no grant on the topic itself."""
        policies, auth = self._auth(tn.namespace)
        if role not in auth.destination_auth.get(str(tn), {}):
            raise PreconditionFailedError("Permissions are not set at the topic level")
        for name in self._with_partitions(tn):
            auth = auth.revoke_topic(str(name), role)
        self._save(tn.namespace, policies, auth)
