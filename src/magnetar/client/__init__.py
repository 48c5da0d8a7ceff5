"""magnetar's native Pulsar client: asyncio-first (``AsyncClient``) with a sync face (``Client``).

Names, options and defaults follow the official Python client (``pulsar.Client``); see
docs/CLIENT.md for the differences.
"""

from magnetar.protocol.enums import CompressionType, InitialPosition, ProducerAccessMode, TopicsMode
from magnetar.protocol.enums import SubType as ConsumerType

from .auth import Authentication, AuthenticationToken
from .client import (
    AsyncClient,
    HashingScheme,
    MultiTopicsConsumer,
    PartitionedProducer,
    PartitionsRoutingMode,
    Reader,
    partition_for_key,
)
from .consumer import Consumer, ConsumerConfig
from .errors import *  # noqa: F403 - the flat exception hierarchy is part of the API
from .message import Message, MessageId
from .policies import (
    ConsumerBatchReceivePolicy,
    ConsumerDeadLetterPolicy,
    ConsumerKeySharedPolicy,
    KeySharedMode,
    MultiplierRedeliveryBackoff,
    RedeliveryBackoff,
    RegexSubscriptionMode,
)
from .producer import BatchingType, Producer, ProducerConfig
from .schema import (
    AvroSchema,
    BytesSchema,
    JsonSchema,
    KeyValueEncodingType,
    KeyValueSchema,
    Schema,
    SchemaSerializationError,
    StringSchema,
)
from .sync import Client

#: the official client's name of the dead letter policy
DeadLetterPolicy = ConsumerDeadLetterPolicy

__all__ = [
    "AsyncClient",
    "Authentication",
    "AuthenticationToken",
    "AvroSchema",
    "BatchingType",
    "BytesSchema",
    "Client",
    "CompressionType",
    "Consumer",
    "ConsumerBatchReceivePolicy",
    "ConsumerConfig",
    "ConsumerDeadLetterPolicy",
    "ConsumerKeySharedPolicy",
    "ConsumerType",
    "DeadLetterPolicy",
    "HashingScheme",
    "InitialPosition",
    "JsonSchema",
    "KeySharedMode",
    "KeyValueEncodingType",
    "KeyValueSchema",
    "Message",
    "MessageId",
    "MultiTopicsConsumer",
    "MultiplierRedeliveryBackoff",
    "PartitionedProducer",
    "PartitionsRoutingMode",
    "Producer",
    "ProducerAccessMode",
    "ProducerConfig",
    "Reader",
    "RedeliveryBackoff",
    "RegexSubscriptionMode",
    "Schema",
    "SchemaSerializationError",
    "StringSchema",
    "TopicsMode",
    "partition_for_key",
]
