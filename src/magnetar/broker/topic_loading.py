"""Loading topics without blocking the broker's loop: one load per topic name however many ask.

A load has two halves. The storage half runs in a ``magnetar-load`` thread: the namespace and
creation checks, the metadata row (created when allowed), the opened ledger and what is stored of
its cursors, deduplication, termination and policies. The loop half builds the topic from that and
registers it in the broker's topic registry. :class:`TopicLoader` owns the loads under way, their
threads and the count of policy changes that tells a load its policies went stale while it read them.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from magnetar.broker.errors import BrokerError
from magnetar.protocol.enums import ServerError
from magnetar.protocol.topic_name import TopicName
from magnetar.storage.ledger import ManagedLedger

if TYPE_CHECKING:
    from collections.abc import Callable

    from magnetar.broker.commit import GroupCommitter
    from magnetar.broker.config import BrokerConfig
    from magnetar.broker.cursor_persistence import CursorPersistence
    from magnetar.broker.policies.resolution import TopicPolicies
    from magnetar.broker.topics.base import Topic
    from magnetar.broker.topics.compaction import Compactor
    from magnetar.broker.topics.persistent import PersistentTopic
    from magnetar.storage.compacted import CompactedView
    from magnetar.storage.ledger import CacheBudget
    from magnetar.storage.managed_cursor import ManagedCursor
    from magnetar.storage.metadata import MetadataStore
    from magnetar.storage.read_thread import ReadThread

log = logging.getLogger("magnetar.broker")


def terminated_key(topic: str) -> str:
    """The metadata key that marks a topic terminated."""
    return f"terminated/{topic}"


class LoadingBroker(Protocol):
    """What a topic load reads of its broker and calls on it (the broker service)."""

    config: BrokerConfig
    topics: dict[str, Topic]
    metadata: MetadataStore | None
    running: bool
    cache_budget: CacheBudget
    committer: GroupCommitter
    persistence: CursorPersistence
    #: reads segment files for dispatch off the loop
    read_thread: ReadThread
    producer_name_prefix: str

    @property
    def compactor(self) -> Compactor:
        """Opens the compacted views of topics being loaded (in the load threads)."""

    def check_namespace(self, topic_name: TopicName) -> None:
        """BrokerError TopicNotFound unless the topic's tenant and namespace exist."""

    def check_not_partitioned(self, topic_name: TopicName) -> None:
        """BrokerError NotAllowedError when ``topic_name`` is a partitioned topic."""

    def auto_topic_creation(self, namespace: str) -> tuple[bool, int]:
        """(auto-creation allowed, partitions of auto-created topics) for a namespace."""

    def check_topic_limit(self, namespace: str, adding: int) -> None:
        """BrokerError NotAllowedError when ``adding`` topics would pass the namespace's limit."""

    def apply_policies(self, topic: Topic) -> None:
        """Resolve a topic's policies and apply what changes at once."""

    def reap(self, job: Callable[[], None]) -> None:
        """Run a ledger's file clean-up job off the loop."""

    def open_cursor(self, topic: PersistentTopic, name: str, mark_delete: int) -> ManagedCursor:
        """A new durable cursor on a topic's ledger."""

    def maybe_trim(self, topic: PersistentTopic) -> None:
        """Release whole segments every durable cursor has acknowledged."""

    def topic_loaded(self, topic: Topic) -> None:
        """A topic was registered (its replicators start when its policy names other clusters)."""


@dataclass
class PreparedTopic:
    """What the topic-load thread read of a stored topic, for the loop to build the topic from."""

    ledger: ManagedLedger
    #: subscription name -> persisted cursor state
    cursors: dict[str, bytes]
    #: (last sequence id of each producer, the entry id they were taken at)
    dedup: tuple[dict[str, int], int]
    terminated: bool
    policies: TopicPolicies
    #: the topic's compacted view, opened here (its index read), not on the loop
    compacted: CompactedView | None = None
    #: what the transaction component read of the topic (its replayed buffer, its pending acks)
    transactions: Any = None
    #: when the topic was created (epoch seconds, from its metadata row; None: the row is gone)
    created_at: float | None = None

    def close(self) -> None:
        """The topic was not registered: close what was opened for it."""
        self.ledger.close()
        if self.compacted is not None:
            self.compacted.close()


#: the modules the loop half of a load uses, by persistence: imported first in a load thread
_LOOP_HALF_MODULES = {
    True: ("magnetar.broker.topics.persistent", "magnetar.broker.topics.compaction"),
    False: ("magnetar.broker.topics.nonpersistent",),
}


def _import_loop_half(persistent: bool) -> None:
    """(a load thread) Import what the loop half of a load of such a topic imports, so that the loop
    finds it imported: the first load's imports read 20-30 files (.py stat'ed, .pyc read; the probe
    of tests/test_architecture.py), which a load thread may wait for and the loop may not."""
    for name in _LOOP_HALF_MODULES[persistent]:
        importlib.import_module(name)


