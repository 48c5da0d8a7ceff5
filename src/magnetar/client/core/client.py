"""The asyncio client: connections, lookups, and factories for producers, consumers, readers.

``AsyncClient`` is the core. Partitioned topics get a producer per partition behind a router
(:mod:`.partitioned`) and a multi-topic consumer over the partitions; topic lists and regex
subscriptions use the same multi-topic consumer (:mod:`.multi_topic`), with periodic discovery
of new topics for patterns.
"""

from __future__ import annotations

import contextlib
import logging
import re
import ssl
import time
from collections.abc import Callable
from typing import Any

from magnetar.client.api.arguments import InvalidArgument, check_optional, check_type, check_types
from magnetar.client.api.auth import Authentication
from magnetar.client.api.config import ConsumerConfig, ProducerConfig
from magnetar.client.api.failover import AutoClusterFailover, ServiceInfo, ServiceInfoProvider
from magnetar.client.api.message import MessageId
from magnetar.client.api.policies import DEFAULT_MAX_RECONSUME_TIMES, ConsumerDeadLetterPolicy, topics_mode
from magnetar.client.core.connection import ConnectionPool
from magnetar.client.core.consumer import AsyncConsumer
from magnetar.client.core.crypto import load_keys
from magnetar.client.core.dead_letter import DeadLetterHandler
from magnetar.client.core.failover import ServiceSwitch
from magnetar.client.core.lookup import HttpLookupService, LookupService, ServiceUrl
from magnetar.client.core.multi_topic import AsyncMultiTopicsConsumer
from magnetar.client.core.partitioned import AsyncPartitionedProducer, HashingScheme, PartitionsRoutingMode
from magnetar.client.core.producer import AsyncProducer
from magnetar.client.core.reader import AsyncReader
from magnetar.client.core.tableview import AsyncTableView
from magnetar.client.core.transactions import AsyncTransaction
from magnetar.client.core.txn_coordinator import TransactionCoordinatorClient
from magnetar.client.exceptions import (
    AlreadyClosed,
    ConnectError,
    InvalidConfiguration,
    InvalidTopicName,
    NotAllowedError,
    PulsarError,
)
from magnetar.protocol.enums import InitialPosition, SubType, TopicsMode
from magnetar.protocol.topic_name import InvalidTopicNameError, TopicName

log = logging.getLogger("magnetar.client")


def _context(exc: PulsarError, what: str) -> PulsarError:
    """The same error type, saying what failed before why."""
    return type(exc)(f"{what}: {exc}")


def _topic(name: str) -> str:
    check_type(name, str, "topic")
    try:
        return str(TopicName.parse(name))
    except InvalidTopicNameError as exc:
        raise InvalidTopicName(str(exc)) from None


def _tls_context(
    trust_certs: str | None, check_hostname: bool, allow_insecure: bool, certificate: str | None, private_key: str | None
) -> ssl.SSLContext:
    """The client's TLS context; files that cannot be used raise ConnectError (as the official
    client fails to connect with them)."""
    try:
        context = ssl.create_default_context(cafile=trust_certs)
        context.check_hostname = check_hostname
        if allow_insecure:
            context.verify_mode = ssl.CERT_NONE
        if certificate:
            context.load_cert_chain(certificate, private_key)
    except (ssl.SSLError, OSError) as exc:
        raise ConnectError(
            f"cannot set TLS up with trust certificates {trust_certs!r}, certificate {certificate!r} and key {private_key!r}: {exc}"
        ) from None
    return context


def _says_partition(mid: MessageId) -> bool:
    """Whether a reader's start id can be placed on a partition (earliest and latest go everywhere)."""
    if mid.ledger_id < 0 or mid == MessageId.latest or mid.partition >= 0:
        return True
    return mid.topic is not None and TopicName.parse(mid.topic).partition_index >= 0


