"""magnetar's own description of the Pulsar binary protocol messages.

The schema below is written in a small text notation (one message per block, one field per
line: ``number [repeated] type name [= default]``) and turned into protobuf descriptors at import
time, so no code generation step is needed and the message classes are the fast upb ones.
Field numbers and wire types follow the public Pulsar protocol; names are magnetar's
(snake_case throughout). Every field is declared ``optional`` (proto2): required-field checks
are the codec's business, not the parser's, and unknown fields are preserved. Enumerations are
carried as plain ``int32`` (identical on the wire) and described by the IntEnums of
:mod:`magnetar.protocol.enums`.
"""

from __future__ import annotations

from magnetar.protocol.schema_notation import build_classes

_PACKAGE = "magnetar.wire"

_SCHEMA = """
KeyValue
  1 string key
  2 string value

KeyLongValue
  1 string key
  2 uint64 value

IntRange
  1 int32 start
  2 int32 end

Schema
  1 string name
  3 bytes schema_data
  4 int32 type
  5 repeated KeyValue properties

MessageIdData
  1 uint64 ledger_id
  2 uint64 entry_id
  3 int32 partition = -1
  4 int32 batch_index = -1
  5 repeated int64 ack_set
  6 int32 batch_size
  7 MessageIdData first_chunk_message_id

EncryptionKeys
  1 string key
  2 bytes value
  3 repeated KeyValue metadata

MessageMetadata
  1 string producer_name
  2 uint64 sequence_id
  3 uint64 publish_time
  4 repeated KeyValue properties
  5 string replicated_from
  6 string partition_key
  7 repeated string replicate_to
  8 int32 compression
  9 uint32 uncompressed_size
  11 int32 num_messages_in_batch = 1
  12 uint64 event_time
  13 repeated EncryptionKeys encryption_keys
  14 string encryption_algo
  15 bytes encryption_param
  16 bytes schema_version
  17 bool partition_key_b64_encoded
  18 bytes ordering_key
  19 int64 deliver_at_time
  20 int32 marker_type
  22 uint64 txnid_least_bits
  23 uint64 txnid_most_bits
  24 uint64 highest_sequence_id
  25 bool null_value
  26 string uuid
  27 int32 num_chunks_from_msg
  28 int32 total_chunk_msg_size
  29 int32 chunk_id
  30 bool null_partition_key
  31 repeated int32 compacted_batch_indexes
  32 bytes schema_id

SingleMessageMetadata
  1 repeated KeyValue properties
  2 string partition_key
  3 int32 payload_size
  4 bool compacted_out
  5 uint64 event_time
  6 bool partition_key_b64_encoded
  7 bytes ordering_key
  8 uint64 sequence_id
  9 bool null_value
  10 bool null_partition_key

BrokerEntryMetadata
  1 uint64 broker_timestamp
  2 uint64 index

FeatureFlags
  1 bool supports_auth_refresh
  2 bool supports_broker_entry_metadata
  3 bool supports_partial_producer
  4 bool supports_topic_watchers
  5 bool supports_get_partitioned_metadata_without_auto_creation

AuthData
  1 string auth_method_name
  2 bytes auth_data

CommandConnect
  1 string client_version
  2 int32 auth_method
  3 bytes auth_data
  4 int32 protocol_version
  5 string auth_method_name
  6 string proxy_to_broker_url
  7 string original_principal
  8 string original_auth_data
  9 string original_auth_method
  10 FeatureFlags feature_flags
  11 string proxy_version

CommandConnected
  1 string server_version
  2 int32 protocol_version
  3 int32 max_message_size
  4 FeatureFlags feature_flags

CommandAuthResponse
  1 string client_version
  2 AuthData response
  3 int32 protocol_version

CommandAuthChallenge
  1 string server_version
  2 AuthData challenge
  3 int32 protocol_version

KeySharedMeta
  1 int32 key_shared_mode
  3 repeated IntRange hash_ranges
  4 bool allow_out_of_order_delivery

CommandSubscribe
  1 string topic
  2 string subscription
  3 int32 sub_type
  4 uint64 consumer_id
  5 uint64 request_id
  6 string consumer_name
  7 int32 priority_level
  8 bool durable = true
  9 MessageIdData start_message_id
  10 repeated KeyValue metadata
  11 bool read_compacted
  12 Schema schema
  13 int32 initial_position
  14 bool replicate_subscription_state
  15 bool force_topic_creation = true
  16 uint64 start_message_rollback_duration_sec
  17 KeySharedMeta key_shared_meta
  18 repeated KeyValue subscription_properties
  19 uint64 consumer_epoch

CommandPartitionedTopicMetadata
  1 string topic
  2 uint64 request_id
  3 string original_principal
  4 string original_auth_data
  5 string original_auth_method
  6 bool metadata_auto_creation_enabled = true

CommandPartitionedTopicMetadataResponse
  1 uint32 partitions
  2 uint64 request_id
  3 int32 response
  4 int32 error
  5 string message

CommandLookupTopic
  1 string topic
  2 uint64 request_id
  3 bool authoritative
  4 string original_principal
  5 string original_auth_data
  6 string original_auth_method
  7 string advertised_listener_name
  8 repeated KeyValue properties

CommandLookupTopicResponse
  1 string broker_service_url
  2 string broker_service_url_tls
  3 int32 response
  4 uint64 request_id
  5 bool authoritative
  6 int32 error
  7 string message
  8 bool proxy_through_service_url

CommandProducer
  1 string topic
  2 uint64 producer_id
  3 uint64 request_id
  4 string producer_name
  5 bool encrypted
  6 repeated KeyValue metadata
  7 Schema schema
  8 uint64 epoch
  9 bool user_provided_producer_name = true
  10 int32 producer_access_mode
  11 uint64 topic_epoch
  12 bool txn_enabled
  13 string initial_subscription_name

CommandSend
  1 uint64 producer_id
  2 uint64 sequence_id
  3 int32 num_messages = 1
  4 uint64 txnid_least_bits
  5 uint64 txnid_most_bits
  6 uint64 highest_sequence_id
  7 bool is_chunk
  8 bool marker
  9 MessageIdData message_id

CommandSendReceipt
  1 uint64 producer_id
  2 uint64 sequence_id
  3 MessageIdData message_id
  4 uint64 highest_sequence_id

CommandSendError
  1 uint64 producer_id
  2 uint64 sequence_id
  3 int32 error
  4 string message

CommandMessage
  1 uint64 consumer_id
  2 MessageIdData message_id
  3 uint32 redelivery_count
  4 repeated int64 ack_set
  5 uint64 consumer_epoch

CommandAck
  1 uint64 consumer_id
  2 int32 ack_type
  3 repeated MessageIdData message_id
  4 int32 validation_error
  5 repeated KeyLongValue properties
  6 uint64 txnid_least_bits
  7 uint64 txnid_most_bits
  8 uint64 request_id

CommandAckResponse
  1 uint64 consumer_id
  2 uint64 txnid_least_bits
  3 uint64 txnid_most_bits
  4 int32 error
  5 string message
  6 uint64 request_id

CommandActiveConsumerChange
  1 uint64 consumer_id
  2 bool is_active

CommandFlow
  1 uint64 consumer_id
  2 uint32 message_permits

CommandUnsubscribe
  1 uint64 consumer_id
  2 uint64 request_id
  3 bool force

CommandSeek
  1 uint64 consumer_id
  2 uint64 request_id
  3 MessageIdData message_id
  4 uint64 message_publish_time

CommandReachedEndOfTopic
  1 uint64 consumer_id

CommandTopicMigrated
  1 uint64 resource_id
  2 int32 resource_type
  3 string broker_service_url
  4 string broker_service_url_tls

CommandCloseProducer
  1 uint64 producer_id
  2 uint64 request_id
  3 string assigned_broker_service_url
  4 string assigned_broker_service_url_tls

CommandCloseConsumer
  1 uint64 consumer_id
  2 uint64 request_id
  3 string assigned_broker_service_url
  4 string assigned_broker_service_url_tls

CommandRedeliverUnacknowledgedMessages
  1 uint64 consumer_id
  2 repeated MessageIdData message_ids
  3 uint64 consumer_epoch

CommandSuccess
  1 uint64 request_id
  2 Schema schema

CommandProducerSuccess
  1 uint64 request_id
  2 string producer_name
  3 int64 last_sequence_id = -1
  4 bytes schema_version
  5 uint64 topic_epoch
  6 bool producer_ready = true

CommandError
  1 uint64 request_id
  2 int32 error
  3 string message

CommandPing

CommandPong

CommandConsumerStats
  1 uint64 request_id
  4 uint64 consumer_id

CommandConsumerStatsResponse
  1 uint64 request_id
  2 int32 error_code
  3 string error_message
  4 double msg_rate_out
  5 double msg_throughput_out
  6 double msg_rate_redeliver
  7 string consumer_name
  8 uint64 available_permits
  9 uint64 unacked_messages
  10 bool blocked_consumer_on_unacked_msgs
  11 string address
  12 string connected_since
  13 string type
  14 double msg_rate_expired
  15 uint64 msg_backlog
  16 double message_ack_rate

CommandGetLastMessageId
  1 uint64 consumer_id
  2 uint64 request_id

CommandGetLastMessageIdResponse
  1 MessageIdData last_message_id
  2 uint64 request_id
  3 MessageIdData consumer_mark_delete_position

CommandGetTopicsOfNamespace
  1 uint64 request_id
  2 string namespace
  3 int32 mode
  4 string topics_pattern
  5 string topics_hash

CommandGetTopicsOfNamespaceResponse
  1 uint64 request_id
  2 repeated string topics
  3 bool filtered
  4 string topics_hash
  5 bool changed = true

CommandGetSchema
  1 uint64 request_id
  2 string topic
  3 bytes schema_version

CommandGetSchemaResponse
  1 uint64 request_id
  2 int32 error_code
  3 string error_message
  4 Schema schema
  5 bytes schema_version

CommandGetOrCreateSchema
  1 uint64 request_id
  2 string topic
  3 Schema schema
  4 string producer_name

CommandGetOrCreateSchemaResponse
  1 uint64 request_id
  2 int32 error_code
  3 string error_message
  4 bytes schema_version

CommandTcClientConnectRequest
  1 uint64 request_id
  2 uint64 tc_id

CommandTcClientConnectResponse
  1 uint64 request_id
  2 int32 error
  3 string message


BaseCommand
  1 int32 type
  2 CommandConnect connect
  3 CommandConnected connected
  4 CommandSubscribe subscribe
  5 CommandProducer producer
  6 CommandSend send
  7 CommandSendReceipt send_receipt
  8 CommandSendError send_error
  9 CommandMessage message
  10 CommandAck ack
  11 CommandFlow flow
  12 CommandUnsubscribe unsubscribe
  13 CommandSuccess success
  14 CommandError error
  15 CommandCloseProducer close_producer
  16 CommandCloseConsumer close_consumer
  17 CommandProducerSuccess producer_success
  18 CommandPing ping
  19 CommandPong pong
  20 CommandRedeliverUnacknowledgedMessages redeliver_unacknowledged_messages
  21 CommandPartitionedTopicMetadata partition_metadata
  22 CommandPartitionedTopicMetadataResponse partition_metadata_response
  23 CommandLookupTopic lookup_topic
  24 CommandLookupTopicResponse lookup_topic_response
  25 CommandConsumerStats consumer_stats
  26 CommandConsumerStatsResponse consumer_stats_response
  27 CommandReachedEndOfTopic reached_end_of_topic
  28 CommandSeek seek
  29 CommandGetLastMessageId get_last_message_id
  30 CommandGetLastMessageIdResponse get_last_message_id_response
  31 CommandActiveConsumerChange active_consumer_change
  32 CommandGetTopicsOfNamespace get_topics_of_namespace
  33 CommandGetTopicsOfNamespaceResponse get_topics_of_namespace_response
  34 CommandGetSchema get_schema
  35 CommandGetSchemaResponse get_schema_response
  36 CommandAuthChallenge auth_challenge
  37 CommandAuthResponse auth_response
  38 CommandAckResponse ack_response
  39 CommandGetOrCreateSchema get_or_create_schema
  40 CommandGetOrCreateSchemaResponse get_or_create_schema_response
  50 CommandNewTxn new_txn
  51 CommandNewTxnResponse new_txn_response
  52 CommandAddPartitionToTxn add_partition_to_txn
  53 CommandAddPartitionToTxnResponse add_partition_to_txn_response
  54 CommandAddSubscriptionToTxn add_subscription_to_txn
  55 CommandAddSubscriptionToTxnResponse add_subscription_to_txn_response
  56 CommandEndTxn end_txn
  57 CommandEndTxnResponse end_txn_response
  58 CommandEndTxnOnPartition end_txn_on_partition
  59 CommandEndTxnOnPartitionResponse end_txn_on_partition_response
  60 CommandEndTxnOnSubscription end_txn_on_subscription
  61 CommandEndTxnOnSubscriptionResponse end_txn_on_subscription_response
  62 CommandTcClientConnectRequest tc_client_connect_request
  63 CommandTcClientConnectResponse tc_client_connect_response
  68 CommandTopicMigrated topic_migrated
"""

