"""Namespaces: create (with initial policies), list, delete, and the topics they hold."""

from __future__ import annotations

from typing import Any

from magnetar.broker.policies.registry import NAMESPACE, on_scope
from magnetar.broker.resources.base import ResourceContext
from magnetar.broker.resources.errors import ConflictError, NotFoundError, PreconditionFailedError
from magnetar.broker.resources.permissions import AUTH_POLICIES, check_auth_policies
from magnetar.broker.resources.policies import validate_policy
from magnetar.broker.resources.topics import TopicResources
from magnetar.protocol.enums import TopicsMode
from magnetar.protocol.topic_name import TopicName
from magnetar.storage import MetadataConflictError, MetadataNotFoundError

_NAMESPACE_POLICY_NAMES = frozenset(p.name for p in on_scope(NAMESPACE))


class NamespaceResources:
    """Namespaces of tenants."""

    def __init__(self, ctx: ResourceContext, topics: TopicResources) -> None:
        self.ctx = ctx
        self.topics = topics

    def list_namespaces(self, tenant: str) -> list[str]:
        """The namespaces of a tenant."""
        if self.ctx.metadata.get_tenant(tenant) is None:
            raise NotFoundError("Tenant does not exist")
        return self.ctx.metadata.list_namespaces(tenant)

    def create_namespace(self, ns: str, policies: dict[str, Any] | None = None) -> None:
        """Create a namespace with the (valid) policies and ``auth_policies`` given; unknown fields are ignored."""
        tenant = ns.split("/", 1)[0]
        if self.ctx.metadata.get_tenant(tenant) is None:
            raise NotFoundError("Tenant does not exist")
        stored: dict[str, Any] = {}
        for key, value in (policies or {}).items():
            if key in _NAMESPACE_POLICY_NAMES and value is not None:
                stored[key] = validate_policy(key, value, stored)
        if (policies or {}).get(AUTH_POLICIES) is not None:
            stored[AUTH_POLICIES] = check_auth_policies(policies[AUTH_POLICIES])  # type: ignore[index]
        try:
            self.ctx.metadata.create_namespace(ns, stored)
        except MetadataConflictError:
            raise ConflictError("Namespace already exists") from None

    async def namespace_has_topics(self, ns: str) -> bool:
        """Whether the namespace holds any topic, stored (read on the metadata thread) or loaded."""
        meta = self.ctx.metadata
        if await self.ctx.off_loop(lambda: bool(meta.list_topics(ns) or meta.list_partitioned_topics(ns))):
            return True
        return any(TopicName.parse(t).namespace == ns for t in self.ctx.service.topics)

    async def delete_namespace(self, ns: str, force: bool = False) -> None:
        """Delete an empty namespace (with ``force``: its topics too)."""
        await self.ctx.namespace_read(ns)
        meta = self.ctx.metadata
        if await self.namespace_has_topics(ns):
            if not force:
                raise ConflictError("Cannot delete non empty namespace")
            for name in await self.ctx.read(meta.list_partitioned_topics, ns):
                await self.topics.delete_partitioned_topic(TopicName.parse(name), force=True)
            stored = await self.ctx.read(meta.list_topics, ns)
            loaded = [t for t in self.ctx.service.topics if TopicName.parse(t).namespace == ns]
            for name in stored + loaded:
                await self.topics.delete_topic_now(name)
        try:
            await self.ctx.off_loop(meta.delete_namespace, ns)
        except MetadataConflictError:
            raise ConflictError("Cannot delete non empty namespace") from None
        except MetadataNotFoundError:
            raise NotFoundError("Namespace does not exist") from None

    async def namespace_topics(self, ns: str, mode: str = "PERSISTENT") -> list[str]:
        """The topics of a namespace (partitions individually) of one kind, or of ALL kinds (the stored
        ones read in a worker thread)."""
        await self.ctx.namespace_read(ns)
        try:
            topics_mode = TopicsMode[mode.upper()]
        except KeyError:
            raise PreconditionFailedError(f"Invalid mode {mode!r}: expected PERSISTENT, NON_PERSISTENT or ALL") from None
        return await self.ctx.service.topics_of_namespace(ns, topics_mode)
