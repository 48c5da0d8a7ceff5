"""The enumerations of the Pulsar binary protocol, as Python IntEnums.

The wire schema carries these as plain integers; these classes give them names.
"""

from __future__ import annotations

from enum import IntEnum

#: the protocol version magnetar speaks and announces in CONNECTED
PROTOCOL_VERSION = 20
#: the lowest client protocol version that has everything the broker relies on
MIN_PROTOCOL_VERSION = 12


class CommandType(IntEnum):
    """BaseCommand.type: which sub-command a frame carries."""

    CONNECT = 2
    CONNECTED = 3
    SUBSCRIBE = 4
    PRODUCER = 5
    SEND = 6
    SEND_RECEIPT = 7
    SEND_ERROR = 8
    MESSAGE = 9
    ACK = 10
    FLOW = 11
    UNSUBSCRIBE = 12
    SUCCESS = 13
    ERROR = 14
    CLOSE_PRODUCER = 15
    CLOSE_CONSUMER = 16
    PRODUCER_SUCCESS = 17
    PING = 18
    PONG = 19
    REDELIVER_UNACKNOWLEDGED_MESSAGES = 20
    PARTITIONED_METADATA = 21
    PARTITIONED_METADATA_RESPONSE = 22
    LOOKUP = 23
    LOOKUP_RESPONSE = 24
    CONSUMER_STATS = 25
    CONSUMER_STATS_RESPONSE = 26
    REACHED_END_OF_TOPIC = 27
    SEEK = 28
    GET_LAST_MESSAGE_ID = 29
    GET_LAST_MESSAGE_ID_RESPONSE = 30
    ACTIVE_CONSUMER_CHANGE = 31
    GET_TOPICS_OF_NAMESPACE = 32
    GET_TOPICS_OF_NAMESPACE_RESPONSE = 33
    GET_SCHEMA = 34
    GET_SCHEMA_RESPONSE = 35
    AUTH_CHALLENGE = 36
    AUTH_RESPONSE = 37
    ACK_RESPONSE = 38
    GET_OR_CREATE_SCHEMA = 39
    GET_OR_CREATE_SCHEMA_RESPONSE = 40
    NEW_TXN = 50
    NEW_TXN_RESPONSE = 51
    ADD_PARTITION_TO_TXN = 52
    ADD_PARTITION_TO_TXN_RESPONSE = 53
    ADD_SUBSCRIPTION_TO_TXN = 54
    ADD_SUBSCRIPTION_TO_TXN_RESPONSE = 55
    END_TXN = 56
    END_TXN_RESPONSE = 57
    END_TXN_ON_PARTITION = 58
    END_TXN_ON_PARTITION_RESPONSE = 59
    END_TXN_ON_SUBSCRIPTION = 60
    END_TXN_ON_SUBSCRIPTION_RESPONSE = 61
    TC_CLIENT_CONNECT_REQUEST = 62
    TC_CLIENT_CONNECT_RESPONSE = 63
    WATCH_TOPIC_LIST = 64
    TOPIC_MIGRATED = 68


#: BaseCommand field name holding the sub-command of each type
COMMAND_FIELD: dict[int, str] = {
    CommandType.CONNECT: "connect",
    CommandType.CONNECTED: "connected",
    CommandType.SUBSCRIBE: "subscribe",
    CommandType.PRODUCER: "producer",
    CommandType.SEND: "send",
    CommandType.SEND_RECEIPT: "send_receipt",
    CommandType.SEND_ERROR: "send_error",
    CommandType.MESSAGE: "message",
    CommandType.ACK: "ack",
    CommandType.FLOW: "flow",
    CommandType.UNSUBSCRIBE: "unsubscribe",
    CommandType.SUCCESS: "success",
    CommandType.ERROR: "error",
    CommandType.CLOSE_PRODUCER: "close_producer",
    CommandType.CLOSE_CONSUMER: "close_consumer",
    CommandType.PRODUCER_SUCCESS: "producer_success",
    CommandType.PING: "ping",
    CommandType.PONG: "pong",
    CommandType.REDELIVER_UNACKNOWLEDGED_MESSAGES: "redeliver_unacknowledged_messages",
    CommandType.PARTITIONED_METADATA: "partition_metadata",
    CommandType.PARTITIONED_METADATA_RESPONSE: "partition_metadata_response",
    CommandType.LOOKUP: "lookup_topic",
    CommandType.LOOKUP_RESPONSE: "lookup_topic_response",
    CommandType.CONSUMER_STATS: "consumer_stats",
    CommandType.CONSUMER_STATS_RESPONSE: "consumer_stats_response",
    CommandType.REACHED_END_OF_TOPIC: "reached_end_of_topic",
    CommandType.SEEK: "seek",
    CommandType.GET_LAST_MESSAGE_ID: "get_last_message_id",
    CommandType.GET_LAST_MESSAGE_ID_RESPONSE: "get_last_message_id_response",
    CommandType.ACTIVE_CONSUMER_CHANGE: "active_consumer_change",
    CommandType.GET_TOPICS_OF_NAMESPACE: "get_topics_of_namespace",
    CommandType.GET_TOPICS_OF_NAMESPACE_RESPONSE: "get_topics_of_namespace_response",
    CommandType.GET_SCHEMA: "get_schema",
    CommandType.GET_SCHEMA_RESPONSE: "get_schema_response",
    CommandType.AUTH_CHALLENGE: "auth_challenge",
    CommandType.AUTH_RESPONSE: "auth_response",
    CommandType.ACK_RESPONSE: "ack_response",
    CommandType.GET_OR_CREATE_SCHEMA: "get_or_create_schema",
    CommandType.GET_OR_CREATE_SCHEMA_RESPONSE: "get_or_create_schema_response",
    CommandType.NEW_TXN: "new_txn",
    CommandType.NEW_TXN_RESPONSE: "new_txn_response",
    CommandType.ADD_PARTITION_TO_TXN: "add_partition_to_txn",
    CommandType.ADD_PARTITION_TO_TXN_RESPONSE: "add_partition_to_txn_response",
    CommandType.ADD_SUBSCRIPTION_TO_TXN: "add_subscription_to_txn",
    CommandType.ADD_SUBSCRIPTION_TO_TXN_RESPONSE: "add_subscription_to_txn_response",
    CommandType.END_TXN: "end_txn",
    CommandType.END_TXN_RESPONSE: "end_txn_response",
    CommandType.END_TXN_ON_PARTITION: "end_txn_on_partition",
    CommandType.END_TXN_ON_PARTITION_RESPONSE: "end_txn_on_partition_response",
    CommandType.END_TXN_ON_SUBSCRIPTION: "end_txn_on_subscription",
    CommandType.END_TXN_ON_SUBSCRIPTION_RESPONSE: "end_txn_on_subscription_response",
    CommandType.TC_CLIENT_CONNECT_REQUEST: "tc_client_connect_request",
    CommandType.TC_CLIENT_CONNECT_RESPONSE: "tc_client_connect_response",
    CommandType.TOPIC_MIGRATED: "topic_migrated",
}


