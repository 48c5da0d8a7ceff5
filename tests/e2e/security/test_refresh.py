"""Credential refresh: AUTH_CHALLENGE when a connection's token expires, as Pulsar's broker does it.

The broker checks every second (``authenticationRefreshCheckSeconds=1``). A connection whose
token expired gets AUTH_CHALLENGE; an AUTH_RESPONSE with a valid token for the same role keeps it
open, anything else (an expired token, another role, no answer by the next check) closes it.
"""

from __future__ import annotations

import time

import pulsar
import pytest

from magnetar.protocol.enums import CommandType, ServerError
from magnetar.protocol.schema import BaseCommand
from tests.broker.session.test_wire_errors import WireClient

from .conftest import SecureBroker, connect_frame, topic_name

ROLE = "refresher"


def _connect_expiring(broker: SecureBroker, seconds: int) -> WireClient:
    wire = broker.wire()
    wire.send(connect_frame("token", broker.token(ROLE, expires_in=seconds).encode()))
    wire.expect(CommandType.CONNECTED)
    return wire


def _await_challenge(wire: WireClient) -> None:
    challenge = wire.expect(CommandType.AUTH_CHALLENGE, timeout=6).command.auth_challenge
    assert challenge.challenge.auth_method_name == "token"
    assert challenge.challenge.auth_data == b"PulsarAuthRefresh"


def _respond(wire: WireClient, token: str) -> None:
    cmd = BaseCommand(type=CommandType.AUTH_RESPONSE)
    cmd.auth_response.client_version = "magnetar-security-test"
    cmd.auth_response.response.auth_method_name = "token"
    cmd.auth_response.response.auth_data = token.encode()
    wire.send(cmd)


def _assert_refused_and_closed(wire: WireClient) -> None:
    frames = wire.expect_closed(5)
    assert [f.type for f in frames] == [CommandType.ERROR]
    assert frames[0].command.error.error == ServerError.AuthenticationError


def test_a_fresh_token_for_the_same_role_keeps_the_connection(broker: SecureBroker) -> None:
    wire = _connect_expiring(broker, 2)
    try:
        _await_challenge(wire)
        _respond(wire, broker.token(ROLE, expires_in=60))
        time.sleep(2.5)  # two more checks
        wire.ping()
    finally:
        wire.close()


def test_an_expired_answer_closes_the_connection(broker: SecureBroker) -> None:
    wire = _connect_expiring(broker, 2)
    try:
        _await_challenge(wire)
        _respond(wire, broker.token(ROLE, expires_in=-5))
        _assert_refused_and_closed(wire)
    finally:
        wire.close()


def test_a_token_of_another_role_closes_the_connection(broker: SecureBroker) -> None:
    wire = _connect_expiring(broker, 2)
    try:
        _await_challenge(wire)
        _respond(wire, broker.token("someone-else", expires_in=60))
        _assert_refused_and_closed(wire)
    finally:
        wire.close()


def test_an_unanswered_challenge_closes_the_connection(broker: SecureBroker) -> None:
    wire = _connect_expiring(broker, 2)
    try:
        _await_challenge(wire)
        assert wire.expect_closed(5) == []
    finally:
        wire.close()


def test_official_client_with_an_expiring_static_token_is_cut_off(broker: SecureBroker) -> None:
    broker.grant(ROLE, "produce", "consume")
    client = broker.client(
        authentication=pulsar.AuthenticationToken(broker.token(ROLE, expires_in=3)), operation_timeout_seconds=3
    )
    producer = client.create_producer(topic_name(), send_timeout_millis=3000)
    producer.send(b"while valid")
    time.sleep(5)  # expired, challenged, answered with the same expired token, closed; reconnects are refused
    with pytest.raises((pulsar.Timeout, pulsar.ConnectError, pulsar.AlreadyClosed, pulsar.AuthenticationError)):
        producer.send(b"after expiry")


def test_official_client_with_a_token_supplier_stays_connected(broker: SecureBroker) -> None:
    broker.grant(ROLE, "produce", "consume")
    client = broker.client(authentication=pulsar.AuthenticationToken(lambda: broker.token(ROLE, expires_in=3)))
    topic = topic_name()
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, send_timeout_millis=5000)
    producer.send(b"first")
    time.sleep(5)  # the first token expired: the client answered the challenge with a fresh one
    producer.send(b"second")
    assert [consumer.receive(timeout_millis=10_000).data() for _ in range(2)] == [b"first", b"second"]
