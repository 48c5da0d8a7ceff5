"""The broker service: topic registry, metadata, group commit and background work.

One asyncio loop owns every piece of broker state; only fsync, the metadata store's cursor writes
and the storage part of topic loads (:class:`~magnetar.broker.topic_loading.TopicLoader`) run in
worker threads, and their results come back to the loop. What the broker knows of names and namespaces is its base,
:class:`~magnetar.broker.topic_directory.TopicDirectory`; cursors are persisted by :class:`~magnetar.broker.cursor_persistence.CursorPersistence`.
The modules needed only once a topic exists (topics, subscriptions, compaction, policy resolution,
lifecycle) load with the first topic: a broker answers its first CONNECT without them.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, cast

from magnetar import __version__
from magnetar.broker.commit import GroupCommitter
from magnetar.broker.config import BrokerConfig
from magnetar.broker.cursor_persistence import CursorPersistence
from magnetar.broker.errors import BrokerError
from magnetar.broker.metadata_sync import MetadataSync
from magnetar.broker.replication.names import is_replicator
from magnetar.broker.schemas.registry import SchemaRegistry
from magnetar.broker.schemas.topics import TopicSchemas
from magnetar.broker.security.authentication import AuthenticationService
from magnetar.broker.security.authorization import AuthorizationService
from magnetar.broker.security.errors import AuthenticationError
from magnetar.broker.topic_directory import TopicDirectory
from magnetar.broker.topic_loading import TopicLoader, terminated_key
from magnetar.net.transport import flushed_at_exit
from magnetar.protocol.enums import ServerError
from magnetar.protocol.topic_name import TopicName
from magnetar.storage.data_format import open_format
from magnetar.storage.dir_lock import DataDirLock
from magnetar.storage.ledger import CacheBudget
from magnetar.storage.managed_cursor import ManagedCursor
from magnetar.storage.metadata import MetadataStore, deferring_sync
from magnetar.storage.metadata_schema import metadata_problem
from magnetar.storage.read_thread import ReadThread

if TYPE_CHECKING:
    from collections.abc import Callable

    from magnetar.broker.replication.link import RemoteLink
    from magnetar.broker.replication.manager import ReplicationManager
    from magnetar.broker.topics.base import Topic
    from magnetar.broker.topics.compaction import Compactor
    from magnetar.broker.topics.persistent import PersistentTopic
    from magnetar.broker.transactions.service import TransactionService
    from magnetar.broker.transport import ClientSession

log = logging.getLogger("magnetar.broker")

SERVER_VERSION = f"magnetar-{__version__}"
T = TypeVar("T")
#: the metadata keys of compaction statuses (``magnetar.broker.topics.compaction.STATUS_PREFIX``)
_COMPACTION_STATUS_PREFIX = "compaction-status/"


def _remove_tree(path: Path) -> None:
    """Remove the directory ``path`` with everything in it, ignoring errors (a clean-up job: the reaper thread)."""
    import shutil  # here, off the loop: shutil loads bz2, lzma and zlib, 4-5 ms of every broker start at the top

    shutil.rmtree(path, ignore_errors=True)


class BrokerService(TopicDirectory):
    """Everything a standalone broker holds, independent of listeners and sockets."""

    def __init__(self, config: BrokerConfig) -> None:
        super().__init__(config)
        self.instance_id = os.getpid() % 100000
        self.connections: set[ClientSession] = set()
        #: connections not read from until storage catches up with their publishes
        self.paused_connections: set[ClientSession] = set()
        #: bytes appended and not yet acknowledged to producers, over all connections
        self.pending_publish_bytes = 0
        #: shared by every topic's entry cache
        self.cache_budget = CacheBudget(config.entry_cache_total_bytes)
        #: the schema registry and the schema rules of topics (set in start())
        self.schemas: TopicSchemas
        self.committer: GroupCommitter
        # Closes and unlinks the files of trimmed segments and deleted ledgers (tens of ms per 64 MiB
        # segment on ext4). One worker: files go oldest first, so a crash never leaves a hole.
        self._reap_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="magnetar-reap")
        #: loads and registers topics, their storage half in load threads
        self.topic_loader = TopicLoader(self)
        #: the durable cursors and their persistence (set in start())
        self.persistence: CursorPersistence
        self._replication: ReplicationManager | None = None
        self._tasks: list[asyncio.Task] = []
        #: this broker's hold on its data directory (taken in start(), released by stop())
        self._dir_lock: DataDirLock
        self._compactor: Compactor | None = None
        self.started_at = time.time()
        self.running = False
        #: names of producers that did not choose one: this prefix, then a number
        self.producer_name_prefix = f"{config.cluster_name}-{self.instance_id}"
        #: who a client is (None when authentication is off); loads keys and htpasswd now
        self.authentication: AuthenticationService | None = None
        #: what a role may do (None when authorization is off); reads grants from the store every time
        self.authorization: AuthorizationService | None = None
        #: the transaction coordinators, buffers and pending acks (None: transactions disabled)
        self.transactions: TransactionService | None = None
        self._load_security()

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        """Lock the data directory (DataDirLockedError when another broker holds it: nothing in it is
        touched then), open the metadata store and start background tasks."""
        self._dir_lock = DataDirLock.acquire(self.config.data_dir)
        try:
            self._open_storage()
        except BaseException:
            self._dir_lock.release()
            raise
        if self.config.transaction_coordinator_enabled:
            # not loaded by a broker with transactions off: 5 ms CPU (python -X importtime)
            from magnetar.broker.transactions.service import TransactionService

            self.transactions = TransactionService(self)
            await self.transactions.start()
        if self.metadata.list_kv(_COMPACTION_STATUS_PREFIX):
            await self.compactor.recorded()  # a compaction a crashed broker left RUNNING is marked ERROR now

    def _open_storage(self) -> None:
        """Check the (locked) data directory's format (DataFormatError: newer than this broker), open its
        metadata and start the committer and background tasks."""
        data_dir = self.config.data_dir
        open_format(data_dir)
        (data_dir / "ledgers").mkdir(exist_ok=True)
        self._salvage_damaged_metadata(data_dir)
        self.metadata = MetadataStore(data_dir / "metadata.db")
        if self.config.security.authentication_enabled:
            self._ensure_secured_defaults()
        else:
            self.metadata.ensure_defaults(self.config.cluster_name)
        self.persistence = CursorPersistence(self.config, self.metadata, self.topics, self.maybe_trim)
        #: the fsync of admin calls' metadata writes, on the metadata thread (metadata_sync.py)
        self.metadata_sync = MetadataSync(self.metadata, self.persistence.run)
        # new versions committed by metadata jobs, the histories in memory changed on the loop after them
        self.schemas = TopicSchemas(self.metadata, self.config, SchemaRegistry(self.metadata, jobs=self.metadata_job))
        loop = asyncio.get_running_loop()
        self.committer = GroupCommitter(loop, fsync=self.config.fsync == "always", completion_scope=flushed_at_exit)
        #: reads segment files for dispatch off the loop (storage/read_thread.py)
        self.read_thread = ReadThread(loop.call_soon_threadsafe)
        self.persistence.start()
        self._tasks.append(asyncio.create_task(self._keepalive_loop(), name="keepalive"))
        self._tasks.append(asyncio.create_task(self._lifecycle_loop(), name="lifecycle"))
        if self.config.entry_cache_eviction_seconds > 0:
            self._tasks.append(asyncio.create_task(self._cache_eviction_loop(), name="cache-eviction"))
        self.running = True

    @staticmethod
    def _salvage_damaged_metadata(data_dir: Path) -> None:
        """A damaged metadata.db is set aside and rebuilt from its readable rows, so the broker starts;
        what was found and what is lost goes to the log (as ``magnetar repair`` prints it)."""
        metadata_dir = data_dir / "metadata.db"
        if (problem := metadata_problem(metadata_dir)) is None:
            return
        log.error("metadata database in %s is damaged (%s): salvaging what is readable", metadata_dir, problem)
        # loaded for a damaged database only: storage.repair and storage.consistency are 3.4 ms of every start
        # (python -X importtime, load 4) and 1.5% of its instructions (callgrind)
        from magnetar.storage.repair import repair_data_dir

        report = repair_data_dir(data_dir)
        for line in report.found:
            log.error("metadata repair: %s", line)
        for line in report.repaired:
            log.warning("metadata repair: %s", line)

    async def stop(self) -> None:
        """Flush everything and close storage; connections must be closed before."""
        if not self.running:
            return
        self.running = False
        for task in self._tasks:
            task.cancel()
        # loads under way end before storage closes; they register nothing now
        await self.topic_loader.wait_all()
        if self._replication is not None:
            await self._replication.stop()
        await self.persistence.stop()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._compactor is not None:
            await self._compactor.stop()
        if self.transactions is not None:
            await self.transactions.stop()
        await self.committer.drain()
        if self.transactions is not None:
            self.transactions.close()
        for topic in self.topics.values():
            if topic.persistent:
                for sub in topic.subscriptions.values():
                    sub.cursor.mark_dirty()
        await self.persistence.flush()
        await self.metadata_sync.close()
        for topic in list(self.topics.values()):
            topic.close()
        self.topics.clear()
        assert self.metadata is not None
        self.metadata.close()
        self.committer.close()
        self.persistence.close()
        self.topic_loader.shutdown()
        self.read_thread.shutdown()
        self._reap_executor.shutdown(wait=True)
        self._dir_lock.release()

    @property
    def replication(self) -> ReplicationManager:
        """The geo-replicators of loaded topics (replication.manager); made with the first topic."""
        if self._replication is None:
            # with the first topic, not at start-up: 35 ms CPU (python -X importtime)
            from magnetar.broker.replication.manager import ReplicationManager

            assert self.metadata is not None
            self._replication = ReplicationManager(self.config, self.metadata, self.schemas, self.open_cursor, self.topics)
        return self._replication

    def replicators_of(self, topic_name: str) -> dict[str, RemoteLink]:
        """A topic's replicators by remote cluster (none before any topic loaded)."""
        return self._replication.replicators_of(topic_name) if self._replication is not None else {}

    @property
    def compactor(self) -> Compactor:
        """Runs topic compactions and opens compacted views (compaction.py); made on first use."""
        if self._compactor is None:
            # with the first compaction, not at start-up: 12 ms CPU (python -X importtime)
            from magnetar.broker.topics.compaction import Compactor

            self._compactor = Compactor(self.config, self.topics, getattr(self, "read_thread", None))
            if self.running and self.metadata is not None:
                self._compactor.start(self.metadata, self.metadata_job)
        return self._compactor

    async def metadata_job(self, job: Callable[[], T]) -> T:
        """``job()`` on the metadata thread, the store's one writer, after the jobs queued there, its
        result (or what it raised) back on the loop; its commits leave their fsync to
        :attr:`metadata_sync` (whoever answers after it waits for :meth:`MetadataSync.durable
        <magnetar.broker.metadata_sync.MetadataSync.durable>`: the HTTP layer does). Submitted at the
        call. Inline before the service started."""
        persistence = getattr(self, "persistence", None)
        if persistence is None or getattr(self, "metadata_sync", None) is None:
            return job()
        with deferring_sync():
            context = contextvars.copy_context()
        return await persistence.run(partial(context.run, job))

    def reap(self, job: Callable[[], None]) -> None:
        """The ledgers' reaper: run a file clean-up job in the reaper thread, off the loop."""
        try:
            self._reap_executor.submit(job)
        except RuntimeError:  # a topic deleted after stop(): no thread left, and no loop to stall
            job()

    # -- security ------------------------------------------------------------------------
    def _load_security(self) -> None:
        """Build the authentication and authorization services the settings turn on (before any listener
        opens); their modules (jwt, cryptography, bcrypt) are imported only then."""
        security = self.config.security
        if security.authentication_enabled:
            self.authentication = AuthenticationService.from_settings(security)
        if security.authorization_enabled:
            self.authorization = AuthorizationService(security, self.tenant_info, self.namespace_policies)

    def _ensure_secured_defaults(self) -> None:
        """As Pulsar's standalone with authentication on: the local cluster and tenant ``public``
        (administered by the superusers) always; ``public/default`` only when the broker client's
        credentials (brokerClientAuthenticationPlugin / Parameters) may create it, as Pulsar creates
        it through its own broker client."""
        assert self.metadata is not None
        security = self.config.security
        allowed = self._broker_client_may_administer()
        self.metadata.ensure_defaults(self.config.cluster_name, list(security.super_user_roles), namespace=allowed)
        if not allowed:
            log.warning("public/default not created: the broker client's credentials "
                        "(brokerClientAuthenticationPlugin / brokerClientAuthenticationParameters) are not a superuser's")

    def _broker_client_may_administer(self) -> bool:
        """Whether the broker client's credentials authenticate here as a role that may create namespaces."""
        # only a secured broker with a broker client asks: 2 ms CPU (python -X importtime)
        from magnetar.broker.replication.credentials import CredentialsError, client_credentials

        config = self.config
        try:
            creds = client_credentials(config.broker_client_authentication_plugin,
                                       config.broker_client_authentication_parameters)
        except CredentialsError as exc:
            log.error("broker client credentials: %s", exc)
            return False
        if self.authentication is None:
            return False
        try:
            if creds.certificate is not None:  # AuthenticationTls: the TLS provider's role, the certificate's CN
                # imported here: cryptography.x509 costs ~100 ms of start-up, paid only by a secured broker
                from cryptography import x509

                pem = Path(creds.certificate[0]).read_bytes()
                role = self.authentication.authenticate("tls", None, x509.load_pem_x509_certificate(pem)).role
            else:
                role = self.authentication.authenticate(creds.method or None, creds.data or None).role
        except (AuthenticationError, OSError, ValueError):
            return False
        security = config.security
        return not security.authorization_enabled or security.is_super_user(role)

    # -- topics --------------------------------------------------------------------------
    async def load_topic(self, topic_name: TopicName, create: bool = True) -> Topic:
        """The loaded topic, loading or creating it as needed without blocking the loop (the storage
        half in a load thread, see :class:`~magnetar.broker.topic_loading.TopicLoader`). Concurrent
        loads of one topic share one load; a refusal (TopicNotFound, NotAllowedError...) is raised
        to every caller it concerns."""
        return await self.topic_loader.load(topic_name, create)

    async def terminate_topic(self, topic_name: TopicName) -> tuple[int, int]:
        """Terminate a persistent topic for good; returns its last (ledger id, entry id)."""
        # with the first topic, not at start-up: 12 ms CPU (python -X importtime)
        from magnetar.broker.topics.persistent import PersistentTopic

        topic = await self.load_topic(topic_name, create=False)
        if not isinstance(topic, PersistentTopic):
            raise BrokerError(ServerError.NotAllowedError, f"{topic_name} is non-persistent: it cannot be terminated")
        assert self.metadata is not None
        # the marker first (a metadata job): a failed commit raises and leaves the topic as it was
        await self.metadata_job(partial(self.metadata.put_kv, terminated_key(topic.name), b"1"))
        ended: asyncio.Future[tuple[int, int]] = asyncio.get_running_loop().create_future()
        # once the publishes accepted before it completed (or failed)
        topic.terminate(lambda ledger_id, entry_id: ended.done() or ended.set_result((ledger_id, entry_id)))
        return await ended

    def topic_loaded(self, topic: Topic) -> None:
        """A topic was loaded: its replicators start (when its replication policy names other clusters)."""
        # the manager (and urllib, http.client, email with it: 35 ms CPU, 90-240 ms at load 4-7) only once a
        # topic replicates or holds a replicator's cursor to drop: a broker that never replicates never loads it
        if self._replication is not None or self._may_replicate(topic):
            self.replication.topic_loaded(topic)

    def _may_replicate(self, topic: Topic) -> bool:
        """Whether a loaded topic needs the replication manager: its policy names another cluster, or it
        holds a replicator's cursor (left by a policy that named one) that the manager removes."""
        # loaded with the first topic (topics/base.py), not at start-up: 20 ms CPU (python -X importtime)
        from magnetar.broker.policies.registry import REPLICATION_CLUSTERS
        from magnetar.broker.policies.resolution import effective

        assert self.metadata is not None
        clusters = effective(self.metadata, topic.topic_name, REPLICATION_CLUSTERS) or []
        local = self.config.cluster_name
        return any(c != local for c in clusters) or any(is_replicator(name) for name in topic.subscriptions)

    def policies_changed(self, namespace: str | None = None) -> None:
        """Re-resolve policies of loaded topics (of one namespace, or all) so they take effect live."""
        self.topic_loader.policies_changed()
        if self._replication is None and any(self._may_replicate(t) for t in list(self.topics.values())):
            self.replication  # noqa: B018 - made now: a loaded topic replicates from this change on
        if self._replication is not None:
            self._replication.policies_changed(namespace)
        for topic in list(self.topics.values()):
            if namespace is None or topic.topic_name.namespace == namespace:
                self.apply_policies(topic)

    def apply_policies(self, topic: Topic) -> None:
        """Resolve a topic's policies and apply what changes at once."""
        # with the first topic, not at start-up: 10 ms CPU (python -X importtime)
        from magnetar.broker.policies.resolution import resolve

        assert self.metadata is not None
        topic.apply_policies(resolve(self.metadata, self.config, topic.topic_name))

    # -- cursors -------------------------------------------------------------------------
    def open_cursor(self, topic: PersistentTopic, name: str, mark_delete: int) -> ManagedCursor:
        """A new durable cursor on a topic's ledger; it is persisted at once (its later changes
        within ``cursor_persist_delay_seconds`` or one mark-delete rate interval)."""
        return self.persistence.cursors.open(topic.ledger, topic.name, name, mark_delete)

    def maybe_trim(self, topic: Topic) -> None:
        """Release whole segments every durable cursor has acknowledged, as retention allows."""
        if topic.closed or not topic.persistent:
            return
        # with the first topic, not at start-up: 8 ms CPU (python -X importtime)
        from magnetar.broker.topics import lifecycle

        lifecycle.trim(topic)

    def check_lifecycle(self, topic: Topic) -> None:
        """Enforce a topic's message TTL, backlog quotas, retention and expiry now."""
        if topic.closed:
            return
        if not topic.persistent:
            self._expire_inactive(topic)
            return
        # with the first topic, not at start-up: 8 ms CPU (python -X importtime)
        from magnetar.broker.topics import lifecycle

        lifecycle.expire_messages(topic)
        exceeded = lifecycle.quota_exceeded(topic)
        if exceeded == "consumer_backlog_eviction":
            lifecycle.evict_backlog(topic)
            exceeded = None
        if exceeded is not None and topic.quota_blocked is None:
            log.info("backlog quota of %s exceeded (%s): disconnecting producers", topic.name, exceeded)
            topic.quota_blocked = exceeded
            for producer in list(topic.producers.values()):
                producer.close_by_broker()
        elif exceeded is None:
            topic.quota_blocked = None
        if lifecycle.compaction_due(topic):
            self.compactor.trigger(topic)
        lifecycle.trim(topic)
        self._expire_inactive(topic)

    def _expire_inactive(self, topic: Topic, now: float | None = None) -> None:
        """Delete subscriptions without consumers past their expiration time, and topics their
        inactive-topic policy deletes (both off by default)."""
        # with the first topic, not at start-up: 8 ms CPU (python -X importtime)
        from magnetar.broker.topics import lifecycle

        now = time.time() if now is None else now
        for name in lifecycle.expired_subscriptions(topic, now):
            log.info("deleting subscription %s of %s: no consumer for longer than its expiration time", name, topic.name)
            topic.remove_subscription(name)
        compacting = topic.name in self.compactor.running
        if not compacting and lifecycle.topic_inactive(topic, now):
            log.info("deleting inactive topic %s", topic.name)
            asyncio.get_running_loop().create_task(self._delete_inactive(topic.name))

    async def _delete_inactive(self, name: str) -> None:
        """Delete a topic the lifecycle found inactive; its metadata row's commit leaves the fsync to
        the metadata thread (:attr:`metadata_sync`), as an admin deletion's does: nobody waits for it."""
        with deferring_sync():
            await self.delete_topic_storage(name)

    async def trigger_compaction(self, topic_name: TopicName) -> asyncio.Task:
        """Start compacting a persistent topic in the background (or return the compaction running).

        Its status is kept under ``compaction-status/<topic>``: RUNNING, then SUCCESS or ERROR.
        """
        if not topic_name.persistent:
            raise BrokerError(ServerError.NotAllowedError, f"{topic_name} is non-persistent: it cannot be compacted")
        return await self.compactor.trigger_recorded(await self.load_topic(topic_name, create=False))

    async def compact(self, topic_name: TopicName) -> None:
        """Compact a topic now and wait until it is done (raises what made it fail)."""
        await asyncio.shield(await self.trigger_compaction(topic_name))

    async def _lifecycle_loop(self) -> None:
        interval = self.config.lifecycle_check_interval_seconds
        while True:
            await asyncio.sleep(interval)
            for topic in list(self.topics.values()):
                try:
                    self.check_lifecycle(topic)
                except Exception:
                    log.exception("lifecycle check of %s failed", topic.name)

    async def _cache_eviction_loop(self) -> None:
        """Entries leave the entry caches ``entry_cache_eviction_seconds`` after their append (checked
        twice per that period: an entry stays 1 to 1.5 times it). While no cache holds an entry the
        loop sleeps until one takes one (an idle broker does not wake for it)."""
        max_age = self.config.entry_cache_eviction_seconds
        budget = self.cache_budget
        filled = asyncio.Event()
        budget.on_filled = filled.set
        try:
            while True:
                if not budget.used:
                    filled.clear()
                    await filled.wait()
                await asyncio.sleep(max_age / 2)
                budget.age_out(time.monotonic(), max_age)
        finally:
            budget.on_filled = None

    # -- connections ---------------------------------------------------------------------
    async def _keepalive_loop(self) -> None:
        interval = self.config.keepalive_seconds
        while True:
            await asyncio.sleep(interval / 2)
            now = time.monotonic()
            for conn in list(self.connections):
                conn.check_keepalive(now, interval)

    def connection_opened(self, conn: ClientSession) -> str | None:
        """Register a client connection; returns why it is refused, if it is."""
        limit = self.config.max_connections
        if limit > 0 and len(self.connections) >= limit:
            return f"broker reached its maximum of {limit} connections"
        per_ip = self.config.max_connections_per_ip
        if per_ip > 0 and sum(1 for c in self.connections if c.peer_host == conn.peer_host) >= per_ip:
            return f"{conn.peer_host} reached its maximum of {per_ip} connections"
        self.connections.add(conn)
        return None

    def maybe_resume_reading(self) -> None:
        """Resume reading from paused connections once pending publish bytes fell low enough."""
        if self.pending_publish_bytes > self.config.max_pending_publish_bytes // 2:
            return
        limit = self.config.max_pending_publish_bytes_per_connection // 2
        for conn in list(self.paused_connections):
            if conn.pending_publish_bytes <= limit:
                conn.resume_reading()

    def connection_closed(self, conn: ClientSession) -> None:
        """Forget a client connection."""
        self.connections.discard(conn)

    # -- admin hooks ---------------------------------------------------------------------
    async def delete_topic_storage(self, name: str) -> bool:
        """Delete a topic: disconnect its producers and consumers, forget its loaded state, ledger
        files, persisted cursors and metadata row. Returns False when there was nothing to delete.

        Runs under the cursor-flush lock, so no cursor write of the topic is in flight. A load of the
        topic under way ends first (the topic it registers is deleted then).
        """
        assert self.metadata is not None
        await self.topic_loader.wait_for(name)
        if self._replication is not None:
            await self._replication.topic_closing(name)
        async with self.persistence.lock:
            # the row first, a metadata job: a failed commit raises and changes nothing in memory
            ledger_id, existed = await self.metadata_job(partial(self._delete_topic_row, name))
            topic = self.topics.pop(name, None)
            if topic is not None:
                for producer in list(topic.producers.values()):
                    producer.close_by_broker()
                for sub in list(topic.subscriptions.values()):
                    for consumer in list(sub.consumers):
                        consumer.close_by_broker()
            self.persistence.cursors.forget_topic(name)
            # non-persistent topics store nothing
            stored = cast("PersistentTopic", topic) if topic is not None and topic.persistent else None
            if topic is not None:
                topic.closed = True
            if stored is not None:
                stored.delete_ledger()
            elif ledger_id is not None:
                # stored but not loaded (e.g. since a restart): its segment files are on disk all the same
                self.reap(partial(_remove_tree, self.config.data_dir / "ledgers" / str(ledger_id)))
            if ledger_id is not None or stored is not None:
                self.compactor.forget(name, ledger_id if ledger_id is not None else stored.ledger_id, topic)
        return existed or topic is not None

    def _delete_topic_row(self, name: str) -> tuple[int | None, bool]:
        """(a metadata job) Delete a topic's row and cursors: (its ledger id, whether it existed)."""
        assert self.metadata is not None
        return self.metadata.get_topic(name), self.metadata.delete_topic(name)