class ServerError(IntEnum):
    """Error codes a broker returns in ERROR, SEND_ERROR and lookup responses."""

    UnknownError = 0
    MetadataError = 1
    PersistenceError = 2
    AuthenticationError = 3
    AuthorizationError = 4
    ConsumerBusy = 5
    ServiceNotReady = 6
    ProducerBlockedQuotaExceededError = 7
    ProducerBlockedQuotaExceededException = 8
    ChecksumError = 9
    UnsupportedVersionError = 10
    TopicNotFound = 11
    SubscriptionNotFound = 12
    ConsumerNotFound = 13
    TooManyRequests = 14
    TopicTerminatedError = 15
    ProducerBusy = 16
    InvalidTopicName = 17
    IncompatibleSchema = 18
    ConsumerAssignError = 19
    TransactionCoordinatorNotFound = 20
    InvalidTxnStatus = 21
    NotAllowedError = 22
    TransactionConflict = 23
    TransactionNotFound = 24
    ProducerFenced = 25


class SubType(IntEnum):
    """Subscription types."""

    Exclusive = 0
    Shared = 1
    Failover = 2
    Key_Shared = 3


class InitialPosition(IntEnum):
    """Where a new subscription starts."""

    Latest = 0
    Earliest = 1


class AckType(IntEnum):
    """Individual or cumulative acknowledgement."""

    Individual = 0
    Cumulative = 1


class CompressionType(IntEnum):
    """Payload compression codecs."""

    NONE = 0
    LZ4 = 1
    ZLIB = 2
    ZSTD = 3
    SNAPPY = 4


class ProducerAccessMode(IntEnum):
    """How a producer shares a topic with other producers."""

    Shared = 0
    Exclusive = 1
    WaitForExclusive = 2
    ExclusiveWithFencing = 3


class KeySharedMode(IntEnum):
    """Key_Shared hash-range assignment modes: split automatically, or fixed (sticky) ranges."""

    AUTO_SPLIT = 0
    STICKY = 1
    #: the official Python client's names of the same modes
    AutoSplit = 0
    Sticky = 1


class LookupType(IntEnum):
    """CommandLookupTopicResponse.response."""

    Redirect = 0
    Connect = 1
    Failed = 2


class PartitionedMetadataResult(IntEnum):
    """CommandPartitionedTopicMetadataResponse.response."""

    Success = 0
    Failed = 1


class TopicsMode(IntEnum):
    """CommandGetTopicsOfNamespace.mode."""

    PERSISTENT = 0
    NON_PERSISTENT = 1
    ALL = 2


class SchemaType(IntEnum):
    """Schema.type on the wire (the registry's names differ; see the schema module)."""

    NONE = 0
    STRING = 1
    JSON = 2
    PROTOBUF = 3
    AVRO = 4
    BOOLEAN = 5
    INT8 = 6
    INT16 = 7
    INT32 = 8
    INT64 = 9
    FLOAT = 10
    DOUBLE = 11
    DATE = 12
    TIME = 13
    TIMESTAMP = 14
    KEY_VALUE = 15
    INSTANT = 16
    LOCAL_DATE = 17
    LOCAL_TIME = 18
    LOCAL_DATE_TIME = 19
    PROTOBUF_NATIVE = 20
    AUTO_CONSUME = 21
    EXTERNAL = 22


class TxnAction(IntEnum):
    """CommandEndTxn.txn_action: what ends a transaction."""

    COMMIT = 0
    ABORT = 1


class MarkerType(IntEnum):
    """MessageMetadata.marker_type of PulsarMarkers.proto: entries no consumer receives."""

    UNKNOWN_MARKER = 0
    REPLICATED_SUBSCRIPTION_SNAPSHOT_REQUEST = 10
    REPLICATED_SUBSCRIPTION_SNAPSHOT_RESPONSE = 11
    REPLICATED_SUBSCRIPTION_SNAPSHOT = 12
    REPLICATED_SUBSCRIPTION_UPDATE = 13
    TXN_COMMITTING = 19
    TXN_COMMIT = 20
    TXN_ABORT = 21
