"""magnetar's native Pulsar client: asyncio-first (``AsyncClient``) with a sync face (``Client``).

Names, options and defaults follow the official Python client (``pulsar.Client``); see
docs/CLIENT.md for the differences.
"""

from magnetar.client.auth import Authentication, AuthenticationToken
from magnetar.client.client import AsyncClient
from magnetar.client.config import BatchingType, ConsumerConfig, ProducerConfig
from magnetar.client.consumer import Consumer
from magnetar.client.errors import *  # noqa: F403 - the flat exception hierarchy is part of the API
from magnetar.client.message import Message, MessageId
from magnetar.client.multi_topic import MultiTopicsConsumer
from magnetar.client.partitioned import (
    HashingScheme,
    PartitionedProducer,
    PartitionsRoutingMode,
    partition_for_key,
)
from magnetar.client.policies import (
    ConsumerBatchReceivePolicy,
    ConsumerDeadLetterPolicy,
    ConsumerKeySharedPolicy,
    MultiplierRedeliveryBackoff,
    RedeliveryBackoff,
    RegexSubscriptionMode,
)
from magnetar.client.producer import Producer
from magnetar.client.reader import Reader
from magnetar.client.schema import (
    AvroSchema,
    BytesSchema,
    JsonSchema,
    KeyValueEncodingType,
    KeyValueSchema,
    Schema,
    SchemaSerializationError,
    StringSchema,
)
from magnetar.client.sync import Client
from magnetar.protocol.enums import (
    CompressionType,
    InitialPosition,
    KeySharedMode,
    ProducerAccessMode,
    TopicsMode,
)
from magnetar.protocol.enums import SubType as ConsumerType

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
