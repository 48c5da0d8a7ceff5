"""What the broker knows of names: topic names, tenants, namespaces and partitioned topics.

:class:`TopicDirectory` answers from the metadata store and the registry of loaded topics, and
loads nothing: parsing a topic name a client sent, whether its namespace exists, how many
partitions a topic has (creating a partitioned topic on a client's first use when auto-creation
makes them), the auto-creation rules of a namespace, and the topics a namespace lists. It is
the base of :class:`~magnetar.broker.service.BrokerService`, which loads and runs the topics.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from magnetar.broker.config import BrokerConfig
from magnetar.broker.errors import BrokerError
from magnetar.protocol.enums import ServerError, TopicsMode
from magnetar.protocol.topic_name import InvalidTopicNameError, TopicName
from magnetar.storage.metadata import MetadataStore

if TYPE_CHECKING:
    from magnetar.broker.topics.base import Topic


class TopicDirectory:
    """Topic names and namespaces as the metadata store and the loaded topics know them."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        #: the loaded topics by full name
        self.topics: dict[str, Topic] = {}
        #: the metadata store (set when the broker starts)
        self.metadata: MetadataStore | None = None

    def tenant_info(self, tenant: str) -> dict | None:
        """A tenant's stored TenantInfo (``adminRoles``), read afresh for authorization."""
        return self.metadata.get_tenant(tenant) if self.metadata is not None else None

    def namespace_policies(self, namespace: str) -> dict | None:
        """A namespace's stored policies (``auth_policies``), read afresh for authorization."""
        return self.metadata.get_namespace(namespace) if self.metadata is not None else None

    def parse_topic(self, name: str) -> TopicName:
        """Parse a topic name a client sent; BrokerError InvalidTopicName when it is not one."""
        try:
            return TopicName.parse(name)
        except InvalidTopicNameError as exc:
            raise BrokerError(ServerError.InvalidTopicName, str(exc)) from None

    def check_namespace(self, topic_name: TopicName) -> None:
        """BrokerError TopicNotFound unless the topic's tenant and namespace exist."""
        assert self.metadata is not None
        if self.metadata.get_namespace(topic_name.namespace) is None:
            raise BrokerError(
                ServerError.TopicNotFound,
                f"namespace {topic_name.namespace} does not exist (topic {topic_name})",
            )

    def partitions_of(self, topic_name: TopicName) -> int:
        """Number of partitions of a partitioned topic, 0 for a non-partitioned one."""
        assert self.metadata is not None
        return self.metadata.get_partitioned_topic(str(topic_name)) or 0

    def partitions_for_client(self, topic_name: TopicName, auto_create: bool = True) -> int:
        """PARTITIONED_METADATA: the partition count, creating a partitioned topic on first use
        when auto-creation makes new topics partitioned (broker setting or namespace policy)."""
        known = self.known_partitions(topic_name, auto_create)
        return known if known is not None else self.auto_create_partitioned(topic_name)

    def known_partitions(self, topic_name: TopicName, auto_create: bool = True) -> int | None:
        """PARTITIONED_METADATA's answer when the store's memory has it (the namespaces and partitioned
        topics are there), None when it needs the database: auto-creation may make the topic a
        partitioned one (:meth:`auto_create_partitioned`, a job of the metadata thread)."""
        assert self.metadata is not None
        name = str(topic_name)
        n = self.metadata.get_partitioned_topic(name)
        if n is not None:
            return n
        if not auto_create or topic_name.partition_index >= 0 or name in self.topics:
            return 0
        allowed, partitions = self.auto_topic_creation(topic_name.namespace)
        return 0 if not allowed or partitions <= 0 else None

    def auto_create_partitioned(self, topic_name: TopicName) -> int:
        """Create a partitioned topic as auto-creation makes it, unless one of that name exists (or
        a non-partitioned one, which stays one: 0); its partition count. Reads and writes the store
        (run as a job of the metadata thread, its one writer); checks again what
        :meth:`known_partitions` found, since the job runs later."""
        assert self.metadata is not None
        name = str(topic_name)
        n = self.metadata.get_partitioned_topic(name)
        if n is not None:
            return n
        allowed, partitions = self.auto_topic_creation(topic_name.namespace)
        if not allowed or partitions <= 0 or name in self.topics:
            return 0
        if topic_name.persistent and self.metadata.get_topic(name) is not None:
            return 0  # an existing non-partitioned topic stays one
        if topic_name.persistent:
            self.check_topic_limit(topic_name.namespace, partitions)
        self.metadata.set_partitioned_topic(name, partitions)
        return partitions

    def check_topic_limit(self, namespace: str, adding: int) -> None:
        """BrokerError NotAllowedError when ``adding`` more topics (partitions count one each) would
        pass the namespace's max-topics policy, else the broker setting (Pulsar's words)."""
        # with the first topic, not at start-up: 10 ms CPU (python -X importtime), as resolve
        from magnetar.broker.policies.registry import MAX_TOPICS_PER_NAMESPACE
        from magnetar.broker.policies.resolution import namespace_value

        assert self.metadata is not None
        limit = namespace_value(self.metadata, self.config, namespace, MAX_TOPICS_PER_NAMESPACE)
        if limit > 0 and len(self.metadata.list_topics(namespace)) + adding > limit:
            raise BrokerError(ServerError.NotAllowedError, "Exceed maximum number of topics in namespace.")

    def auto_topic_creation(self, namespace: str) -> tuple[bool, int]:
        """(auto-creation allowed, partitions of auto-created topics) for a namespace."""
        assert self.metadata is not None
        policies = self.metadata.get_namespace(namespace) or {}
        override = policies.get("autoTopicCreationOverride")
        if isinstance(override, dict) and "allowAutoTopicCreation" in override:
            allowed = bool(override.get("allowAutoTopicCreation"))
            partitioned = override.get("topicType") == "partitioned"
            return allowed, int(override.get("defaultNumPartitions") or 0) if partitioned else 0
        return self.config.allow_auto_topic_creation, self.config.default_num_partitions

    async def topics_of_namespace(self, namespace: str, mode: TopicsMode = TopicsMode.PERSISTENT) -> list[str]:
        """Topics of a namespace, partitions listed individually, as Pulsar lists them. The stored
        names are read in a worker thread (the loop waits for no SQLite read), the loaded ones added
        on the loop once they are in."""
        assert self.metadata is not None
        names = await asyncio.to_thread(self._stored_topics, self.metadata, namespace)
        names.update(t for t in self.topics if TopicName.parse(t).namespace == namespace)
        out = []
        for name in sorted(names):
            persistent = name.startswith("persistent://")
            if mode == TopicsMode.ALL or (mode == TopicsMode.PERSISTENT) == persistent:
                out.append(name)
        return out

    @staticmethod
    def _stored_topics(metadata: MetadataStore, namespace: str) -> set[str]:
        """(a worker thread) The stored topics of a namespace, each partitioned one's partitions by name."""
        names = set(metadata.list_topics(namespace))
        for parent in metadata.list_partitioned_topics(namespace):
            n = metadata.get_partitioned_topic(parent) or 0
            base = TopicName.parse(parent)
            names.update(str(base.partition(i)) for i in range(n))
        return names

    def check_not_partitioned(self, topic_name: TopicName) -> None:
        """BrokerError NotAllowedError when ``topic_name`` is a partitioned topic (only its partitions load)."""
        if self.partitions_of(topic_name) > 0:
            raise BrokerError(
                ServerError.NotAllowedError,
                f"{topic_name} is a partitioned topic: use its partitions {topic_name}-partition-<i>",
            )
