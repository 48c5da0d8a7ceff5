"""Topics: create, list, delete, partitions, termination, compaction and lookup."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from magnetar.broker.policies.registry import MAX_TOPICS_PER_NAMESPACE
from magnetar.broker.policies.resolution import TOPIC_POLICIES_PREFIX, namespace_value
from magnetar.broker.policies.validation import MAX_PARTITIONS
from magnetar.broker.resources.base import COMPACTION_PREFIX, COMPACTION_STATUS_PREFIX, ResourceContext
from magnetar.broker.resources.errors import (
    ConflictError,
    InvalidChangeError,
    NotAllowedError,
    NotFoundError,
    OutOfRangeError,
    PreconditionFailedError,
)
from magnetar.broker.resources.policies import PolicyResources
from magnetar.protocol.enums import InitialPosition, TopicsMode
from magnetar.protocol.topic_name import PARTITION_SUFFIX, TopicName, is_transaction_coordinator_assign

if TYPE_CHECKING:
    from magnetar.broker.topics.base import Topic

_TOPIC_KEY_PREFIXES = (TOPIC_POLICIES_PREFIX, COMPACTION_PREFIX, COMPACTION_STATUS_PREFIX)


def is_busy(topic: Topic) -> bool:
    """Whether a topic has producers or consumers."""
    return bool(topic.producers) or any(s.consumers for s in topic.subscriptions.values())


def check_partition_count(partitions: int) -> None:
    """406 unless 0 < partitions <= MAX_PARTITIONS."""
    if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions <= 0:
        raise OutOfRangeError("Number of partitions should be more than 0")
    if partitions > MAX_PARTITIONS:
        raise OutOfRangeError(f"Number of partitions should be less than or equal to {MAX_PARTITIONS}")


class TopicResources:
    """Topics and partitioned topics of namespaces."""

    def __init__(self, ctx: ResourceContext, policies: PolicyResources) -> None:
        self.ctx = ctx
        self.policies = policies

    # -- listing, creation, deletion -------------------------------------------------------
    async def list_topics(self, domain: str, ns: str) -> list[str]:
        """The topics of one domain in a namespace (partitions individually; the stored ones read in a
        worker thread)."""
        await self.ctx.namespace_read(ns)
        mode = TopicsMode.PERSISTENT if domain == "persistent" else TopicsMode.NON_PERSISTENT
        return await self.ctx.service.topics_of_namespace(ns, mode)

    def list_partitioned_topics(self, domain: str, ns: str) -> list[str]:
        """The partitioned topics of one domain in a namespace."""
        self.ctx.check_namespace(ns)
        return [t for t in self.ctx.metadata.list_partitioned_topics(ns) if t.startswith(domain + "://")]

    async def create_topic(self, tn: TopicName, properties: dict[str, str] | None = None) -> None:
        """Create a non-partitioned topic; ConflictError when it (or a partitioned topic of that name) exists.
        A persistent one is a row of the metadata store, written on the metadata thread."""
        if tn.persistent:
            await self.ctx.write(self._create_stored_topic, tn, properties)
            return
        # its tenant read off the loop when the namespace does not exist; then the check reads memory only
        # (a non-persistent topic has no row)
        await self.ctx.namespace_read(tn.namespace)
        self._check_new_topic(tn)
        await self.ctx.service.load_topic(tn, create=True)

    def _check_new_topic(self, tn: TopicName) -> None:
        ctx = self.ctx
        ctx.check_namespace(tn.namespace)
        if ctx.partitions_of(tn) > 0 or ctx.topic_exists(tn):
            raise ConflictError("This topic already exists")

    def _create_stored_topic(self, tn: TopicName, properties: dict[str, str] | None) -> None:
        """(a write job) The checks and the row of a new persistent topic."""
        self._check_new_topic(tn)
        self._check_topic_limit(tn, 1)
        self.ctx.metadata.get_or_create_topic(str(tn), properties or {})

    async def delete_topic(self, tn: TopicName, force: bool = False) -> None:
        """Delete a non-partitioned topic; refused while it has producers or consumers, unless forced."""
        ctx = self.ctx
        await ctx.namespace_read(tn.namespace)
        if ctx.partitions_of(tn) > 0:
            raise ConflictError(
                f"{tn} is a partitioned topic. Instead of calling delete please call delete-partitioned-topic."
            )
        if not await ctx.topic_exists_read(tn):
            raise NotFoundError(f"Topic {tn} not found")
        topic = ctx.service.topics.get(str(tn))
        if topic is not None and not force and is_busy(topic):
            raise PreconditionFailedError("Topic has active producers/subscriptions")
        await self.delete_topic_now(str(tn))

    async def delete_topic_now(self, name: str) -> None:
        """Delete a topic's storage and everything stored about it, without any check."""
        await self.ctx.service.delete_topic_storage(name)
        await self.ctx.write(self._forget_keys, name)

    def _forget_keys(self, name: str) -> None:
        """(a write job) Drop the key/value rows stored about a topic (policies, compaction)."""
        for prefix in _TOPIC_KEY_PREFIXES:
            self.ctx.metadata.delete_kv(prefix + name)

    # -- partitioned topics ----------------------------------------------------------------
    def create_partitioned_topic(self, tn: TopicName, partitions: int) -> None:
        """Create a partitioned topic and its partitions."""
        ctx = self.ctx
        ctx.check_namespace(tn.namespace)
        check_partition_count(partitions)
        if tn.partition_index >= 0:
            raise PreconditionFailedError(f"Partitioned topic name should not contain '{PARTITION_SUFFIX}': {tn}")
        if ctx.partitions_of(tn) > 0 or ctx.topic_exists(tn):
            raise ConflictError("This topic already exists")
        if tn.persistent:
            self._check_topic_limit(tn, partitions)
        ctx.metadata.set_partitioned_topic(str(tn), partitions)
        self._create_partitions(tn, 0, partitions)

    def _check_topic_limit(self, tn: TopicName, adding: int) -> None:
        """412 when ``adding`` persistent topics would pass the namespace's max-topics policy."""
        ctx = self.ctx
        limit = namespace_value(ctx.metadata, ctx.config, tn.namespace, MAX_TOPICS_PER_NAMESPACE)
        if limit > 0 and len(ctx.metadata.list_topics(tn.namespace)) + adding > limit:
            raise PreconditionFailedError("Exceed maximum number of topics in namespace.")

    def _create_partitions(self, tn: TopicName, first: int, count: int) -> None:
        if not tn.persistent:
            return
        for i in range(first, count):
            self.ctx.metadata.get_or_create_topic(str(tn.partition(i)))

    async def update_partitioned_topic(self, tn: TopicName, partitions: int) -> None:
        """Add partitions (never remove); new partitions get partition 0's durable subscriptions."""
        ctx = self.ctx
        await ctx.namespace_read(tn.namespace)
        check_partition_count(partitions)
        current = ctx.partitions_of(tn)
        if current <= 0:
            raise ConflictError(f"Topic {tn} is not the partitioned topic.")
        if partitions < current:
            raise InvalidChangeError(f"Expect partitions {partitions} can't less than current partitions {current}.")
        if partitions == current:
            return
        current = await ctx.write(self._add_partitions, tn, partitions)
        first = tn.partition(0)
        if not await ctx.topic_exists_read(first):
            return
        subs = [s.name for s in (await ctx.load_topic(first)).subscriptions.values() if s.durable]
        for i in range(current, partitions):
            topic = await ctx.load_topic(tn.partition(i))
            for name in subs:
                if name not in topic.subscriptions:
                    topic.subscribe(name, durable=True, initial_position=InitialPosition.Earliest, start_message_id=None)

    def _add_partitions(self, tn: TopicName, partitions: int) -> int:
        """(a write job) Raise a partitioned topic's count to ``partitions``; the count it had."""
        current = self.ctx.partitions_of(tn)
        if current <= 0:
            raise ConflictError(f"Topic {tn} is not the partitioned topic.")
        if partitions < current:
            raise InvalidChangeError(f"Expect partitions {partitions} can't less than current partitions {current}.")
        self.ctx.metadata.set_partitioned_topic(str(tn), partitions)
        self._create_partitions(tn, current, partitions)
        return current

    def get_partitioned_metadata(self, tn: TopicName, check_auto_creation: bool = False) -> dict[str, Any]:
        """``{"partitions": N}`` (0 for a non-partitioned topic).

        With ``check_auto_creation`` (what clients ask before producing), a topic that does not
        exist yet is reported as it would be auto-created: a partitioned topic is created now
        when the namespace's auto-topic-creation policy says "partitioned".
        """
        if is_transaction_coordinator_assign(tn):
            # one partition per coordinator; none with transactions disabled (as Pulsar)
            transactions = self.ctx.service.transactions
            return {"partitions": transactions.count if transactions is not None else 0}
        ctx = self.ctx
        ctx.check_namespace(tn.namespace)
        known = self._partitions_in_memory(tn)
        if known is not None:
            return known
        if ctx.topic_exists(tn):
            return {"partitions": 0}
        if check_auto_creation:
            auto = self.policies.auto_topic_creation(tn.namespace)
            if auto.get("allowAutoTopicCreation") and auto.get("topicType") == "partitioned":
                n = int(auto.get("defaultNumPartitions") or 1)
                ctx.metadata.set_partitioned_topic(str(tn), n)
                self._create_partitions(tn, 0, n)
                return {"partitions": n}
            if auto.get("allowAutoTopicCreation"):
                return {"partitions": 0}
        raise NotFoundError(f"Topic {tn} not found")

    async def partitioned_metadata(self, tn: TopicName) -> dict[str, Any]:
        """:meth:`get_partitioned_metadata` without auto creation, on the loop: what is not in the store's
        memory (the row of a topic not loaded, the tenant of a namespace that does not exist) read in a
        worker thread."""
        if is_transaction_coordinator_assign(tn):
            return self.get_partitioned_metadata(tn)  # the coordinators' count: no store read
        await self.ctx.namespace_read(tn.namespace)
        known = self._partitions_in_memory(tn)
        if known is not None:
            return known
        if not await self.ctx.topic_exists_read(tn):
            raise NotFoundError(f"Topic {tn} not found")
        return {"partitions": 0}

    def _partitions_in_memory(self, tn: TopicName) -> dict[str, Any] | None:
        """The answer of a partitioned topic or a partition (the store's memory has it), else None."""
        n = self.ctx.partitions_of(tn)
        return {"partitions": n} if n > 0 or tn.partition_index >= 0 else None

    async def delete_partitioned_topic(self, tn: TopicName, force: bool = False) -> None:
        """Delete a partitioned topic and its partitions; refused while they have clients, unless forced."""
        ctx = self.ctx
        await ctx.namespace_read(tn.namespace)
        if ctx.partitions_of(tn) <= 0:
            if await ctx.topic_exists_read(tn):
                raise ConflictError(
                    f"{tn} is a non-partitioned topic. Instead of calling delete-partitioned-topic please call delete."
                )
            raise NotFoundError(f"Partitioned Topic {tn} not found")
        partitions = [str(p) for p in ctx.partitions(tn)]
        if not force:
            for name in partitions:
                topic = ctx.service.topics.get(name)
                if topic is not None and is_busy(topic):
                    raise PreconditionFailedError("Topic has active producers/subscriptions")
        for p in ctx.partitions(tn):
            if await ctx.topic_exists_read(p):
                await self.delete_topic_now(str(p))
        await ctx.write(self._forget_partitioned, str(tn))

    def _forget_partitioned(self, name: str) -> None:
        """(a write job) Drop a partitioned topic's row and what is stored about it."""
        self.ctx.metadata.delete_partitioned_topic(name)
        self._forget_keys(name)

    # -- terminate, compaction, lookup -----------------------------------------------------
    async def terminate(self, tn: TopicName) -> dict[str, Any]:
        """Terminate a topic: no more messages are accepted. Returns the last message id."""
        ctx = self.ctx
        ctx.persistent_only(tn, "Termination")
        await ctx.existing_read(tn)
        if ctx.partitions_of(tn):
            raise NotAllowedError("Termination of a partitioned topic is not allowed: terminate its partitions")
        ledger_id, entry_id = await ctx.service.terminate_topic(tn)
        return {"ledgerId": ledger_id, "entryId": entry_id, "partitionIndex": -1}

    async def unload(self, tn: TopicName) -> int:
        """Unload a topic (each partition of a partitioned one): its producers and consumers are
        closed by the broker, so their clients look it up and connect again. Returns how many were
        closed; NotFoundError when the topic does not exist."""
        ctx = self.ctx
        await ctx.existing_read(tn)
        names = [str(p) for p in ctx.partitions(tn)] if ctx.partitions_of(tn) else [str(tn)]
        closed = 0
        for name in names:
            topic = ctx.service.topics.get(name)
            if topic is None:
                continue  # not loaded: nothing is connected to it
            for producer in list(topic.producers.values()):
                producer.close_by_broker()
                closed += 1
            for sub in list(topic.subscriptions.values()):
                for consumer in list(sub.consumers):
                    consumer.close_by_broker()
                    closed += 1
        return closed

    async def trigger_compaction(self, tn: TopicName) -> None:
        """Start compacting a topic in the background; its progress shows in compaction_status."""
        ctx = self.ctx
        ctx.persistent_only(tn, "Compaction")
        await ctx.existing_read(tn)
        # a partitioned topic: each existing partition is compacted (and reports its own status)
        targets = [p for p in ctx.partitions(tn) if await ctx.topic_exists_read(p)] if ctx.partitions_of(tn) else [tn]
        if any(str(t) in ctx.service.compactor.running for t in targets):
            raise ConflictError("Compaction already in progress")
        await ctx.write(ctx.metadata.put_kv, COMPACTION_PREFIX + str(tn), json.dumps({"requestedAt": time.time()}).encode())
        for target in targets:
            await ctx.service.trigger_compaction(target)

    def compaction_status(self, tn: TopicName) -> dict[str, Any]:
        """What a compactor recorded under ``compaction-status/<topic>``; NOT_RUN until one exists."""
        self.ctx.existing(tn)
        raw = self.ctx.metadata.get_kv(COMPACTION_STATUS_PREFIX + str(tn))
        if raw:
            try:
                status = json.loads(raw)
                return {"status": status.get("status", "NOT_RUN"), "lastError": status.get("lastError", "")}
            except ValueError:
                pass
        return {"status": "NOT_RUN", "lastError": ""}

    async def lookup(self, tn: TopicName, http_port: int | None = None) -> dict[str, Any]:
        """Where clients find the topic: always this broker (its TLS URLs for clients that use TLS), the
        transaction coordinators' partitions included (their namespace need not exist)."""
        if not is_transaction_coordinator_assign(tn):
            await self.ctx.namespace_read(tn.namespace)
        config = self.ctx.config
        broker_url = config.broker_service_url
        http_url = f"http://{config.service_host}:{config.http_port or http_port or 0}"
        if not config.http_port and config.web_service_url_tls:
            http_url = config.web_service_url_tls
        return {
            "brokerUrl": broker_url,
            "brokerUrlTls": config.broker_service_url_tls or broker_url,
            "httpUrl": http_url,
            "httpUrlTls": config.web_service_url_tls or http_url,
            "nativeUrl": broker_url,
        }
