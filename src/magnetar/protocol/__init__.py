"""The Pulsar binary protocol: wire schema, enumerations, framing, topic names, payload codecs.

Pure and sans-IO: nothing in this package does I/O or imports asyncio, the broker, the client
or the storage layer.

Names load on first use (PEP 562): importing one submodule does not load its siblings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magnetar.lazy_names import lazy_names

if TYPE_CHECKING:
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

#: public name -> the module of this package that defines it
_MODULES = {
    "BatchMessage": "batch",
    "UnsupportedEntryError": "batch",
    "build_entry": "batch",
    "decode_batch": "batch",
    "encode_batch": "batch",
    "open_entry": "batch",
    "CompressionError": "compression",
    "compress": "compression",
    "decompress": "compression",
    "COMMAND_FIELD": "enums",
    "MIN_PROTOCOL_VERSION": "enums",
    "PROTOCOL_VERSION": "enums",
    "AckType": "enums",
    "CommandType": "enums",
    "CompressionType": "enums",
    "InitialPosition": "enums",
    "KeySharedMode": "enums",
    "LookupType": "enums",
    "PartitionedMetadataResult": "enums",
    "ProducerAccessMode": "enums",
    "SchemaType": "enums",
    "ServerError": "enums",
    "SubType": "enums",
    "TopicsMode": "enums",
    "FRAME_HEADROOM": "framing",
    "MAGIC_BROKER_ENTRY_METADATA": "framing",
    "MAGIC_CHECKSUM": "framing",
    "Frame": "framing",
    "FrameDecoder": "framing",
    "FrameTooLargeError": "framing",
    "ProtocolError": "framing",
    "crc32c": "framing",
    "decode_frame_body": "framing",
    "encode_command": "framing",
    "encode_entry": "framing",
    "encode_entry_header": "framing",
    "encode_payload_command": "framing",
    "parse_entry_metadata": "framing",
    "split_entry": "framing",
    "sub_command": "framing",
    "HASH_RANGE_SIZE": "hashing",
    "java_string_hash": "hashing",
    "key_shared_hash": "hashing",
    "murmur3_32": "hashing",
    "MESSAGES": "schema",
    "AuthData": "schema",
    "BaseCommand": "schema",
    "BrokerEntryMetadata": "schema",
    "EncryptionKeys": "schema",
    "FeatureFlags": "schema",
    "IntRange": "schema",
    "KeyLongValue": "schema",
    "KeySharedMeta": "schema",
    "KeyValue": "schema",
    "MessageIdData": "schema",
    "MessageMetadata": "schema",
    "Schema": "schema",
    "SingleMessageMetadata": "schema",
    "PARTITION_SUFFIX": "topic_name",
    "InvalidTopicNameError": "topic_name",
    "TopicName": "topic_name",
}

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


__getattr__, __dir__ = lazy_names(__name__, _MODULES)
