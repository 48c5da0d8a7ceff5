"""Which replicators run: one per loaded topic and remote cluster of its replication policy (the
topic's own, else its namespace's), started when a topic loads or a policy or a cluster changes,
stopped when the policy drops the cluster (a persistent topic's cursor is deleted then, as Pulsar
does) or the topic closes. A persistent topic's are :class:`Replicator` (a durable cursor each); a
non-persistent topic's are :class:`NonPersistentReplicator`, fed through the topic's
``replication`` hook (:class:`LiveReplication`) while it has any.

A remote cluster is reached with its ClusterData: ``brokerServiceUrl`` (``brokerServiceUrlTls`` when
``brokerClientTlsEnabled``), its ``authenticationPlugin`` / ``authenticationParameters`` or else the
broker client's (``brokerClientAuthenticationPlugin`` / ``Parameters``), and its TLS trust settings.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import TYPE_CHECKING, Any

from magnetar.broker.policies.registry import REPLICATION_CLUSTERS
from magnetar.broker.policies.resolution import effective
from magnetar.broker.replication.credentials import CredentialsError, client_credentials
from magnetar.broker.replication.link import RemoteLink
from magnetar.broker.replication.live import LiveReplication, NonPersistentReplicator
from magnetar.broker.replication.names import cursor_name, is_replicator
from magnetar.broker.replication.remote_admin import ensure_partitioned_topic
from magnetar.broker.replication.replicator import RemoteCluster, Replicator
from magnetar.broker.replication.subscriptions import (
    MARKERS,
    ReplicatedSubscriptions,
    load_names,
    store_names,
)

if TYPE_CHECKING:
    from magnetar.broker.config import BrokerConfig
    from magnetar.broker.topics.base import Topic
    from magnetar.broker.topics.persistent import PersistentTopic
    from magnetar.storage import ManagedCursor, MetadataStore

log = logging.getLogger("magnetar.broker.replication")


def remote_cluster(name: str, data: dict[str, Any], config: BrokerConfig) -> RemoteCluster:
    """How to reach cluster ``name`` from its ClusterData (blocking: a token or CA file may be read)."""
    tls_on = bool(data.get("brokerClientTlsEnabled"))
    url = (data.get("brokerServiceUrlTls") if tls_on else None) or data.get("brokerServiceUrl") \
        or data.get("brokerServiceUrlTls") or ""
    http = (data.get("serviceUrlTls") if tls_on else None) or data.get("serviceUrl") or data.get("serviceUrlTls") or ""
    if data.get("authenticationPlugin"):
        credentials = client_credentials(data.get("authenticationPlugin"), data.get("authenticationParameters"))
    else:
        credentials = client_credentials(config.broker_client_authentication_plugin,
                                         config.broker_client_authentication_parameters)
    context = None
    if url.startswith("pulsar+ssl://"):
        context = ssl.create_default_context(cafile=data.get("brokerClientTrustCertsFilePath") or None)
        if data.get("tlsAllowInsecureConnection"):
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if credentials.certificate is not None:
            context.load_cert_chain(*credentials.certificate)
    return RemoteCluster(name, url, http, credentials, context)


class ReplicationManager:
    """The replicators of one broker, by topic and remote cluster."""

    def __init__(self, config: BrokerConfig, metadata: MetadataStore, schemas: Any,
                 open_cursor: Any, topics: dict[str, Topic]) -> None:
        self.config = config
        self.metadata = metadata
        self._schemas = schemas
        #: ``open_cursor(topic, name, mark_delete)``: a new durable cursor (the service's)
        self._open_cursor = open_cursor
        self._topics = topics
        #: topic name -> remote cluster -> its replicator
        self.replicators: dict[str, dict[str, RemoteLink]] = {}
        #: remote cluster -> (ClusterData it was built from, how to reach it)
        self._remotes: dict[str, tuple[dict[str, Any], RemoteCluster]] = {}
        self._pending: set[str] = set()
        self._tasks: set[asyncio.Task] = set()
        self.running = True
        #: topic name -> its replicated subscriptions (made with the first one, or the first marker)
        self.controllers: dict[str, ReplicatedSubscriptions] = {}

    @property
    def local(self) -> str:
        """This broker's cluster."""
        return self.config.cluster_name

    def replicators_of(self, topic_name: str) -> dict[str, RemoteLink]:
        """The replicators of a topic, by remote cluster."""
        return self.replicators.get(topic_name, {})

    # -- triggers --------------------------------------------------------------------------
    def topic_loaded(self, topic: Topic) -> None:
        """A topic was loaded: its replicators' cursors exist from now on, the replicators start soon."""
        if topic.persistent:
            self._ensure_cursors(topic)  # type: ignore[arg-type]
        self._schedule(topic.name)
        if topic.persistent and self.wanted(topic):
            self._background(self._restore_replicated(topic), f"replicated subscriptions of {topic.name}")

    def policies_changed(self, namespace: str | None) -> None:
        """Replication policies or clusters may have changed: bring the replicators in line."""
        if namespace is None:
            self._remotes.clear()
        for name, topic in list(self._topics.items()):
            if namespace is None or topic.topic_name.namespace == namespace:
                if topic.persistent:
                    self._ensure_cursors(topic)  # type: ignore[arg-type]
                self._schedule(name)

    async def topic_closing(self, name: str) -> None:
        """A topic is being deleted or unloaded: stop its replicators (their cursors stay)."""
        topic = self._topics.get(name)
        if topic is not None and not topic.persistent:
            topic.replication = None  # type: ignore[attr-defined]
        for replicator in self.replicators.pop(name, {}).values():
            await replicator.stop()
        controller = self.controllers.pop(name, None)
        if controller is not None:
            await controller.stop()

    # -- replicated subscriptions ----------------------------------------------------------
    def subscription_replicated(self, topic: Topic, name: str) -> None:
        """A consumer subscribed with ``replicate_subscription_state``: the subscription's state is
        carried to the other clusters from now on (and stays so after restarts)."""
        if topic.persistent:
            self._controller(topic).add(name)  # type: ignore[arg-type]

    def set_subscription_replicated(self, topic: Topic, name: str, enabled: bool) -> None:
        """The admin's replicatedSubscriptionStatus: start or stop carrying a subscription's state."""
        if enabled:
            self.subscription_replicated(topic, name)
        elif topic.name in self.controllers:
            self.controllers[topic.name].remove(name)

    def is_subscription_replicated(self, topic: Topic, name: str) -> bool:
        """Whether a subscription's state is carried to the other clusters."""
        controller = self.controllers.get(topic.name)
        return controller is not None and name in controller.caches

    def _controller(self, topic: PersistentTopic) -> ReplicatedSubscriptions:
        controller = self.controllers.get(topic.name)
        if controller is None:
            name = topic.name
            controller = ReplicatedSubscriptions(topic, self.local, lambda: self.replicators_of(name),
                                                 lambda names: self._store_names(name, names))
            self.controllers[name] = controller
            topic.marker_filter = MARKERS
            controller.start()
        return controller

    def _on_marker(self, topic: PersistentTopic, source: str, entry_id: int, marker_type: int, payload: bytes) -> None:
        if not topic.closed:
            self._controller(topic).on_marker(source, entry_id, marker_type, payload)

    async def _restore_replicated(self, topic: PersistentTopic) -> None:
        topic.marker_filter = MARKERS
        names = await asyncio.to_thread(load_names, self.metadata, topic.name)
        if names and not topic.closed:
            controller = self._controller(topic)
            for name in names:
                if name in topic.subscriptions:
                    controller.add(name, persist=False)

    def _store_names(self, topic: str, names: list[str]) -> None:
        self._background(asyncio.to_thread(store_names, self.metadata, topic, names), f"store {topic}")

    def _background(self, work: Any, name: str) -> None:
        task = asyncio.get_running_loop().create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def stop(self) -> None:
        """Stop every replicator (at broker shutdown)."""
        self.running = False
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for name in list(self.replicators) + list(self.controllers):
            await self.topic_closing(name)

    def _schedule(self, name: str) -> None:
        if not self.running or name in self._pending:
            return
        self._pending.add(name)
        self._background(self._reconcile(name), f"replication of {name}")

    # -- reconciliation --------------------------------------------------------------------
    def wanted(self, topic: Topic) -> list[str]:
        """The remote clusters a topic replicates to now."""
        clusters = effective(self.metadata, topic.topic_name, REPLICATION_CLUSTERS) or []
        return [c for c in clusters if isinstance(c, str) and c != self.local]

    async def _reconcile(self, name: str) -> None:
        self._pending.discard(name)
        topic = self._topics.get(name)
        if topic is None or topic.closed:
            return
        try:
            await self._reconcile_topic(topic)  # type: ignore[arg-type]
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("replication of %s: could not start its replicators", name)

    async def _reconcile_topic(self, topic: Topic) -> None:
        wanted = self.wanted(topic)
        current = self.replicators.setdefault(topic.name, {})
        for remote in [r for r in current if r not in wanted]:
            await current.pop(remote).stop()
            log.info("replication of %s to %s stopped", topic.name, remote)
        if topic.persistent:
            # the cursors of clusters dropped from the policy go (even those left from before a restart)
            kept = {cursor_name(r) for r in wanted}
            for name in [n for n in topic.subscriptions if is_replicator(n) and n not in kept]:
                topic.remove_subscription(name)
        for remote_name in wanted:
            remote = await self._remote(remote_name)
            existing = current.get(remote_name)
            if existing is not None and existing.remote == remote:
                continue
            if existing is not None:
                await existing.stop()
            if remote is None or topic.closed:
                current.pop(remote_name, None)
                continue
            current[remote_name] = await self._replicator(topic, remote)
            current[remote_name].start()
            log.info("replication of %s to %s started", topic.name, remote_name)
        if not topic.persistent:
            live: dict[str, NonPersistentReplicator] = current  # type: ignore[assignment]
            topic.replication = LiveReplication(self.local, live) if live and not topic.closed else None  # type: ignore[attr-defined]
        if not current:
            self.replicators.pop(topic.name, None)

    async def _replicator(self, topic: Topic, remote: RemoteCluster) -> RemoteLink:
        """A new replicator of ``topic`` to ``remote`` (not started)."""
        await self._prepare_remote_topic(topic, remote)
        if not topic.persistent:
            return NonPersistentReplicator(topic, self.local, remote,  # type: ignore[arg-type]
                                           self.config.replication_producer_queue_size)
        persistent: PersistentTopic = topic  # type: ignore[assignment]
        replicator = Replicator(persistent, self.local, remote, self._cursor(persistent, remote.name), self._schemas,
                                lambda *marker: self._on_marker(persistent, *marker))
        persistent.marker_filter = MARKERS
        persistent.subscriptions[replicator.subscription.name] = replicator.subscription
        return replicator

    def _ensure_cursors(self, topic: PersistentTopic) -> None:
        """Open the durable cursor of every remote the topic replicates to, now: what is published from
        this moment on is kept for the replicator, however long it takes to connect."""
        if topic.closed:
            return
        for remote in self.wanted(topic):
            self._cursor(topic, remote)

    def _cursor(self, topic: PersistentTopic, remote: str) -> ManagedCursor:
        """The replicator's durable cursor: the one stored (restored with the topic), else a new one
        (at the end of the topic, or its start with ``replication_start_at = "earliest"``)."""
        name = cursor_name(remote)
        existing = topic.subscriptions.get(name)
        if existing is not None and is_replicator(existing.name):
            return existing.cursor
        start = topic.ledger.first_entry_id - 1 if self.config.replication_start_at == "earliest" \
            else topic.last_readable_id
        topic.restore_subscription(self._open_cursor(topic, name, start))
        return topic.subscriptions[name].cursor

    async def _remote(self, name: str) -> RemoteCluster | None:
        """How to reach a registered cluster (None when it is not registered or has no broker URL)."""
        data = self.metadata.get_cluster(name)
        if data is None:
            log.warning("replication to %s: the cluster is not registered", name)
            return None
        known = self._remotes.get(name)
        if known is not None and known[0] == data:
            return known[1]
        try:
            remote = await asyncio.to_thread(remote_cluster, name, data, self.config)
        except (CredentialsError, OSError, ssl.SSLError) as exc:
            log.error("replication to %s: cannot use its ClusterData: %s", name, exc)
            return None
        if not remote.service_url:
            log.warning("replication to %s: its ClusterData has no brokerServiceUrl", name)
            return None
        self._remotes[name] = (data, remote)
        return remote

    async def _prepare_remote_topic(self, topic: Topic, remote: RemoteCluster) -> None:
        """A partition's partitioned topic exists on the remote with as many partitions as here."""
        parent = topic.topic_name.partitioned_parent
        if parent == topic.topic_name or not remote.http_url:
            return
        partitions = self.metadata.get_partitioned_topic(str(parent)) or 0
        if partitions:
            try:
                await asyncio.to_thread(ensure_partitioned_topic, remote, parent, partitions)
            except OSError as exc:
                log.warning("replication of %s to %s: partitioned topic not created there: %s",
                            topic.name, remote.name, exc)
