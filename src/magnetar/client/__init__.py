"""magnetar's native Pulsar client: asyncio-first (``AsyncClient``) with a sync face (``Client``).

Names, options and defaults follow the official Python client (``pulsar.Client``); see
docs/CLIENT.md for the differences.
"""

from magnetar.protocol.enums import CompressionType, InitialPosition, ProducerAccessMode, TopicsMode
from magnetar.protocol.enums import SubType as ConsumerType

from .client import (
    AsyncClient,
    HashingScheme,
    MultiTopicsConsumer,
    PartitionedProducer,
    PartitionsRoutingMode,
    Reader,
)
from .consumer import Consumer, ConsumerConfig
from .errors import *  # noqa: F403 - the flat exception hierarchy is part of the API
from .message import Message, MessageId
from .producer import BatchingType, Producer, ProducerConfig
from .sync import Client

__all__ = [
    "AsyncClient",
    "BatchingType",
    "Client",
    "CompressionType",
    "Consumer",
    "ConsumerConfig",
    "ConsumerType",
    "HashingScheme",
    "InitialPosition",
    "Message",
    "MessageId",
    "MultiTopicsConsumer",
    "PartitionedProducer",
    "PartitionsRoutingMode",
    "Producer",
    "ProducerAccessMode",
    "ProducerConfig",
    "Reader",
    "TopicsMode",
]
