"""The Pulsar binary protocol: wire schema, enumerations, framing, topic names, payload codecs.

Pure and sans-IO: nothing in this package does I/O or imports asyncio, the broker, the client
or the storage layer.
"""

from __future__ import annotations

from magnetar.protocol.batch import (
    BatchMessage,
    UnsupportedEntryError,
    build_entry,
    decode_batch,
    encode_batch,
    open_entry,
)
from magnetar.protocol.compression import CompressionError, compress, decompress
from magnetar.protocol.enums import (
    COMMAND_FIELD,
    MIN_PROTOCOL_VERSION,
    PROTOCOL_VERSION,
    AckType,
    CommandType,
    CompressionType,
    InitialPosition,
    KeySharedMode,
    LookupType,
    PartitionedMetadataResult,
    ProducerAccessMode,
    SchemaType,
    ServerError,
    SubType,
    TopicsMode,
)
from magnetar.protocol.framing import (
    FRAME_HEADROOM,
    MAGIC_BROKER_ENTRY_METADATA,
    MAGIC_CHECKSUM,
    Frame,
    FrameDecoder,
    FrameTooLargeError,
    ProtocolError,
    crc32c,
    decode_frame_body,
    encode_command,
    encode_entry,
    encode_entry_header,
    encode_payload_command,
    parse_entry_metadata,
    split_entry,
    sub_command,
)
from magnetar.protocol.hashing import HASH_RANGE_SIZE, java_string_hash, key_shared_hash, murmur3_32
from magnetar.protocol.schema import (
    MESSAGES,
    AuthData,
    BaseCommand,
    BrokerEntryMetadata,
    EncryptionKeys,
    FeatureFlags,
    IntRange,
    KeyLongValue,
    KeySharedMeta,
    KeyValue,
    MessageIdData,
    MessageMetadata,
    Schema,
    SingleMessageMetadata,
)
from magnetar.protocol.topic_name import PARTITION_SUFFIX, InvalidTopicNameError, TopicName

__all__ = [
    # schema
    "MESSAGES",
    "AuthData",
    "BaseCommand",
    "BrokerEntryMetadata",
    "EncryptionKeys",
    "FeatureFlags",
    "IntRange",
    "KeyLongValue",
    "KeySharedMeta",
    "KeyValue",
    "MessageIdData",
    "MessageMetadata",
    "Schema",
    "SingleMessageMetadata",
    # enums
    "COMMAND_FIELD",
    "MIN_PROTOCOL_VERSION",
    "PROTOCOL_VERSION",
    "AckType",
    "CommandType",
    "CompressionType",
    "InitialPosition",
    "KeySharedMode",
    "LookupType",
    "PartitionedMetadataResult",
    "ProducerAccessMode",
    "SchemaType",
    "ServerError",
    "SubType",
    "TopicsMode",
    # framing
    "FRAME_HEADROOM",
    "MAGIC_BROKER_ENTRY_METADATA",
    "MAGIC_CHECKSUM",
    "Frame",
    "FrameDecoder",
    "FrameTooLargeError",
    "ProtocolError",
    "crc32c",
    "decode_frame_body",
    "encode_command",
    "encode_entry",
    "encode_entry_header",
    "encode_payload_command",
    "parse_entry_metadata",
    "split_entry",
    "sub_command",
    # topic names
    "PARTITION_SUFFIX",
    "InvalidTopicNameError",
    "TopicName",
    # compression
    "CompressionError",
    "compress",
    "decompress",
    # batches and entries
    "BatchMessage",
    "UnsupportedEntryError",
    "build_entry",
    "decode_batch",
    "encode_batch",
    "open_entry",
    # hashing
    "HASH_RANGE_SIZE",
    "java_string_hash",
    "key_shared_hash",
    "murmur3_32",
]
