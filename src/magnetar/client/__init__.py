"""magnetar's native Pulsar client: asyncio-first (``AsyncClient``) with a sync face (``Client``).

Names, options and defaults follow the official Python client: ``import magnetar.client as
pulsar`` runs code written for ``pulsar`` (sync) and ``pulsar.asyncio`` (the
:mod:`magnetar.client.asyncio` face); see docs/CLIENT.md for the differences.

``Producer``, ``Consumer``, ``Reader`` and ``TableView`` are the sync face's classes (what
``Client().create_producer()`` and the others return); the asyncio core's are ``AsyncClient``,
``AsyncProducer``, ``AsyncConsumer``, ``AsyncReader``, ``AsyncMultiTopicsConsumer``,
``AsyncPartitionedProducer`` and ``AsyncTableView``. The package by layer (imports point down):

- faces: :mod:`~magnetar.client.sync` (``pulsar``), :mod:`~magnetar.client.asyncio`
  (``pulsar.asyncio``), :mod:`~magnetar.client.tableview`, :mod:`~magnetar.client.bulk`;
- :mod:`~magnetar.client.core` (the asyncio machinery) beside :mod:`~magnetar.client.schema`;
- :mod:`~magnetar.client.api` (messages, configurations, policies, authentication);
- :mod:`~magnetar.client.exceptions` (the flat exception hierarchy, ``pulsar.exceptions``).
"""

from magnetar.client import asyncio, exceptions, schema, sync, tableview
from magnetar.client.api.auth import (
    Authentication,
    AuthenticationBasic,
    AuthenticationOauth2,
    AuthenticationTLS,
    AuthenticationToken,
)
from magnetar.client.api.compat import (
    CompressionType,
    ConsoleLogger,
    ConsumerCryptoFailureAction,
    ConsumerType,
    FileLogger,
    LoggerLevel,
)
from magnetar.client.api.config import BatchingType, ConsumerConfig, ProducerConfig
from magnetar.client.api.configuration import ConsumerConfiguration, ProducerConfiguration
from magnetar.client.api.crypto import CryptoKeyReader, EncryptionContext, EncryptionKey
from magnetar.client.api.failover import AutoClusterFailover, ServiceInfo, ServiceInfoProvider
from magnetar.client.api.message import Message, MessageId
from magnetar.client.api.message_batch import MessageBatch
from magnetar.client.api.policies import (
    ConsumerBatchReceivePolicy,
    ConsumerDeadLetterPolicy,
    ConsumerKeySharedPolicy,
    MultiplierRedeliveryBackoff,
    RedeliveryBackoff,
    RegexSubscriptionMode,
)
from magnetar.client.core.client import AsyncClient
from magnetar.client.core.consumer import AsyncConsumer
from magnetar.client.core.multi_topic import AsyncMultiTopicsConsumer
from magnetar.client.core.partitioned import (
    AsyncPartitionedProducer,
    HashingScheme,
    PartitionsRoutingMode,
    partition_for_key,
)
from magnetar.client.core.producer import AsyncProducer
from magnetar.client.core.reader import AsyncReader
from magnetar.client.core.tableview import AsyncTableView
from magnetar.client.core.transactions import AsyncTransaction, TransactionState
from magnetar.client.exceptions import *  # noqa: F403 - the flat exception hierarchy is part of the API
from magnetar.client.exceptions import Result
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
from magnetar.client.sync import Client, Consumer, Producer, Reader, TableView, Transaction
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
    "AsyncConsumer",
    "AsyncMultiTopicsConsumer",
    "AsyncPartitionedProducer",
    "AsyncProducer",
    "AsyncReader",
    "AsyncTableView",
    "AsyncTransaction",
    "Authentication",
    "AuthenticationBasic",
    "AuthenticationOauth2",
    "AuthenticationTLS",
    "AuthenticationToken",
    "AutoClusterFailover",
    "AvroSchema",
    "BatchingType",
    "BytesSchema",
    "Client",
    "CompressionType",
    "ConsoleLogger",
    "Consumer",
    "ConsumerBatchReceivePolicy",
    "ConsumerConfig",
    "ConsumerConfiguration",
    "ConsumerCryptoFailureAction",
    "ConsumerDeadLetterPolicy",
    "ConsumerKeySharedPolicy",
    "ConsumerType",
    "CryptoKeyReader",
    "DeadLetterPolicy",
    "EncryptionContext",
    "EncryptionKey",
    "FileLogger",
    "HashingScheme",
    "InitialPosition",
    "JsonSchema",
    "KeySharedMode",
    "KeyValueEncodingType",
    "KeyValueSchema",
    "LoggerLevel",
    "Message",
    "MessageBatch",
    "MessageId",
    "MultiplierRedeliveryBackoff",
    "PartitionsRoutingMode",
    "Producer",
    "ProducerAccessMode",
    "ProducerConfig",
    "ProducerConfiguration",
    "Reader",
    "RedeliveryBackoff",
    "RegexSubscriptionMode",
    "Result",
    "Schema",
    "SchemaSerializationError",
    "SchemaTypeError",
    "ServiceInfo",
    "ServiceInfoProvider",
    "StringSchema",
    "TableView",
    "TopicsMode",
    "Transaction",
    "TransactionState",
    "asyncio",
    "exceptions",
    "partition_for_key",
    "schema",
    "sync",
    "tableview",
]
