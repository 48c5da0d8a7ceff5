"""magnetar's native Pulsar client: asyncio-first (``AsyncClient``) with a sync face (``Client``).

Names, options and defaults follow the official Python client: ``import magnetar.client as
pulsar`` runs code written for ``pulsar`` (sync) and ``pulsar.asyncio`` (the
:mod:`magnetar.client.asyncio` face); see docs/CLIENT.md for the differences.
"""

from magnetar.client import asyncio, exceptions, schema, tableview
from magnetar.client.auth import Authentication, AuthenticationBasic, AuthenticationTLS, AuthenticationToken
from magnetar.client.client import AsyncClient
from magnetar.client.compat import (
    CompressionType,
    ConsoleLogger,
    ConsumerCryptoFailureAction,
    ConsumerType,
    FileLogger,
    LoggerLevel,
)
from magnetar.client.config import BatchingType, ConsumerConfig, ProducerConfig
from magnetar.client.consumer import Consumer
from magnetar.client.errors import *  # noqa: F403 - the flat exception hierarchy is part of the API
from magnetar.client.errors import Result
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
    SchemaTypeError,
    StringSchema,
)
from magnetar.client.sync import Client
from magnetar.client.tableview import AsyncTableView, TableView
from magnetar.protocol.enums import (
    InitialPosition,
    KeySharedMode,
    ProducerAccessMode,
    TopicsMode,
)

#: the official client's name of the dead letter policy
DeadLetterPolicy = ConsumerDeadLetterPolicy

__all__ = [
    "AsyncClient",
    "AsyncTableView",
    "Authentication",
    "AuthenticationBasic",
    "AuthenticationTLS",
    "AuthenticationToken",
    "AvroSchema",
    "BatchingType",
    "BytesSchema",
    "Client",
    "CompressionType",
    "ConsoleLogger",
    "Consumer",
    "ConsumerBatchReceivePolicy",
    "ConsumerConfig",
    "ConsumerCryptoFailureAction",
    "ConsumerDeadLetterPolicy",
    "ConsumerKeySharedPolicy",
    "ConsumerType",
    "DeadLetterPolicy",
    "FileLogger",
    "HashingScheme",
    "InitialPosition",
    "JsonSchema",
    "KeySharedMode",
    "KeyValueEncodingType",
    "KeyValueSchema",
    "LoggerLevel",
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
    "Result",
    "Schema",
    "SchemaSerializationError",
    "SchemaTypeError",
    "StringSchema",
    "TableView",
    "TopicsMode",
    "asyncio",
    "exceptions",
    "partition_for_key",
    "schema",
    "tableview",
]