#: the client options' accepted types, as the official client checks them (magnetar also takes
#: fractional timeouts)
_CLIENT_OPTION_TYPES: dict[str, type | tuple[type, ...]] = {
    "service_url": str, "operation_timeout_seconds": (int, float), "connection_timeout_ms": (int, float),
    "io_threads": int, "message_listener_threads": int, "concurrent_lookup_requests": int,
    "stats_interval_in_seconds": int, "use_tls": bool, "tls_allow_insecure_connection": bool,
    "tls_validate_hostname": bool, "enable_transaction": bool,
}
_OPTIONAL_CLIENT_OPTION_TYPES: dict[str, type | tuple[type, ...]] = {
    "log_conf_file_path": str, "tls_trust_certs_file_path": str,
    "listener_name": str, "tls_private_key_file_path": str, "tls_certificate_file_path": str,
}


class AsyncClient:
    """A Pulsar client on the running asyncio loop. Use ``async with AsyncClient(url) as c``."""

    def __init__(
        self,
        service_url: str | AutoClusterFailover | ServiceInfoProvider,
        authentication: Authentication | None = None,
        operation_timeout_seconds: float = 30,
        io_threads: int = 1,
        message_listener_threads: int = 1,
        concurrent_lookup_requests: int = 50000,
        log_conf_file_path: str | None = None,
        stats_interval_in_seconds: int = 600,
        use_tls: bool = False,
        tls_trust_certs_file_path: str | None = None,
        tls_allow_insecure_connection: bool = False,
        tls_validate_hostname: bool = False,
        logger: Any = None,
        connection_timeout_ms: int = 10000,
        listener_name: str | None = None,
        tls_private_key_file_path: str | None = None,
        tls_certificate_file_path: str | None = None,
        *,
        keep_alive_interval_seconds: float = 30,
        partitions_update_interval_seconds: float = 60,
        enable_transaction: bool = False,
    ) -> None:
        if authentication is not None and not isinstance(authentication, Authentication):
            raise InvalidArgument(
                f"authentication must be a magnetar.client Authentication (e.g. AuthenticationToken), not {type(authentication).__name__}"
            )
        #: what moves the client between clusters (None: one service URL)
        self.service_switch: ServiceSwitch | None = None
        if isinstance(service_url, (AutoClusterFailover, ServiceInfoProvider)):
            if authentication is not None or tls_trust_certs_file_path is not None:
                raise InvalidArgument("authentication and tls_trust_certs_file_path cannot be set with"
                                      " AutoClusterFailover or ServiceInfoProvider; set them on each ServiceInfo")
            self.service_switch = ServiceSwitch(service_url)
            info = self.service_switch.current
            service_url, authentication = info.service_url, info.authentication
            tls_trust_certs_file_path = info.tls_trust_certs_file_path
        check_types(locals(), _CLIENT_OPTION_TYPES, _OPTIONAL_CLIENT_OPTION_TYPES)
        self._service_info = ServiceInfo(service_url, authentication, tls_trust_certs_file_path)
        self.service_url = ServiceUrl.parse(service_url)
        if use_tls and not self.service_url.tls:
            self.service_url = ServiceUrl({"pulsar": "pulsar+ssl", "http": "https"}[self.service_url.scheme], self.service_url.hosts)
        if operation_timeout_seconds <= 0 or connection_timeout_ms <= 0:
            raise InvalidArgument("operation_timeout_seconds and connection_timeout_ms must be positive")
        self.operation_timeout = float(operation_timeout_seconds)
        #: partitioned producers, consumers and readers look their partitions up this often
        self.partitions_update_interval = float(partitions_update_interval_seconds)
        self.authentication = authentication
        self.message_listener_threads = message_listener_threads
        ssl_context = None
        if self.service_url.tls:
            plugin_certificate = authentication.tls_certificate() if authentication is not None else None
            if tls_certificate_file_path is None and plugin_certificate is not None:
                tls_certificate_file_path, tls_private_key_file_path = plugin_certificate
            ssl_context = _tls_context(
                tls_trust_certs_file_path, bool(tls_validate_hostname) and not tls_allow_insecure_connection,
                tls_allow_insecure_connection, tls_certificate_file_path, tls_private_key_file_path,
            )
        self.pool = ConnectionPool(connection_timeout_ms / 1000.0, keep_alive_interval_seconds, ssl_context, authentication)
        lookup_cls = HttpLookupService if self.service_url.http else LookupService
        self.lookup: LookupService = lookup_cls(self.pool, self.service_url, self.operation_timeout, listener_name)
        #: the transaction coordinator client (None: transactions not enabled)
        self.tc_client = TransactionCoordinatorClient(self.lookup, self.operation_timeout) if enable_transaction else None
        self._handles: list[Any] = []
        self._closed = False
        if self.service_switch is not None:
            with contextlib.suppress(RuntimeError):  # no loop yet: started by the first create / subscribe
                self.service_switch.start(self)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise AlreadyClosed("client is closed")
        if self.service_switch is not None:
            self.service_switch.start(self)

    def get_service_info(self) -> ServiceInfo:
        """The service (cluster) the client uses now."""
        return self.service_switch.current if self.service_switch is not None else self._service_info

    async def _use_service(self, info: ServiceInfo) -> None:
        """Move to another cluster: lookups go to ``info``'s URL, and every connection is closed so
        that producers and consumers reconnect there."""
        self.service_url = self.lookup.service_url = ServiceUrl.parse(info.service_url)
        if info.authentication is not None:
            self.pool.authentication = info.authentication
        await self.pool.close()

    async def new_transaction(self, timeout_ms: int = 60000) -> AsyncTransaction:
        """A new transaction, aborted by its coordinator when not ended within ``timeout_ms``
        (the client must be created with ``enable_transaction=True``: else NotAllowedError, at once)."""
        self._check_open()
        if self.tc_client is None:
            raise NotAllowedError("transactions are not enabled on this client (create it with enable_transaction=True)")
        check_type(timeout_ms, int, "timeout_ms")
        if timeout_ms <= 0:
            raise InvalidArgument(f"timeout_ms must be positive, not {timeout_ms}")
        txn_id = await self.tc_client.new_txn(timeout_ms)
        return AsyncTransaction(self.tc_client, txn_id, timeout_ms)

    async def get_topic_partitions(self, topic: str) -> list[str]:
        """Partition topic names of ``topic`` (itself when not partitioned)."""
        self._check_open()
        name = TopicName.parse(_topic(topic))
        n = await self.lookup.partitions(str(name))
        return [str(name.partition(i)) for i in range(n)] if n else [str(name)]

    async def create_producer(
        self,
        topic: str,
        producer_name: str | None = None,
        schema: Any = None,
        *,
        message_routing_mode: int = PartitionsRoutingMode.RoundRobinDistribution,
        message_router: Callable[[Any, int], int] | None = None,
        hashing_scheme: int = HashingScheme.JavaStringHash,
        **options: Any,
    ) -> AsyncProducer | AsyncPartitionedProducer:
        """A producer on ``topic`` (a partitioned producer when the topic is partitioned).

        Options are those of ``pulsar.Client.create_producer`` (see ProducerConfig).
        """
        self._check_open()
        name = _topic(topic)
        try:
            config = ProducerConfig(producer_name=producer_name, schema=schema, **options)
        except TypeError as exc:
            raise InvalidArgument(f"create_producer: {exc}") from None
        try:
            if config.crypto_key_reader is not None:
                await load_keys(config.crypto_key_reader)
            n = await self.lookup.partitions(name)
            if n:
                producer: Any = AsyncPartitionedProducer(
                    self, name, n, config, message_routing_mode, message_router, hashing_scheme
                )
            else:
                producer = AsyncProducer(self, name, config)
            await producer.start()
        except PulsarError as exc:
            raise _context(exc, f"could not create a producer on {name}") from exc
        self._handles.append(producer)
        return producer

    async def _new_producer(self, topic: str, config: ProducerConfig) -> AsyncProducer | AsyncPartitionedProducer:
        """A producer owned by someone else (dead letter producers): not closed with the client."""
        n = await self.lookup.partitions(topic)
        producer: Any = AsyncPartitionedProducer(
            self, topic, n, config, PartitionsRoutingMode.RoundRobinDistribution, None, HashingScheme.JavaStringHash
        ) if n else AsyncProducer(self, topic, config)
        await producer.start()
        return producer

    async def subscribe(
        self,
        topic: str | list[str] | re.Pattern,
        subscription_name: str,
        consumer_type: SubType = SubType.Exclusive,
        schema: Any = None,
        message_listener: Callable | None = None,
        *,
        pattern_auto_discovery_period: float = 60,
        regex_subscription_mode: int = TopicsMode.PERSISTENT,
        enable_retry: bool | None = None,
        **options: Any,
    ) -> AsyncConsumer | AsyncMultiTopicsConsumer:
        """A consumer on a topic, a list of topics, or every topic matching a pattern.

        Options are those of ``pulsar.Client.subscribe`` (see ConsumerConfig); ``retry_enable``
        (or ``enable_retry``) also subscribes to the retry letter topic for ``reconsume_later``.
        """
        self._check_open()
        if not isinstance(topic, (str, list, tuple, re.Pattern)):
            raise InvalidArgument("Argument 'topic' is expected to be of a type between (str, list, re.pattern)")
        check_type(subscription_name, str, "subscription_name")
        if not subscription_name:
            raise InvalidArgument("subscribe: the subscription name is empty")
        if enable_retry is not None:
            options["retry_enable"] = enable_retry
        try:
            config = ConsumerConfig(consumer_type=consumer_type, schema=schema, message_listener=message_listener, **options)
        except TypeError as exc:
            raise InvalidArgument(f"subscribe: {exc}") from None
        what = f"could not subscribe to {topic if isinstance(topic, str) else getattr(topic, 'pattern', topic)} as {subscription_name!r}"
        try:
            consumer = await self._subscribe(topic, subscription_name, config, pattern_auto_discovery_period, regex_subscription_mode)
        except PulsarError as exc:
            raise _context(exc, what) from exc
        self._handles.append(consumer)
        return consumer

    async def _subscribe(
        self, topic: Any, subscription: str, config: ConsumerConfig, period: float, mode: int
    ) -> AsyncConsumer | AsyncMultiTopicsConsumer:
        if config.crypto_key_reader is not None:
            await load_keys(config.crypto_key_reader)
        if isinstance(topic, re.Pattern):
            consumer: Any = AsyncMultiTopicsConsumer(
                self, [], subscription, config, pattern=topic, discovery_period=period, mode=topics_mode(mode)
            )
        elif isinstance(topic, (list, tuple)):
            if not topic:
                raise InvalidArgument("subscribe: the topic list is empty")
            topics = [_topic(t) for t in topic]
            consumer = AsyncMultiTopicsConsumer(self, topics, subscription, config)
        else:
            name = _topic(topic)
            if config.retry_enable:
                policy = config.dead_letter_policy or ConsumerDeadLetterPolicy(DEFAULT_MAX_RECONSUME_TIMES)
                handler = DeadLetterHandler(self, policy, name, subscription, config.consumer_name or "")
                config.dead_letter_policy = ConsumerDeadLetterPolicy(
                    policy.max_redeliver_count, handler.dead_letter_topic, policy.initial_subscription_name,
                    handler.retry_letter_topic,
                )
                consumer = AsyncMultiTopicsConsumer(self, [name, handler.retry_letter_topic], subscription, config)
            else:
                n = await self.lookup.partitions(name)
                consumer = AsyncMultiTopicsConsumer(self, [name], subscription, config) if n else AsyncConsumer(self, name, subscription, config)
        try:
            await consumer.start()
        except BaseException:
            await consumer.close()
            raise
        return consumer

    async def create_reader(
        self,
        topic: str,
        start_message_id: MessageId,
        schema: Any = None,
        reader_listener: Callable | None = None,
        receiver_queue_size: int = 1000,
        reader_name: str | None = None,
        subscription_role_prefix: str | None = None,
        is_read_compacted: bool = False,
        crypto_key_reader: Any = None,
        start_message_id_inclusive: bool = False,
        crypto_failure_action: Any = None,
        *,
        start_message_from_rollback_duration_seconds: float = 0,
        subscription_name: str | None = None,
    ) -> AsyncReader:
        """A reader: a non-durable, exclusive subscription starting at ``start_message_id``.

        On a partitioned topic, a message id starts the reader at it on the id's partition and
        at the earliest message on the others. ``start_message_from_rollback_duration_seconds``
        (the Java client's startMessageFromRollbackDuration) starts it instead at the first
        message published that long ago or later, on every partition. ``subscription_name``
        names the reader's subscription (the Java client's subscriptionName; else a random one).
        """
        self._check_open()
        if not isinstance(start_message_id, MessageId):
            raise InvalidArgument(f"create_reader: start_message_id must be a MessageId, not {type(start_message_id).__name__}")
        name = _topic(topic)
        check_optional(reader_name, str, "reader_name")
        sub = subscription_name or f"{subscription_role_prefix or 'reader'}-{time.time_ns() & 0xFFFFFFFFFF:010x}"
        config = ConsumerConfig(
            consumer_type=SubType.Exclusive,
            receiver_queue_size=receiver_queue_size,
            consumer_name=reader_name,
            is_read_compacted=is_read_compacted,
            start_message_id_inclusive=start_message_id_inclusive,
            initial_position=InitialPosition.Earliest if start_message_id == MessageId.earliest else InitialPosition.Latest,
            message_listener=reader_listener,
            schema=schema,
            crypto_key_reader=crypto_key_reader,
            crypto_failure_action=crypto_failure_action,
        )
        try:
            if crypto_key_reader is not None:
                await load_keys(crypto_key_reader)
            n = await self.lookup.partitions(name)
            if n and not _says_partition(start_message_id):
                raise InvalidConfiguration(
                    f"{start_message_id!r} does not say which partition of {name} it belongs to (not an id this client received or sent)"
                )
            if n:
                consumer: Any = AsyncMultiTopicsConsumer(self, [name], sub, config, durable=False, start_message_id=start_message_id)
            else:
                consumer = AsyncConsumer(self, name, sub, config, durable=False, start_message_id=start_message_id)
            await consumer.start()
            if start_message_from_rollback_duration_seconds > 0:
                await consumer.seek(int((time.time() - start_message_from_rollback_duration_seconds) * 1000))
        except PulsarError as exc:
            raise _context(exc, f"could not create a reader on {name}") from exc
        reader = AsyncReader(consumer)
        self._handles.append(reader)
        return reader

    async def create_table_view(
        self, topic: str, subscription_name: str | None = None, schema: Any = None
    ) -> AsyncTableView:
        """A table view of ``topic``: the latest value of each key, kept up to date.

        Returns once every message published before the call was read (see
        :mod:`magnetar.client.tableview`); ``schema`` decodes the values (bytes without one).
        """
        reader = await self.create_reader(
            topic, MessageId.earliest, schema, is_read_compacted=True, subscription_name=subscription_name
        )
        view = AsyncTableView(reader, schema, subscription_name)
        try:
            await view.start()
        except BaseException:
            await view.close()
            raise
        return view

    async def close(self) -> None:
        """Close every producer, consumer and reader, then the connections."""
        if self._closed:
            return
        for handle in reversed(self._handles):
            try:
                await handle.close()
            except PulsarError:
                pass
        self._handles.clear()
        if self.service_switch is not None:
            self.service_switch.close()
        await self.pool.close()
        self._closed = True

    async def shutdown(self) -> None:
        """Same as close()."""
        await self.close()


__all__ = ["AsyncClient"]
