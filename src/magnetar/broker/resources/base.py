"""What every admin resource shares: the service, names, existence checks and topic loading.

Broker state is read and changed on the broker's event loop (the HTTP server shares it), without
locks; the methods that need a loaded topic are coroutines, since a topic not loaded loads in the
broker's load threads (:meth:`BrokerService.load_topic
<magnetar.broker.service.BrokerService.load_topic>`). The metadata store has one writer, the
metadata thread: an admin write (its checks, its read-modify-write and its commit) is a job there
(:meth:`ResourceContext.write`: the REST routes hand the resources' writing methods to it), and what
it changes in the broker's memory is done back on the loop (:meth:`ResourceContext.on_loop`).
"""

from __future__ import annotations

import asyncio
import contextvars
import re
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, TypeVar

from magnetar.broker.config import BrokerConfig
from magnetar.broker.resources.errors import (
    NotAllowedError,
    NotFoundError,
    NotReadyError,
    PreconditionFailedError,
)
from magnetar.protocol.topic_name import InvalidTopicNameError, TopicName
from magnetar.storage import MetadataStore

if TYPE_CHECKING:
    from magnetar.broker.service import BrokerService
    from magnetar.broker.subscriptions.subscription import Subscription
    from magnetar.broker.topics.base import Topic

#: a tenant, namespace or cluster name: Pulsar's NamedEntity characters ([-=:.] and ASCII word
#: characters, as Java's ``\w``); Pulsar sets no length limit, magnetar 255 (a file name's)
NAME = re.compile(r"^[-=:.\w]{1,255}$", re.ASCII)
U64 = (1 << 64) - 1
#: MessageId.latest of the Java client: (Long.MAX_VALUE, Long.MAX_VALUE)
LATEST_LEDGER = (1 << 63) - 1

T = TypeVar("T")

#: within a job of :meth:`ResourceContext.write`: what it asked to run on the loop once it is done
_LOOP_ACTIONS: contextvars.ContextVar[list[Callable[[], object]] | None] = contextvars.ContextVar(
    "magnetar_resource_loop_actions", default=None)

COMPACTION_PREFIX = "compaction/"
COMPACTION_STATUS_PREFIX = "compaction-status/"


