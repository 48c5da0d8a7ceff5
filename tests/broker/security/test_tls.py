"""Real TLS handshakes on 127.0.0.1 with the contexts built from the settings."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from magnetar.broker.security import SecurityConfigError, SecuritySettings, client_context, server_context
from magnetar.broker.security.providers import common_name
from magnetar.broker.security.tls import openssl_cipher_name, peer_certificate
from tests.broker.security.conftest import Pki


def _settings(pki: Pki, **overrides: Any) -> SecuritySettings:
    values: dict[str, Any] = {
        "broker_service_port_tls": 0,
        "tls_certificate_file_path": str(pki.server_cert),
        "tls_key_file_path": str(pki.server_key),
        "tls_trust_certs_file_path": str(pki.ca_cert),
    }
    values.update(overrides)
    return SecuritySettings(**values)


@contextmanager
def _server(context: ssl.SSLContext) -> Iterator[tuple[int, dict[str, object]]]:
    """Accept one TLS connection in a thread; report the peer certificate's CN or the handshake error."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    outcome: dict[str, object] = {}

    def serve() -> None:
        conn, _ = listener.accept()
        conn.settimeout(5)
        try:
            with context.wrap_socket(conn, server_side=True) as tls:
                der = peer_certificate(tls)
                outcome["cn"] = common_name(der) if der else None
                tls.sendall(b"ok")
        except (ssl.SSLError, OSError) as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield port, outcome
    finally:
        thread.join(5)
        listener.close()


def _connect(port: int, context: ssl.SSLContext) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            return tls.recv(2)


def test_handshake_with_a_client_certificate_gives_its_common_name(pki: Pki) -> None:
    with _server(server_context(_settings(pki))) as (port, outcome):
        client = client_context(str(pki.ca_cert), cert_file=str(pki.client_cert), key_file=str(pki.client_key))
        assert _connect(port, client) == b"ok"
    assert outcome == {"cn": "admin"}


def test_handshake_without_a_client_certificate_is_allowed_unless_required(pki: Pki) -> None:
    with _server(server_context(_settings(pki))) as (port, outcome):
        assert _connect(port, client_context(str(pki.ca_cert))) == b"ok"
    assert outcome == {"cn": None}


def test_a_required_client_certificate_is_enforced(pki: Pki) -> None:
    context = server_context(_settings(pki, tls_require_trusted_client_cert_on_connect=True))
    assert context.verify_mode == ssl.CERT_REQUIRED
    with _server(context) as (port, outcome):
        with pytest.raises((ssl.SSLError, OSError)):
            _connect(port, client_context(str(pki.ca_cert)))
            _connect(port, client_context(str(pki.ca_cert)))
    assert isinstance(outcome.get("error"), ssl.SSLError)


def test_a_client_certificate_from_an_untrusted_ca_is_refused(pki: Pki) -> None:
    with _server(server_context(_settings(pki))) as (port, outcome):
        rogue = client_context(str(pki.ca_cert), cert_file=str(pki.rogue_client_cert),
                               key_file=str(pki.rogue_client_key))
        with pytest.raises((ssl.SSLError, OSError)):
            _connect(port, rogue)
            _connect(port, rogue)
    assert isinstance(outcome.get("error"), ssl.SSLError)
    assert "cn" not in outcome


def test_the_client_refuses_a_server_its_trust_file_does_not_cover(pki: Pki) -> None:
    with _server(server_context(_settings(pki))) as (port, outcome):
        with pytest.raises(ssl.SSLCertVerificationError):
            _connect(port, client_context(str(pki.rogue_ca_cert)))
    assert "cn" not in outcome


def test_protocols_limit_the_versions(pki: Pki) -> None:
    context = server_context(_settings(pki, tls_protocols=("TLSv1.3",)))
    assert context.minimum_version == ssl.TLSVersion.TLSv1_3
    client = client_context(str(pki.ca_cert))
    client.maximum_version = ssl.TLSVersion.TLSv1_2
    with _server(context) as (port, outcome):
        with pytest.raises((ssl.SSLError, OSError)):
            _connect(port, client)
    assert isinstance(outcome.get("error"), ssl.SSLError)


def test_java_cipher_names_are_translated_and_applied(pki: Pki) -> None:
    assert openssl_cipher_name("TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384") == "ECDHE-ECDSA-AES256-GCM-SHA384"
    assert openssl_cipher_name("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA") == "ECDHE-RSA-AES128-SHA"
    assert openssl_cipher_name("TLS_AES_128_GCM_SHA256") is None
    context = server_context(_settings(pki, tls_ciphers=("TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",),
                                       tls_protocols=("TLSv1.2",)))
    with _server(context) as (port, outcome):
        client = client_context(str(pki.ca_cert))
        client.maximum_version = ssl.TLSVersion.TLSv1_2
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            with client.wrap_socket(raw, server_hostname="localhost") as tls:
                assert tls.cipher()[0] == "ECDHE-ECDSA-AES256-GCM-SHA384"
                assert tls.recv(2) == b"ok"


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ({"tls_certificate_file_path": "/nonexistent/cert.pem"}, "tlsCertificateFilePath"),
        ({"tls_key_file_path": "/nonexistent/key.pem"}, "tlsKeyFilePath"),
        ({"tls_trust_certs_file_path": "/nonexistent/ca.pem"}, "tlsTrustCertsFilePath"),
        ({"tls_ciphers": ("TLS_FOO_WITH_BAR_SHA",)}, "tlsCiphers"),
        ({"tls_ciphers": ("NOT-A-CIPHER",)}, "tlsCiphers"),
    ],
)
def test_unusable_files_and_values_name_the_setting(pki: Pki, overrides: dict[str, object], key: str) -> None:
    with pytest.raises(SecurityConfigError) as info:
        server_context(_settings(pki, **overrides))
    assert info.value.key == key


def test_a_key_that_does_not_match_the_certificate_is_refused(pki: Pki) -> None:
    with pytest.raises(SecurityConfigError, match="tlsCertificateFilePath: the certificate and key"):
        server_context(_settings(pki, tls_key_file_path=str(pki.client_key)))


def test_insecure_without_trust_file_asks_for_no_certificate(pki: Pki) -> None:
    context = server_context(_settings(pki, tls_allow_insecure_connection=True, tls_trust_certs_file_path=None))
    assert context.verify_mode == ssl.CERT_NONE
    insecure_client = client_context(allow_insecure=True)
    with _server(context) as (port, outcome):
        assert _connect(port, insecure_client) == b"ok"
    assert outcome == {"cn": None}
