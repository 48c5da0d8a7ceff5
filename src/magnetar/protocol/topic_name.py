"""Pulsar topic names: ``{persistent|non-persistent}://tenant/namespace/local-name``.

Short forms are completed as Pulsar does: ``my-topic`` is ``persistent://public/default/my-topic``
and ``tenant/ns/my-topic`` is ``persistent://tenant/ns/my-topic``. A partition of a partitioned
topic is an ordinary topic named ``<topic>-partition-<i>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PARTITION_SUFFIX = "-partition-"
_DOMAINS = ("persistent", "non-persistent")
_NAME_PART = re.compile(r"^[-=:.\w]+$", re.ASCII)
_PARTITION = re.compile(r"^(.*)-partition-(\d+)$")


class InvalidTopicNameError(ValueError):
    """A string that is not a valid topic name."""


@dataclass(frozen=True, slots=True)
class TopicName:
    """A parsed, complete topic name."""

    domain: str
    tenant: str
    namespace_part: str
    local_name: str

    @classmethod
    def parse(cls, name: str) -> TopicName:
        """Parse a full or short topic name; raise InvalidTopicNameError when it is not one."""
        if not isinstance(name, str) or not name:
            raise InvalidTopicNameError("topic name is empty")
        if "://" in name:
            domain, _, rest = name.partition("://")
            if domain not in _DOMAINS:
                raise InvalidTopicNameError(f"invalid topic domain {domain!r} in {name!r}")
            parts = rest.split("/")
            if len(parts) != 3:
                # "tenant/cluster/ns/topic" (v1 names) are not supported
                raise InvalidTopicNameError(f"invalid topic name {name!r}: expected domain://tenant/namespace/topic")
        else:
            domain = "persistent"
            parts = name.split("/")
            if len(parts) == 1:
                parts = ["public", "default", parts[0]]
            elif len(parts) != 3:
                raise InvalidTopicNameError(f"invalid short topic name {name!r}: expected topic or tenant/namespace/topic")
        tenant, namespace, local = parts
        for label, part in (("tenant", tenant), ("namespace", namespace)):
            if not part or not _NAME_PART.match(part):
                raise InvalidTopicNameError(f"invalid {label} {part!r} in topic name {name!r}")
        if not local or local.strip() != local or "\x00" in local:
            raise InvalidTopicNameError(f"invalid local topic name {local!r} in {name!r}")
        return cls(domain, tenant, namespace, local)

    @property
    def namespace(self) -> str:
        """``tenant/namespace``."""
        return f"{self.tenant}/{self.namespace_part}"

    @property
    def persistent(self) -> bool:
        """Whether messages of this topic are stored."""
        return self.domain == "persistent"

    @property
    def partition_index(self) -> int:
        """The partition number when this is a partition of a partitioned topic, else -1."""
        m = _PARTITION.match(self.local_name)
        return int(m.group(2)) if m else -1

    @property
    def partitioned_parent(self) -> TopicName:
        """The partitioned topic this partition belongs to (itself when not a partition)."""
        m = _PARTITION.match(self.local_name)
        if not m:
            return self
        return TopicName(self.domain, self.tenant, self.namespace_part, m.group(1))

    def partition(self, index: int) -> TopicName:
        """The name of partition ``index`` of this topic."""
        return TopicName(self.domain, self.tenant, self.namespace_part, f"{self.local_name}{PARTITION_SUFFIX}{index}")

    def __str__(self) -> str:
        return f"{self.domain}://{self.tenant}/{self.namespace_part}/{self.local_name}"


#: the topic whose partitions name Pulsar's transaction coordinators (in its system namespace)
TRANSACTION_COORDINATOR_ASSIGN = "persistent://pulsar/system/transaction_coordinator_assign"


def is_transaction_coordinator_assign(name: TopicName) -> bool:
    """Whether ``name`` is the coordinator-assign topic or one of its partitions."""
    return str(name.partitioned_parent) == TRANSACTION_COORDINATOR_ASSIGN