class ResourceContext:
    """One broker service as the admin resources see it."""

    def __init__(self, service: BrokerService) -> None:
        self.service = service

    @property
    def metadata(self) -> MetadataStore:
        """The metadata store; NotReadyError before the service has opened it."""
        meta = self.service.metadata
        if meta is None:
            raise NotReadyError("Broker is not ready")
        return meta

    @property
    def config(self) -> BrokerConfig:
        """The broker's settings."""
        return self.service.config

    async def off_loop(self, job: Callable[..., T], *args: object) -> T:
        """``job(*args)`` on the metadata thread, made durable there before it returns (the namespace
        and tenant writes); otherwise as :meth:`write`."""
        return await self._on_metadata_thread(job, args, contextvars.Context())

    async def write(self, job: Callable[..., T], *args: object) -> T:
        """``job(*args)`` on the metadata thread, its result or what it raised back on the loop: every
        admin write of the metadata store is such a job, run one at a time in submission order, so a
        read-modify-write (a namespace's policies) reads, changes and commits there with no other
        write in between and none is lost. The job runs in the caller's context: within
        :func:`~magnetar.storage.metadata.deferring_sync` (an HTTP write) its commits leave their
        fsync to :class:`~magnetar.broker.metadata_sync.MetadataSync`, which covers several writes
        with one; otherwise they are made durable in the job. What the job hands to :meth:`on_loop`
        (the broker's in-memory state: policies applied to loaded topics) runs on the loop once it
        is done, before the caller resumes, also when it raised after a commit. Inline when the
        service has no metadata thread (not started)."""
        return await self._on_metadata_thread(job, args, contextvars.copy_context())

    async def _on_metadata_thread(self, job: Callable[..., T], args: tuple[object, ...],
                                  context: contextvars.Context) -> T:
        persistence = getattr(self.service, "persistence", None)
        if persistence is None:
            return job(*args)
        actions: list[Callable[[], object]] = []
        context.run(_LOOP_ACTIONS.set, actions)
        done = persistence.run(partial(context.run, job, *args))

        def run_actions(_: object) -> None:
            for action in actions:
                action()

        done.add_done_callback(run_actions)
        # shielded: a caller cancelled (a client gone) leaves the job and its loop actions to end
        return await asyncio.shield(done)

    @staticmethod
    async def read(job: Callable[..., T], *args: object) -> T:
        """``job(*args)`` in a worker thread (its own read connection of the store), its result back on
        the loop: for an admin read whose answer is not in the store's memory (tenants, clusters,
        lists of rows, key/value rows), so that the loop waits for no SQLite read. In WAL mode it sees
        every write committed before it began; it neither waits for the metadata thread's jobs nor
        holds them up."""
        return await asyncio.to_thread(job, *args)

    def on_loop(self, action: Callable[..., object], *args: object) -> None:
        """``action(*args)`` on the loop: at once there, or (within a :meth:`write` job, on the
        metadata thread) once the job is done."""
        actions = _LOOP_ACTIONS.get()
        if actions is None:
            action(*args)
        else:
            actions.append(partial(action, *args))

    def policies_changed(self, ns: str | None) -> None:
        """Let the broker apply changed policies to its loaded topics (when it knows how), on the loop."""
        hook = getattr(self.service, "policies_changed", None)
        if hook is not None:
            self.on_loop(hook, ns)

    # -- names -----------------------------------------------------------------------------
    @staticmethod
    def namespace_name(tenant: str, namespace: str) -> str:
        """``tenant/namespace`` after checking both parts are valid names."""
        if not NAME.match(tenant or "") or not NAME.match(namespace or ""):
            raise PreconditionFailedError("Namespace name is not valid")
        return f"{tenant}/{namespace}"

    @staticmethod
    def topic_name(domain: str, tenant: str, namespace: str, topic: str) -> TopicName:
        """The topic of an admin path, after checking the name is valid."""
        if not NAME.match(tenant or "") or not NAME.match(namespace or ""):
            raise PreconditionFailedError("Namespace name is not valid")
        try:
            return TopicName.parse(f"{domain}://{tenant}/{namespace}/{topic}")
        except InvalidTopicNameError as exc:
            raise PreconditionFailedError(f"Topic name is not valid: {exc}") from None

    @staticmethod
    def parse_topic(name: str) -> TopicName:
        """A full or short topic name, parsed."""
        try:
            return TopicName.parse(name)
        except InvalidTopicNameError as exc:
            raise PreconditionFailedError(f"Topic name is not valid: {exc}") from None

    # -- existence -------------------------------------------------------------------------
    def check_namespace(self, ns: str) -> dict:
        """The stored policies of an existing namespace; NotFoundError for an unknown tenant or namespace."""
        policies = self.metadata.get_namespace(ns)
        if policies is None:
            tenant = ns.split("/", 1)[0]
            if self.metadata.get_tenant(tenant) is None:
                raise NotFoundError("Tenant does not exist")
            raise NotFoundError("Namespace does not exist")
        return policies

    async def namespace_read(self, ns: str) -> dict:
        """:meth:`check_namespace` on the loop: the policies from the store's memory; for a namespace that
        does not exist, its tenant (which tells the two NotFoundErrors apart) read in a worker thread."""
        policies = self.metadata.get_namespace(ns)
        if policies is None:
            return await self.read(self.check_namespace, ns)
        return policies

    def topic_exists(self, tn: TopicName) -> bool:
        """Whether a non-partitioned topic (or a partition) exists."""
        name = str(tn)
        return name in self.service.topics or (tn.persistent and self.metadata.get_topic(name) is not None)

    async def topic_exists_read(self, tn: TopicName) -> bool:
        """:meth:`topic_exists`, the row of a topic not loaded read in a worker thread (:meth:`read`)."""
        if str(tn) in self.service.topics:
            return True
        return tn.persistent and await self.read(self.metadata.get_topic, str(tn)) is not None

    async def existing_read(self, tn: TopicName) -> None:
        """:meth:`existing` on the loop: what is not in the store's memory (the row of a topic not loaded,
        the tenant of a namespace that does not exist) read in a worker thread."""
        await self.namespace_read(tn.namespace)
        if self.partitions_of(tn) == 0 and not await self.topic_exists_read(tn):
            raise NotFoundError(f"Topic {tn} not found")

    def partitions_of(self, tn: TopicName) -> int:
        """The partitions of a partitioned topic; 0 when ``tn`` is not one."""
        return self.metadata.get_partitioned_topic(str(tn)) or 0

    def partitions(self, tn: TopicName) -> list[TopicName]:
        """The names of every partition of a partitioned topic."""
        return [tn.partition(i) for i in range(self.partitions_of(tn))]

    def existing(self, tn: TopicName) -> None:
        """NotFoundError unless the namespace and the (partitioned or not) topic exist."""
        self.check_namespace(tn.namespace)
        if not self.topic_exists(tn) and self.partitions_of(tn) == 0:
            raise NotFoundError(f"Topic {tn} not found")

    @staticmethod
    def persistent_only(tn: TopicName, what: str) -> None:
        """NotAllowedError for a non-persistent topic: ``what`` needs stored messages."""
        if not tn.persistent:
            raise NotAllowedError(f"{what} is not supported on non-persistent topics: nothing is stored")

    # -- loaded topics ---------------------------------------------------------------------
    async def load_topic(self, tn: TopicName) -> Topic:
        """The loaded non-partitioned topic (or partition); NotFoundError when it does not exist. A topic
        not loaded loads off the loop; a load under way (a client's) is awaited, not refused."""
        await self.namespace_read(tn.namespace)
        if self.partitions_of(tn) > 0:
            raise NotFoundError(f"Topic {tn} not found: it is a partitioned topic, use its partitions")
        if not await self.topic_exists_read(tn):
            raise NotFoundError(f"Topic {tn} not found")
        return await self.service.load_topic(tn, create=False)

    async def load_or_create(self, tn: TopicName) -> Topic:
        """The topic, created when it does not exist and auto topic creation is on."""
        if not self.config.allow_auto_topic_creation and not await self.topic_exists_read(tn):
            raise NotFoundError(f"Topic {tn} not found")
        return await self.service.load_topic(tn, create=True)

    async def targets(self, tn: TopicName) -> list[Topic]:
        """The loaded topics an operation on ``tn`` applies to: itself, or its existing partitions."""
        if self.partitions_of(tn) == 0:
            return [await self.load_topic(tn)]
        await self.namespace_read(tn.namespace)
        return [await self.load_topic(p) for p in self.partitions(tn) if await self.topic_exists_read(p)]

    @staticmethod
    def subscription(topic: Topic, sub: str) -> Subscription:
        """A subscription of a loaded topic; NotFoundError when it has none of that name."""
        subscription = topic.subscriptions.get(sub)
        if subscription is None:
            raise NotFoundError(f"Subscription {sub} not found for topic {topic.name}")
        return subscription

    async def subscriptions_named(self, tn: TopicName, sub: str) -> list[tuple[Topic, Subscription]]:
        """Every (topic, subscription) named ``sub`` on ``tn`` or its partitions; NotFoundError when none."""
        found = [(t, t.subscriptions[sub]) for t in await self.targets(tn) if sub in t.subscriptions]
        if not found:
            raise NotFoundError(f"Subscription {sub} not found for topic {tn}")
        return found
