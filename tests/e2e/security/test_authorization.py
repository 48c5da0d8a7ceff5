"""Authorization where Pulsar enforces it, with Pulsar's refusals; grants and revocations act at once.

A refused PRODUCER / SUBSCRIBE / GET_TOPICS_OF_NAMESPACE is an ERROR ``AuthorizationError`` and a
refused LOOKUP / PARTITIONED_METADATA a failed response with that error; the connection stays open.
The official client raises ``pulsar.AuthorizationError``.
"""

from __future__ import annotations

import re

import pulsar
import pytest

from magnetar.protocol.enums import CommandType, LookupType, PartitionedMetadataResult, ServerError
from magnetar.protocol.schema import BaseCommand
from tests.broker.session.test_wire_errors import WireClient

from .conftest import NAMESPACE, SecureBroker, connect_frame, topic_name


def _wire_as(broker: SecureBroker, role: str) -> WireClient:
    wire = broker.wire()
    wire.send(connect_frame("token", broker.token(role).encode()))
    wire.expect(CommandType.CONNECTED)
    return wire


def _client_as(broker: SecureBroker, role: str) -> pulsar.Client:
    return broker.client(authentication=pulsar.AuthenticationToken(broker.token(role)))


def test_produce_without_permission_is_refused_and_consume_with_it_works(broker: SecureBroker) -> None:
    broker.grant("reader-1", "consume")
    client = _client_as(broker, "reader-1")
    topic = topic_name()
    with pytest.raises(pulsar.AuthorizationError):
        client.create_producer(topic)
    client.subscribe(topic, "sub").close()


def test_consume_without_permission_is_refused(broker: SecureBroker) -> None:
    broker.grant("writer-1", "produce")
    client = _client_as(broker, "writer-1")
    topic = topic_name()
    client.create_producer(topic).send(b"x")
    with pytest.raises(pulsar.AuthorizationError):
        client.subscribe(topic, "sub")


def test_refusals_on_the_wire_keep_the_connection_open(broker: SecureBroker) -> None:
    broker.grant("writer-2", "produce")
    wire = _wire_as(broker, "writer-2")
    try:
        topic = topic_name()
        cmd = BaseCommand(type=CommandType.SUBSCRIBE)
        cmd.subscribe.topic = topic
        cmd.subscribe.subscription = "s"
        cmd.subscribe.consumer_id = 1
        cmd.subscribe.request_id = 11
        wire.send(cmd)
        error = wire.expect(CommandType.ERROR).command.error
        assert (error.request_id, error.error, error.message) == (
            11, ServerError.AuthorizationError, "Client is not authorized to subscribe")
        wire.ping()
        assert wire.create_producer(topic).type == CommandType.PRODUCER_SUCCESS
    finally:
        wire.close()


def test_lookup_and_metadata_refused_for_a_role_without_grants(broker: SecureBroker) -> None:
    wire = _wire_as(broker, "nobody")
    try:
        topic = topic_name()
        lookup = BaseCommand(type=CommandType.LOOKUP)
        lookup.lookup_topic.topic = topic
        lookup.lookup_topic.request_id = 21
        wire.send(lookup)
        answer = wire.expect(CommandType.LOOKUP_RESPONSE).command.lookup_topic_response
        assert (answer.response, answer.error, answer.message) == (
            LookupType.Failed, ServerError.AuthorizationError, "Client is not authorized to Lookup")
        metadata = BaseCommand(type=CommandType.PARTITIONED_METADATA)
        metadata.partition_metadata.topic = topic
        metadata.partition_metadata.request_id = 22
        wire.send(metadata)
        reply = wire.expect(CommandType.PARTITIONED_METADATA_RESPONSE).command.partition_metadata_response
        assert (reply.response, reply.error, reply.message) == (
            PartitionedMetadataResult.Failed, ServerError.AuthorizationError,
            "Client is not authorized to Get Partition Metadata")
        topics = BaseCommand(type=CommandType.GET_TOPICS_OF_NAMESPACE)
        topics.get_topics_of_namespace.namespace = NAMESPACE
        topics.get_topics_of_namespace.request_id = 23
        wire.send(topics)
        error = wire.expect(CommandType.ERROR).command.error
        assert (error.error, error.message) == (
            ServerError.AuthorizationError, "Client is not authorized to GetTopicsOfNamespace")
        schema = BaseCommand(type=CommandType.GET_SCHEMA)
        schema.get_schema.topic = topic
        schema.get_schema.request_id = 24
        wire.send(schema)
        response = wire.expect(CommandType.GET_SCHEMA_RESPONSE).command.get_schema_response
        assert response.error_code == ServerError.AuthorizationError
        wire.ping()
    finally:
        wire.close()


