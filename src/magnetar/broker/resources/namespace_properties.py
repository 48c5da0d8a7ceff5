"""A namespace's properties (pulsar-admin's set-property, get-properties, ...): free key / value text
pairs kept in the namespace's Policies under ``properties``, as Pulsar keeps them."""

from __future__ import annotations

from collections.abc import Callable

from magnetar.broker.resources.base import ResourceContext
from magnetar.broker.resources.errors import PreconditionFailedError

KEY = "properties"


class NamespacePropertyResources:
    """Read and change the ``properties`` of namespaces."""

    def __init__(self, ctx: ResourceContext) -> None:
        self.ctx = ctx

    async def get_all(self, ns: str) -> dict[str, str]:
        """Every property of the namespace (on the loop)."""
        return dict((await self.ctx.namespace_read(ns)).get(KEY) or {})

    async def get(self, ns: str, key: str) -> str | None:
        """One property (None when not set; on the loop)."""
        return (await self.get_all(ns)).get(key)

    def put_all(self, ns: str, properties: dict[str, str]) -> None:
        """Add or replace the properties given; the others stay."""
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in properties.items()):
            raise PreconditionFailedError("Namespace properties must map names to strings")
        self._change(ns, lambda current: {**current, **properties})

    def remove(self, ns: str, key: str) -> str | None:
        """Remove one property; its value (None when it was not set)."""
        old = (self.ctx.check_namespace(ns).get(KEY) or {}).get(key)
        if old is not None:
            self._change(ns, lambda current: {k: v for k, v in current.items() if k != key})
        return old

    def clear(self, ns: str) -> None:
        """Remove every property."""
        self._change(ns, lambda current: {})

    def _change(self, ns: str, change: Callable[[dict[str, str]], dict[str, str]]) -> None:
        policies = self.ctx.check_namespace(ns)
        policies[KEY] = change(dict(policies.get(KEY) or {}))
        self.ctx.metadata.set_namespace_policies(ns, policies)
