"""Each authentication provider with the official client, and each refusal with its exact error.

On the wire a refused CONNECT is answered with ERROR ``AuthenticationError`` and the connection is
closed; the official client then fails the operation (it retries the connection until its
operation timeout, as against Apache Pulsar).
"""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
from pathlib import Path

import pulsar
import pytest

from magnetar.broker.security.tokens import create_token, generate_secret_key
from magnetar.protocol.enums import CommandType, ServerError
from magnetar.protocol.framing import encode_command
from tests.broker.security.conftest import Pki
from tests.broker.session.test_wire_errors import WireClient

from .conftest import USERS, SecureBroker, connect_frame, start_secure_broker, topic_name

FAILED_CONNECT = (pulsar.Timeout, pulsar.ConnectError, pulsar.AuthenticationError)


def _round_trip(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic)
    producer.send(b"secret message")
    message = consumer.receive(timeout_millis=10_000)
    assert message.data() == b"secret message"
    consumer.acknowledge(message)


def _refused(broker: SecureBroker, wire: WireClient, method: str, data: bytes) -> str:
    """Send CONNECT with these credentials; assert ERROR AuthenticationError then a close; return the message."""
    wire.send(connect_frame(method, data))
    frames = wire.expect_closed(10)
    assert [f.type for f in frames] == [CommandType.ERROR]
    error = frames[0].command.error
    assert error.error == ServerError.AuthenticationError
    return str(error.message)


def test_token_hs256_round_trip(broker: SecureBroker) -> None:
    broker.grant("hs-writer", "produce", "consume")
    client = broker.client(authentication=pulsar.AuthenticationToken(broker.token("hs-writer")))
    _round_trip(client, topic_name())


def test_basic_htpasswd_round_trip_over_tls(broker: SecureBroker) -> None:
    broker.grant("bea", "produce", "consume")
    client = broker.client(broker.tls_url, authentication=pulsar.AuthenticationBasic("bea", USERS["bea"]))
    _round_trip(client, topic_name())


def test_tls_client_certificate_is_the_role_with_hostname_verification(broker: SecureBroker) -> None:
    pki = broker.pki
    client = broker.client(
        broker.tls_url, authentication=pulsar.AuthenticationTLS(str(pki.client_cert), str(pki.client_key))
    )
    _round_trip(client, topic_name())  # CN "admin" is a superuser: no grant needed


def test_tls_lookup_answers_the_tls_url(broker: SecureBroker) -> None:
    wire = broker.wire(tls=True, cert=(broker.pki.client_cert, broker.pki.client_key))
    try:
        wire.send(connect_frame("tls", b""))
        wire.expect(CommandType.CONNECTED)
        cmd = connect_frame(None, None)
        cmd.type = CommandType.LOOKUP
        cmd.ClearField("connect")
        cmd.lookup_topic.topic = topic_name()
        cmd.lookup_topic.request_id = 7
        wire.send(cmd)
        answer = wire.expect(CommandType.LOOKUP_RESPONSE).command.lookup_topic_response
        assert answer.broker_service_url_tls == broker.tls_url
        assert answer.broker_service_url == broker.plain_url
    finally:
        wire.close()


def test_connected_announces_auth_refresh(broker: SecureBroker) -> None:
    wire = broker.wire()
    try:
        wire.send(connect_frame("token", broker.token("someone").encode()))
        connected = wire.expect(CommandType.CONNECTED).command.connected
        assert connected.feature_flags.supports_auth_refresh
    finally:
        wire.close()


def test_expired_token_is_refused(broker: SecureBroker) -> None:
    expired = broker.token("late-comer", expires_in=-60)
    wire = broker.wire()
    try:
        assert "expired" in _refused(broker, wire, "token", expired.encode()).lower()
    finally:
        wire.close()
    client = broker.client(authentication=pulsar.AuthenticationToken(expired), operation_timeout_seconds=3)
    with pytest.raises(FAILED_CONNECT):
        client.create_producer(topic_name())


def test_token_signed_with_another_key_is_refused(broker: SecureBroker) -> None:
    forged = create_token(generate_secret_key(), "superUser")
    wire = broker.wire()
    try:
        assert "signature" in _refused(broker, wire, "token", forged.encode()).lower()
    finally:
        wire.close()
    client = broker.client(authentication=pulsar.AuthenticationToken(forged), operation_timeout_seconds=3)
    with pytest.raises(FAILED_CONNECT):
        client.create_producer(topic_name())