def test_tenant_admin_needs_no_grant(broker: SecureBroker) -> None:
    client = _client_as(broker, "acme-admin")
    topic = topic_name()
    consumer = client.subscribe(topic, "sub")
    client.create_producer(topic).send(b"by the tenant admin")
    assert consumer.receive(timeout_millis=10_000).data() == b"by the tenant admin"


def test_grant_takes_effect_at_once_on_the_same_client(broker: SecureBroker) -> None:
    client = _client_as(broker, "late-grant")
    topic = topic_name()
    with pytest.raises(pulsar.AuthorizationError):
        client.create_producer(topic)
    broker.grant("late-grant", "produce", "consume")
    consumer = client.subscribe(topic, "sub")
    client.create_producer(topic).send(b"granted")
    assert consumer.receive(timeout_millis=10_000).data() == b"granted"


def test_revocation_takes_effect_at_once_for_new_producers_and_consumers(broker: SecureBroker) -> None:
    broker.grant("revoked", "produce", "consume")
    client = _client_as(broker, "revoked")
    topic = topic_name()
    client.create_producer(topic).send(b"before")
    broker.revoke("revoked")
    with pytest.raises(pulsar.AuthorizationError):
        client.create_producer(topic)
    with pytest.raises(pulsar.AuthorizationError):
        client.subscribe(topic, "sub")
    with pytest.raises(pulsar.AuthorizationError):
        _client_as(broker, "revoked").create_producer(topic_name())


def test_topic_level_grant(broker: SecureBroker) -> None:
    topic = topic_name()
    other = topic_name()
    status = broker.admin("POST", f"persistent/{topic.removeprefix('persistent://')}/permissions/topic-only", ["produce"])
    assert status in (200, 204)
    client = _client_as(broker, "topic-only")
    client.create_producer(topic).send(b"x")
    with pytest.raises(pulsar.AuthorizationError):
        client.create_producer(other)


def test_an_unknown_tenant_is_topic_not_found_rather_than_a_refusal(broker: SecureBroker) -> None:
    client = _client_as(broker, "nobody")
    with pytest.raises(pulsar.TopicNotFound):
        client.create_producer("persistent://no-such-tenant/ns/t")


def test_with_authentication_on_only_the_cluster_exists_at_first(broker: SecureBroker) -> None:
    wire = _wire_as(broker, "superUser")
    try:
        lookup = BaseCommand(type=CommandType.LOOKUP)
        lookup.lookup_topic.topic = "persistent://public/default/t"
        lookup.lookup_topic.request_id = 31
        wire.send(lookup)
        resp = wire.expect(CommandType.LOOKUP_RESPONSE).command.lookup_topic_response
        # public/default is not created with authentication on: its topics are not found
        assert (resp.request_id, resp.response, resp.error) == (31, LookupType.Failed, ServerError.TopicNotFound)
    finally:
        wire.close()


def test_refusals_and_authentication_failures_are_counted_in_metrics(broker: SecureBroker) -> None:
    client = _client_as(broker, "counted")
    with pytest.raises(pulsar.AuthorizationError):
        client.create_producer(topic_name())
    wire = broker.wire()
    wire.send(connect_frame("token", b"not-a-token"))
    wire.expect_closed(10)
    wire.close()
    text = broker.metrics()
    assert re.search(r'magnetar_authorization_refusals_total\{[^}]*operation="PARTITIONED_METADATA"[^}]*\} [1-9]', text)
    assert re.search(r'pulsar_authentication_failures_total\{[^}]*auth_method="token"[^}]*\} [1-9]', text)
