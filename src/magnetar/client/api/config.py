"""Producer and consumer options, named and defaulted as in the official Python client."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from magnetar.client.api.arguments import InvalidArgument, check_enum, check_types
from magnetar.client.api.compat import ConsumerCryptoFailureAction
from magnetar.client.api.message import Message
from magnetar.client.api.policies import (
    ConsumerBatchReceivePolicy,
    ConsumerDeadLetterPolicy,
    ConsumerKeySharedPolicy,
    RedeliveryBackoff,
)
from magnetar.client.exceptions import InvalidConfiguration
from magnetar.protocol.enums import CompressionType, InitialPosition, ProducerAccessMode, SubType

#: a message listener: called with the consumer and each message
MessageListener = Callable[[Any, Message], Any]


class BatchingType:
    """How messages are grouped into batches."""

    Default = 0
    KeyBased = 1


#: producer options' accepted types (as the official client checks them, fractional delays besides), required and optional
_PRODUCER_TYPES: dict[str, type | tuple[type, ...]] = {
    "send_timeout_millis": int, "max_pending_messages": int, "max_pending_messages_across_partitions": int,
    "block_if_queue_full": bool, "batching_max_messages": int, "batching_max_allowed_size_in_bytes": int,
    # fractions of a millisecond are magnetar's (Spark's batchingMaxPublishDelayMicros, perf --batch-delay-ms)
    "batching_max_publish_delay_ms": (int, float), "batching_type": int, "chunking_enabled": bool,
    "lazy_start_partitioned_producers": bool,
}
_OPTIONAL_PRODUCER_TYPES: dict[str, type | tuple[type, ...]] = {
    "producer_name": str, "initial_sequence_id": int, "batching_enabled": bool, "properties": dict,
    "initial_subscription_name": str,
}
#: consumer (and reader) options' accepted types, required and optional
_CONSUMER_TYPES: dict[str, type | tuple[type, ...]] = {
    "receiver_queue_size": int, "max_total_receiver_queue_size_across_partitions": int, "tick_duration_ms": int,
    "broker_consumer_stats_cache_time_ms": int, "negative_ack_redelivery_delay_ms": int, "is_read_compacted": bool,
    "replicate_subscription_state_enabled": bool, "max_pending_chunked_message": int,
    "auto_ack_oldest_chunked_message_on_queue_full": bool, "expire_time_of_incomplete_chunked_message_ms": int,
    "start_message_id_inclusive": bool, "batch_index_ack_enabled": bool, "retry_enable": bool,
    "priority_level": int, "ack_group_time_ms": int,
}
_OPTIONAL_CONSUMER_TYPES: dict[str, type | tuple[type, ...]] = {
    "consumer_name": str, "unacked_messages_timeout_ms": int, "properties": dict,
    "batch_receive_policy": ConsumerBatchReceivePolicy, "key_shared_policy": ConsumerKeySharedPolicy,
    "dead_letter_policy": ConsumerDeadLetterPolicy,
}


@dataclass
class ProducerConfig:
    """Producer options, named and defaulted as in the official Python client."""

    producer_name: str | None = None
    initial_sequence_id: int | None = None
    send_timeout_millis: int = 30000
    compression_type: CompressionType = CompressionType.NONE
    max_pending_messages: int = 1000
    max_pending_messages_across_partitions: int = 50000
    block_if_queue_full: bool = False
    #: None: on, unless chunking is enabled (the official Python client defaults to off)
    batching_enabled: bool | None = None
    batching_max_messages: int = 1000
    batching_max_allowed_size_in_bytes: int = 128 * 1024
    batching_max_publish_delay_ms: float = 10
    batching_type: int = BatchingType.Default
    chunking_enabled: bool = False
    properties: dict[str, str] = field(default_factory=dict)
    access_mode: ProducerAccessMode = ProducerAccessMode.Shared
    schema: Any = None
    lazy_start_partitioned_producers: bool = False
    #: a subscription the broker creates with the producer (dead letter producers use it)
    initial_subscription_name: str | None = None
    encryption_key: Any = None
    crypto_key_reader: Any = None

    def __post_init__(self) -> None:
        check_types(vars(self), _PRODUCER_TYPES, _OPTIONAL_PRODUCER_TYPES)
        self.compression_type = check_enum(CompressionType, self.compression_type, "compression_type")
        self.access_mode = check_enum(ProducerAccessMode, self.access_mode, "access_mode")
        if self.batching_enabled is None:
            self.batching_enabled = not self.chunking_enabled
        if self.chunking_enabled and self.batching_enabled:
            raise InvalidArgument("chunking requires batching to be disabled (batching_enabled=False)")
        if self.encryption_key and self.crypto_key_reader is None:
            raise InvalidConfiguration("encryption_key needs a crypto_key_reader")
        if self.batching_max_messages < 1 or self.batching_max_allowed_size_in_bytes < 1:
            raise InvalidConfiguration("batching_max_messages and batching_max_allowed_size_in_bytes must be positive")
        if self.batching_max_publish_delay_ms < 0 or self.send_timeout_millis < 0 or self.max_pending_messages < 0:
            raise InvalidConfiguration("batching_max_publish_delay_ms, send_timeout_millis and max_pending_messages must be >= 0")
        self.properties = dict(self.properties or {})


@dataclass
class ConsumerConfig:
    """Consumer options, named and defaulted as in the official Python client."""

    consumer_type: SubType = SubType.Exclusive
    receiver_queue_size: int = 1000
    max_total_receiver_queue_size_across_partitions: int = 50000
    consumer_name: str | None = None
    #: ack timeout (None or 0: off; at least 1000 ms otherwise)
    unacked_messages_timeout_ms: int | None = None
    #: how often the ack timeout is checked
    tick_duration_ms: int = 1000
    ack_timeout_redelivery_backoff: RedeliveryBackoff | None = None
    broker_consumer_stats_cache_time_ms: int = 30000
    negative_ack_redelivery_delay_ms: int = 60000
    negative_ack_redelivery_backoff: RedeliveryBackoff | None = None
    is_read_compacted: bool = False
    properties: dict[str, str] = field(default_factory=dict)
    initial_position: InitialPosition = InitialPosition.Latest
    crypto_key_reader: Any = None
    replicate_subscription_state_enabled: bool = False
    max_pending_chunked_message: int = 10
    auto_ack_oldest_chunked_message_on_queue_full: bool = False
    expire_time_of_incomplete_chunked_message_ms: int = 60000
    start_message_id_inclusive: bool = False
    batch_receive_policy: ConsumerBatchReceivePolicy | None = None
    key_shared_policy: ConsumerKeySharedPolicy | None = None
    batch_index_ack_enabled: bool = False
    dead_letter_policy: ConsumerDeadLetterPolicy | None = None
    retry_enable: bool = False
    crypto_failure_action: Any = None
    priority_level: int = 0
    message_listener: MessageListener | None = None
    schema: Any = None
    ack_group_time_ms: int = 100
    #: time source of the nack / ack-timeout / chunk-expiry bookkeeping (tests inject a fake)
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        check_types(vars(self), _CONSUMER_TYPES, _OPTIONAL_CONSUMER_TYPES)
        # plain ints and the official client's enums are accepted too
        self.consumer_type = check_enum(SubType, self.consumer_type, "consumer_type")
        self.initial_position = check_enum(InitialPosition, self.initial_position, "initial_position")
        self.properties = dict(self.properties or {})
        timeout = self.unacked_messages_timeout_ms
        if timeout and timeout < 1000:
            raise InvalidConfiguration(f"unacked_messages_timeout_ms must be 0 (off) or at least 1000, not {timeout}")
        if self.receiver_queue_size < 0:
            raise InvalidConfiguration(f"receiver_queue_size must be >= 0, not {self.receiver_queue_size}")
        self.crypto_failure_action = check_enum(
            ConsumerCryptoFailureAction, self.crypto_failure_action or ConsumerCryptoFailureAction.FAIL, "crypto_failure_action"
        )


#: the batch receive policy of a consumer configured without one
DEFAULT_BATCH_RECEIVE_POLICY = ConsumerBatchReceivePolicy()