class TopicLoader:
    """Loads and registers a broker's topics: the storage half in load threads, the rest on the loop."""

    def __init__(self, broker: LoadingBroker) -> None:
        self.broker = broker
        # Runs the blocking part of topic loads (metadata commits, ledger opens), so that a congested
        # disk stalls the loads and not the loop. Four: one load's file work overlaps another's commit
        # (one thread: 3.9 ms a topic against 2.6, benchmarks/PROFILES.md section 24).
        self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="magnetar-load")
        #: the loads under way by topic name: (the task every caller of the name awaits, whether it creates)
        self._loading: dict[str, tuple[asyncio.Task[Topic], bool]] = {}
        #: counts policy changes, so a load whose thread resolved policies before one re-resolves them
        self._policy_changes = 0
        #: ledger ids of non-persistent topics count down from the top, away from stored ones
        self._non_persistent_ids = 0
        #: opens the compacted views of the topics loaded (the broker's, once a persistent topic loads)
        self._compactor: Compactor | None = None
        #: whether the modules of persistent (True) and non-persistent (False) topics were imported
        self._imported: set[bool] = set()

    async def load(self, topic_name: TopicName, create: bool = True) -> Topic:
        """The loaded topic, loading or creating it as needed without blocking the loop. Concurrent
        loads of one topic share one load (one Topic); a refusal (TopicNotFound, NotAllowedError...)
        is raised to every caller it concerns."""
        name = str(topic_name)
        while True:
            topic = self.broker.topics.get(name)
            if topic is not None:
                return topic
            pending = self._loading.get(name)
            if pending is None:
                if not self.broker.running:
                    raise BrokerError(ServerError.ServiceNotReady, "the broker is stopping")
                # a task of its own: a caller that goes away does not cancel the load the others await
                pending = (asyncio.create_task(self._load(topic_name, create), name=f"load {name}"), create)
                self._loading[name] = pending
            task, creating = pending
            try:
                topic = await asyncio.shield(task)
            except BrokerError as exc:
                # a load that did not create may not speak for one that does: try again then
                if creating or not create or exc.code != ServerError.TopicNotFound:
                    raise
                continue
            if topic.closed:
                raise BrokerError(ServerError.ServiceNotReady, f"topic {name} was deleted while it loaded")
            return topic

    async def wait_for(self, name: str) -> None:
        """Until the load of ``name`` under way (if any) has ended, however it ended."""
        pending = self._loading.get(name)
        if pending is not None:
            await asyncio.gather(pending[0], return_exceptions=True)

    async def wait_all(self) -> None:
        """Until every load under way has ended (the broker stops: they register nothing now)."""
        await asyncio.gather(*(task for task, _ in list(self._loading.values())), return_exceptions=True)

    def shutdown(self) -> None:
        """Stop the load threads (after :meth:`wait_all`)."""
        self._executor.shutdown(wait=True)

    def policies_changed(self) -> None:
        """Count a policy change: loads whose thread resolved policies before it re-resolve them."""
        self._policy_changes += 1

    async def _load(self, topic_name: TopicName, create: bool) -> Topic:
        """One load: prepared in the topic-load thread, registered on the loop."""
        policy_changes = self._policy_changes
        loop = asyncio.get_running_loop()
        try:
            if topic_name.persistent not in self._imported:
                # the loop half's modules, imported here: an import on the loop reads their files
                await loop.run_in_executor(self._executor, _import_loop_half, topic_name.persistent)
                self._imported.add(topic_name.persistent)
            if topic_name.persistent:
                self._compactor = self.broker.compactor  # made here, on the loop (its start writes metadata)
            prepared = await loop.run_in_executor(self._executor, self.prepare, topic_name, create)
            topic = self._register_loaded(topic_name, prepared)
            if prepared is not None and self._policy_changes != policy_changes:
                self.broker.apply_policies(topic)  # a change made while the thread read the old policies
            return topic
        finally:
            del self._loading[str(topic_name)]

    def _register_loaded(self, topic_name: TopicName, prepared: PreparedTopic | None) -> Topic:
        """Register what the load thread prepared, unless the broker stopped meanwhile (then the
        ledger it opened is closed and ServiceNotReady raised: nothing stays half-registered)."""
        if not self.broker.running:
            if prepared is not None:
                prepared.close()
            raise BrokerError(ServerError.ServiceNotReady, "the broker is stopping")
        try:
            if prepared is None:
                return self._create_non_persistent(topic_name)
            return self._load_persistent(topic_name, prepared)
        except BaseException:
            if prepared is not None:
                prepared.close()  # not registered: nothing else would ever close it
            raise

    def prepare(self, topic_name: TopicName, create: bool) -> PreparedTopic | None:
        """The blocking part of a load (the load thread): the namespace and creation checks, the metadata
        row (created when allowed), the opened ledger and what is stored of its cursors, deduplication,
        termination and policies. None for a non-persistent topic (only checked)."""
        broker = self.broker
        metadata = broker.metadata
        assert metadata is not None
        name = str(topic_name)
        broker.check_namespace(topic_name)
        if not topic_name.persistent:
            broker.check_not_partitioned(topic_name)
            return None
        ledger_id = metadata.get_topic(name)
        if ledger_id is None:
            if not create or not broker.auto_topic_creation(topic_name.namespace)[0]:
                raise BrokerError(ServerError.TopicNotFound, f"topic {name} does not exist")
            broker.check_not_partitioned(topic_name)
            if topic_name.partition_index < 0:  # a partitioned topic's partitions were counted at its creation
                broker.check_topic_limit(topic_name.namespace, 1)
            ledger_id = metadata.get_or_create_topic(name)
        return self._read_stored_topic(topic_name, ledger_id)

    def _read_stored_topic(self, topic_name: TopicName, ledger_id: int) -> PreparedTopic:
        """Open a stored topic's ledger and read its cursors, sequence ids, termination and policies."""
        # with the first topic, not at start-up: 10 ms CPU (python -X importtime)
        from magnetar.broker.policies.resolution import resolve

        broker = self.broker
        config, metadata = broker.config, broker.metadata
        assert metadata is not None
        name = str(topic_name)
        ledger = ManagedLedger.open(
            config.data_dir / "ledgers" / str(ledger_id),
            ledger_id,
            segment_max_bytes=config.segment_max_bytes,
            min_rollover_seconds=config.segment_min_rollover_minutes * 60,
            max_rollover_seconds=config.segment_max_rollover_minutes * 60,
            cache_max_bytes=config.entry_cache_max_bytes,
            cache_budget=broker.cache_budget,
            label=name,
            reaper=broker.reap,
            reads=broker.read_thread,
        )
        compacted = None
        try:
            compacted = self._compactor.open_stored_view(name, ledger_id) if self._compactor else None
            transactions = getattr(broker, "transactions", None)
            return PreparedTopic(
                ledger,
                metadata.load_cursors(name),
                broker.persistence.dedup_snapshot(name),
                metadata.get_kv(terminated_key(name)) is not None,
                resolve(metadata, config, topic_name),
                compacted,
                transactions.read_topic_state(name, ledger) if transactions is not None else None,
                (metadata.get_topic_info(name) or {}).get("created_at"),
            )
        except BaseException:
            ledger.close()
            if compacted is not None:
                compacted.close()
            raise

    def _create_non_persistent(self, topic_name: TopicName) -> Topic:
        """A new non-persistent topic, registered."""
        # with the first non-persistent topic, not at start-up: 14 ms CPU (python -X importtime)
        from magnetar.broker.topics.nonpersistent import NonPersistentTopic

        self._non_persistent_ids -= 1
        topic = NonPersistentTopic(
            topic_name,
            self._non_persistent_ids & ((1 << 63) - 1),
            config=self.broker.config,
            producer_name_prefix=self.broker.producer_name_prefix,
        )
        self.broker.topics[str(topic_name)] = topic
        self.broker.topic_loaded(topic)  # its replicators start when its replication policy names other clusters
        return topic

    def _load_persistent(self, topic_name: TopicName, prepared: PreparedTopic) -> Topic:
        """Build a stored topic from its opened ledger and stored state (on the loop), open its
        compacted view, and register it."""
        # with the first topic, not at start-up: 12 ms CPU (python -X importtime)
        from magnetar.broker.topics.persistent import PersistentTopic

        broker = self.broker
        name = str(topic_name)
        ledger = prepared.ledger
        topic = PersistentTopic(
            topic_name,
            ledger,
            config=broker.config,
            committer=broker.committer,
            cursors=broker,
            producer_name_prefix=broker.producer_name_prefix,
        )
        cursors = broker.persistence.cursors
        for sub_name, data in prepared.cursors.items():
            topic.restore_subscription(cursors.restore(ledger, name, sub_name, data))
        topic.restore_sequence_ids(*prepared.dedup)
        topic.apply_policies(prepared.policies)
        topic.terminated = prepared.terminated
        if prepared.created_at is not None:
            topic.created_ms = int(prepared.created_at * 1000)
        topic.compacted = prepared.compacted
        if prepared.transactions is not None:
            broker.transactions.attach(topic, prepared.transactions)  # type: ignore[attr-defined]
        broker.topics[name] = topic
        broker.topic_loaded(topic)
        log.debug("loaded topic %s (ledger %d, entries %d..%d)", name, ledger.ledger_id, ledger.first_entry_id, ledger.last_entry_id)
        return topic
