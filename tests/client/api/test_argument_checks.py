"""Arguments of the wrong type are refused up front, with the official client's exception types.

The official Python client raises ValueError for an argument of the wrong type (TypeError for
message content a producer cannot send); magnetar's client raises InvalidArgument, which is
that ValueError and magnetar's InvalidConfiguration at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from magnetar.client import (
    Client,
    ConsumerDeadLetterPolicy,
    ConsumerKeySharedPolicy,
    ConsumerType,
    InitialPosition,
    InvalidConfiguration,
    KeySharedMode,
    MessageId,
    ProducerConfig,
    Result,
    Timeout,
)
from magnetar.client.api.arguments import InvalidArgument

from ..conftest import QUIET_MS, RECEIVE_MS

#: nothing listens there: every check below must refuse before any connection is tried
UNREACHABLE = "pulsar://127.0.0.1:1"


@pytest.fixture
def offline() -> Iterator[Client]:
    """A client of an address where nothing listens."""
    client = Client(UNREACHABLE, connection_timeout_ms=500, operation_timeout_seconds=2)
    yield client
    client.close()


def test_an_invalid_argument_is_a_value_error_and_an_invalid_configuration() -> None:
    error = InvalidArgument("bad")
    assert isinstance(error, ValueError)
    assert isinstance(error, InvalidConfiguration)
    assert error.error() == Result.InvalidConfiguration


@pytest.mark.parametrize("options", [
    {"authentication": "test"},
    {"operation_timeout_seconds": "test"},
    {"stats_interval_in_seconds": "test"},
    {"io_threads": "test"},
    {"message_listener_threads": "test"},
    {"concurrent_lookup_requests": "test"},
    {"use_tls": "test"},
    {"tls_trust_certs_file_path": 5},
    {"tls_allow_insecure_connection": "test"},
    {"listener_name": 5},
])
def test_client_options_of_the_wrong_type(options: dict[str, Any]) -> None:
    name = next(iter(options))
    with pytest.raises(InvalidArgument, match=name):
        Client(UNREACHABLE, **options)


@pytest.mark.parametrize("service_url", [None, 5, "fakeServiceUrl", "ftp://host:1"])
def test_service_urls_that_cannot_work(service_url: Any) -> None:
    with pytest.raises(ValueError, match="service"):
        Client(service_url)


def test_fractional_timeouts_are_still_accepted() -> None:
    Client(UNREACHABLE, operation_timeout_seconds=0.5, connection_timeout_ms=250.0).close()


def test_a_fractional_batching_delay_is_accepted() -> None:
    assert ProducerConfig(batching_max_publish_delay_ms=0.25).batching_max_publish_delay_ms == 0.25
    with pytest.raises(InvalidArgument):
        ProducerConfig(batching_max_publish_delay_ms="10")


@pytest.mark.parametrize("options", [
    {"producer_name": 5},
    {"initial_sequence_id": "test"},
    {"send_timeout_millis": "test"},
    {"compression_type": None},
    {"max_pending_messages": "test"},
    {"block_if_queue_full": "test"},
    {"batching_enabled": "test"},
    {"batching_max_allowed_size_in_bytes": "test"},
    {"batching_max_publish_delay_ms": "test"},
    {"properties": "test"},
])
def test_producer_options_of_the_wrong_type(offline: Client, options: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgument, match=next(iter(options))):
        offline.create_producer("persistent://public/default/t", **options)


def test_a_producer_topic_must_be_a_string(offline: Client) -> None:
    with pytest.raises(InvalidArgument, match="topic"):
        offline.create_producer(None)  # type: ignore[arg-type]


def test_chunking_with_batching_is_a_value_error(offline: Client) -> None:
    with pytest.raises(ValueError, match="chunking requires batching to be disabled"):
        offline.create_producer("persistent://public/default/t", chunking_enabled=True, batching_enabled=True)


@pytest.mark.parametrize(("args", "options", "name"), [
    ((None, "sub"), {}, "topic"),
    (("t", None), {}, "subscription_name"),
    (("t", "sub"), {"consumer_type": None}, "consumer_type"),
    (("t", "sub"), {"receiver_queue_size": "test"}, "receiver_queue_size"),
    (("t", "sub"), {"consumer_name": 5}, "consumer_name"),
    (("t", "sub"), {"unacked_messages_timeout_ms": "test"}, "unacked_messages_timeout_ms"),
    (("t", "sub"), {"broker_consumer_stats_cache_time_ms": "test"}, "broker_consumer_stats_cache_time_ms"),
    (("t", "sub"), {"initial_position": "Earliest"}, "initial_position"),
    (("t", "sub"), {"key_shared_policy": "test"}, "key_shared_policy"),
])
def test_subscribe_arguments_of_the_wrong_type(offline: Client, args: tuple, options: dict[str, Any], name: str) -> None:
    with pytest.raises(InvalidArgument, match=name):
        offline.subscribe(*args, **options)


@pytest.mark.parametrize(("args", "options", "name"), [
    ((None, MessageId.earliest), {}, "topic"),
    (("t", None), {}, "start_message_id"),
    (("t", MessageId.earliest), {"receiver_queue_size": "test"}, "receiver_queue_size"),
    (("t", MessageId.earliest), {"reader_name": 5}, "reader_name"),
])
def test_reader_arguments_of_the_wrong_type(offline: Client, args: tuple, options: dict[str, Any], name: str) -> None:
    with pytest.raises(InvalidArgument, match=name):
        offline.create_reader(*args, **options)


def test_enum_options_take_members_and_plain_ints(client: Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", consumer_type=int(ConsumerType.Shared), initial_position=1)
    assert consumer.core.config.consumer_type == ConsumerType.Shared
    assert consumer.core.config.initial_position == InitialPosition.Earliest


@pytest.mark.parametrize(("options", "name"), [
    ({"properties": "test"}, "properties"),
    ({"partition_key": 5}, "partition_key"),
    ({"sequence_id": "test"}, "sequence_id"),
    ({"replication_clusters": 5}, "replication_clusters"),
    ({"disable_replication": "test"}, "disable_replication"),
    ({"event_timestamp": "test"}, "event_timestamp"),
    ({"deliver_at": "test"}, "deliver_at"),
    ({"deliver_after": "test"}, "deliver_after"),
])
def test_send_options_of_the_wrong_type(client: Client, topic: str, options: dict[str, Any], name: str) -> None:
    producer = client.create_producer(topic)
    with pytest.raises(InvalidArgument, match=name):
        producer.send(b"refused", **options)
    with pytest.raises(InvalidArgument, match=name):
        producer.send_async(b"refused", None, **options)


def test_refused_sends_send_nothing_and_hold_no_room(client: Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, max_pending_messages=1, batching_enabled=False)
    for _ in range(3):
        with pytest.raises(TypeError, match="must be bytes, not int"):
            producer.send(5)
        with pytest.raises(ValueError, match="properties"):
            producer.send(b"refused", properties="test")
    producer.send(b"sent")
    assert consumer.receive(RECEIVE_MS).data() == b"sent"
    with pytest.raises(Timeout):
        consumer.receive(QUIET_MS)


def test_seek_to_something_else_than_an_id_or_a_time(client: Client, topic: str) -> None:
    producer = client.create_producer(topic)
    for i in range(3):
        producer.send(b"m%d" % i)
    consumer = client.subscribe(topic, "sub", initial_position=InitialPosition.Earliest)
    reader = client.create_reader(topic, MessageId.earliest)
    for handle in (consumer, reader):
        with pytest.raises(ValueError) as refused:
            handle.seek(1.0)  # type: ignore[arg-type]
        assert str(refused.value) == "invalid seek_arg type <class 'float'>"
    assert consumer.receive(RECEIVE_MS).data() == b"m0"
    assert reader.read_next(RECEIVE_MS).data() == b"m0"


def test_dead_letter_policy_values_and_defaults() -> None:
    for count in (-1, 0, None, "3"):
        with pytest.raises(ValueError, match="max_redeliver_count must be greater than 0"):
            ConsumerDeadLetterPolicy(count)  # type: ignore[arg-type]
    policy = ConsumerDeadLetterPolicy(10)
    assert (policy.max_redeliver_count, policy.dead_letter_topic, policy.initial_subscription_name) == (10, "", "")
    named = ConsumerDeadLetterPolicy(2, "dlq", "keep")
    assert (named.dead_letter_topic, named.initial_subscription_name) == ("dlq", "keep")


@pytest.mark.parametrize(("ranges", "says"), [
    (None, "needs sticky_ranges"),
    ([(0, 65536)], "not within"),
    ([(0, 100), (50, 150)], "overlap"),
])
def test_key_shared_sticky_ranges_that_cannot_work(ranges: Any, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        ConsumerKeySharedPolicy(KeySharedMode.Sticky, False, ranges)


def test_key_shared_policy_keeps_what_it_was_given() -> None:
    policy = ConsumerKeySharedPolicy(
        key_shared_mode=KeySharedMode.Sticky, allow_out_of_order_delivery=True, sticky_ranges=[(0, 100), (101, 200)]
    )
    assert policy.key_shared_mode == KeySharedMode.Sticky
    assert policy.allow_out_of_order_delivery is True
    assert policy.sticky_ranges == [(0, 100), (101, 200)]