def test_wrong_password_is_refused(broker: SecureBroker) -> None:
    wire = broker.wire()
    try:
        assert _refused(broker, wire, "basic", b"bea:not-the-password") == "Unknown user or invalid password"
    finally:
        wire.close()
    client = broker.client(authentication=pulsar.AuthenticationBasic("bea", "nope"), operation_timeout_seconds=3)
    with pytest.raises(FAILED_CONNECT):
        client.create_producer(topic_name())


def test_no_credentials_without_anonymous_role_is_refused(broker: SecureBroker) -> None:
    wire = broker.wire()
    try:
        assert "anonymous" in _refused(broker, wire, "none", b"").lower()
    finally:
        wire.close()


def test_client_certificate_from_an_untrusted_ca_is_refused_in_the_handshake(broker: SecureBroker) -> None:
    pki = broker.pki
    context = ssl.create_default_context(cafile=str(pki.ca_cert))
    context.load_cert_chain(str(pki.rogue_client_cert), str(pki.rogue_client_key))
    assert broker.proc.tls_port is not None
    with socket.create_connection(("127.0.0.1", broker.proc.tls_port), timeout=10) as raw:
        try:  # TLS 1.3 reports the refusal on the first read after the handshake, TLS 1.2 in it
            with context.wrap_socket(raw, server_hostname="localhost") as tls:
                tls.sendall(encode_command(connect_frame("tls", b"")))
                answer = tls.recv(1)
        except (ssl.SSLError, ConnectionResetError) as exc:
            answer = str(exc).encode()
    assert b"CONNECTED" not in answer and (answer == b"" or b"unknown ca" in answer.lower()), answer
    client = broker.client(
        broker.tls_url, authentication=pulsar.AuthenticationTLS(str(pki.rogue_client_cert), str(pki.rogue_client_key)),
        operation_timeout_seconds=3,
    )
    with pytest.raises(FAILED_CONNECT):
        client.create_producer(topic_name())


def test_server_certificate_from_an_untrusted_ca_is_refused_by_the_client(broker: SecureBroker) -> None:
    client = broker.client(
        broker.tls_url, tls_trust_certs_file_path=str(broker.pki.rogue_ca_cert),
        authentication=pulsar.AuthenticationToken(broker.token("superUser")), operation_timeout_seconds=3,
    )
    with pytest.raises(FAILED_CONNECT):
        client.create_producer(topic_name())


def _tokens_cli(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "magnetar.cli.main", "tokens", *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_token_rs256_key_pair_from_magnetar_tokens(tmp_path: Path, pki: Pki) -> None:
    private_key, public_key = tmp_path / "private.key", tmp_path / "public.key"
    _tokens_cli("create-key-pair", "--signature-algorithm", "RS256",
                "--output-private-key", str(private_key), "--output-public-key", str(public_key))
    token = _tokens_cli("create", "--subject", "superUser", "--private-key", f"file://{private_key}")
    other = tmp_path / "other"
    other.mkdir()
    _tokens_cli("create-key-pair", "--output-private-key", str(other / "private.key"),
                "--output-public-key", str(other / "public.key"))
    forged = _tokens_cli("create", "--subject", "superUser", "--private-key", f"file://{other}/private.key")
    proc = start_secure_broker(tmp_path, pki, generate_secret_key(), {
        "tokenSecretKey": "", "tokenPublicKey": f"file://{public_key}",
    })
    broker = SecureBroker(proc, pki, b"", super_token=token)
    try:
        assert broker.admin("PUT", "tenants/public", {"adminRoles": [], "allowedClusters": ["standalone"]}) in (204, 409)
        assert broker.admin("PUT", "namespaces/public/rs") in (200, 204)
        client = broker.client(authentication=pulsar.AuthenticationToken(token))
        _round_trip(client, topic_name("public/rs"))
        wire = broker.wire()
        try:
            assert "signature" in _refused(broker, wire, "token", forged.encode()).lower()
        finally:
            wire.close()
    finally:
        for c in broker.clients:
            c.close()
        proc.stop()
