"""Hostile CONNECTs against a running secured broker: each gets ERROR AuthenticationError and a close.

Random and mutated ``auth_data`` for every method, huge tokens, unknown and random method names:
never a crash, never a hang, and a healthy connection next to them keeps working.
"""

from __future__ import annotations

import pulsar
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magnetar.broker.security.tokens import TokenError, decode_token
from magnetar.protocol.enums import CommandType, ServerError

from .conftest import SecureBroker, connect_frame, topic_name

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
METHODS = st.one_of(st.sampled_from(["token", "basic", "tls", "none", "sasl", "athenz", ""]), st.text(max_size=40))


def _assert_refused(broker: SecureBroker, method: str, data: bytes) -> None:
    wire = broker.wire()
    try:
        wire.send(connect_frame(method, data))
        frames = wire.expect_closed(10)
    finally:
        wire.close()
    assert [f.type for f in frames] == [CommandType.ERROR], (method, data[:40])
    error = frames[0].command.error
    assert error.error == ServerError.AuthenticationError and error.message


def _still_valid(data: bytes, secret: bytes) -> bool:
    """Whether a mutation left a valid token (base64 padding bits can change without changing the bytes)."""
    try:
        decode_token(data.decode(), secret)
    except (TokenError, UnicodeDecodeError):
        return False
    return True


@st.composite
def mutated_token(draw: st.DrawFn, token: str) -> bytes:
    data = bytearray(token.encode())
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["flip", "cut", "insert"]))
        if action == "flip" and position < len(data):
            data[position] ^= draw(st.integers(1, 255))
        elif action == "cut":
            del data[position:position + draw(st.integers(1, 30))]
        else:
            data[position:position] = draw(st.binary(min_size=1, max_size=30))
    return bytes(data)


@FUZZ
@given(method=METHODS, data=st.binary(max_size=2048))
def test_random_auth_data(secure_broker: SecureBroker, method: str, data: bytes) -> None:
    _assert_refused(secure_broker, method, data)


@FUZZ
@given(data=st.data())
def test_mutated_tokens_and_passwords(secure_broker: SecureBroker, data: st.DataObject) -> None:
    token = secure_broker.token("superUser")
    mutated = data.draw(st.one_of(mutated_token(token), mutated_token("bea:s3cret-pw")))
    method = "token" if mutated.count(b".") >= 2 else "basic"
    if mutated in (token.encode(), b"bea:s3cret-pw") or _still_valid(mutated, secure_broker.secret):
        return
    _assert_refused(secure_broker, method, mutated)


def test_huge_tokens_and_many_refusals_leave_other_connections_alone(secure_broker: SecureBroker) -> None:
    healthy = secure_broker.wire()
    healthy.send(connect_frame("token", secure_broker.token("superUser").encode()))
    healthy.expect(CommandType.CONNECTED)
    client = secure_broker.client(authentication=pulsar.AuthenticationToken(secure_broker.token("superUser")))
    topic = topic_name()
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic)
    try:
        token = secure_broker.token("superUser")
        for size in (200 * 1024, 4 * 1024 * 1024):
            _assert_refused(secure_broker, "token", (token * (size // len(token) + 1)).encode()[:size])
            _assert_refused(secure_broker, "basic", b"bea:" + b"x" * size)
        for index in range(30):
            _assert_refused(secure_broker, f"unknown-{index}", b"whatever")
            healthy.ping()
            producer.send(f"m{index}".encode())
        assert [consumer.receive(timeout_millis=10_000).data() for _ in range(30)] == [
            f"m{i}".encode() for i in range(30)]
    finally:
        healthy.close()
        client.close()
    assert secure_broker.proc.proc is not None and secure_broker.proc.proc.poll() is None