#: what every transaction command's answer holds (PulsarApi.proto's Command*TxnResponse shapes)
_TXN_RESPONSE = """
  1 uint64 request_id
  2 uint64 txnid_least_bits
  3 uint64 txnid_most_bits
  4 int32 error
  5 string message
"""
#: the transaction commands (PIP-31) and PulsarMarkers.proto's TxnCommitMarker shape
_TXN_SCHEMA = """
TxnSubscription
  1 string topic
  2 string subscription

CommandNewTxn
  1 uint64 request_id
  2 uint64 txn_ttl_seconds
  3 uint64 tc_id

CommandAddPartitionToTxn
  1 uint64 request_id
  2 uint64 txnid_least_bits
  3 uint64 txnid_most_bits
  4 repeated string partitions

CommandAddSubscriptionToTxn
  1 uint64 request_id
  2 uint64 txnid_least_bits
  3 uint64 txnid_most_bits
  4 repeated TxnSubscription subscription

CommandEndTxn
  1 uint64 request_id
  2 uint64 txnid_least_bits
  3 uint64 txnid_most_bits
  4 int32 txn_action

CommandEndTxnOnPartition
  1 uint64 request_id
  2 uint64 txnid_least_bits
  3 uint64 txnid_most_bits
  4 string topic
  5 int32 txn_action
  6 uint64 txnid_least_bits_of_low_watermark

CommandEndTxnOnSubscription
  1 uint64 request_id
  2 uint64 txnid_least_bits
  3 uint64 txnid_most_bits
  4 TxnSubscription subscription
  5 int32 txn_action
  6 uint64 txnid_least_bits_of_low_watermark

TxnMarker
  1 repeated MessageIdData message_id
""" + "".join(
    f"\n{name}Response{_TXN_RESPONSE}"
    for name in (
        "CommandNewTxn", "CommandAddPartitionToTxn", "CommandAddSubscriptionToTxn",
        "CommandEndTxn", "CommandEndTxnOnPartition", "CommandEndTxnOnSubscription",
    )
)

_CLASSES = build_classes(_SCHEMA + _TXN_SCHEMA, _PACKAGE)

KeyValue = _CLASSES["KeyValue"]
KeyLongValue = _CLASSES["KeyLongValue"]
IntRange = _CLASSES["IntRange"]
Schema = _CLASSES["Schema"]
MessageIdData = _CLASSES["MessageIdData"]
EncryptionKeys = _CLASSES["EncryptionKeys"]
MessageMetadata = _CLASSES["MessageMetadata"]
SingleMessageMetadata = _CLASSES["SingleMessageMetadata"]
BrokerEntryMetadata = _CLASSES["BrokerEntryMetadata"]
FeatureFlags = _CLASSES["FeatureFlags"]
AuthData = _CLASSES["AuthData"]
KeySharedMeta = _CLASSES["KeySharedMeta"]
BaseCommand = _CLASSES["BaseCommand"]

#: every message class by its schema name, for code that needs the less common commands
MESSAGES: dict[str, type] = dict(_CLASSES)
