"""TLS-only listeners (the plain ports switched off by empty values) and the anonymous role.

The official client reaches the broker over ``pulsar+ssl://`` and over ``https://`` (HTTP lookup,
then the TLS broker URL the lookup answers), with host name verification against a certificate for
the advertised name ``localhost``; a client without credentials gets ``anonymousUserRole``.
"""

from __future__ import annotations

import json
import socket
import ssl
import urllib.request
from collections.abc import Iterator

import pulsar
import pytest

from magnetar.broker.security.tokens import generate_secret_key
from tests.broker.security.conftest import Pki

from .conftest import SecureBroker, start_secure_broker, topic_name

OPEN_NAMESPACE = "public/open"


@pytest.fixture(scope="module")
def tls_only(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[SecureBroker]:
    directory = tmp_path_factory.mktemp("tls-only")
    secret = generate_secret_key()
    proc = start_secure_broker(directory, pki, secret, {"anonymousUserRole": "anonymous"}, plain=False)
    broker = SecureBroker(proc, pki, secret)
    try:
        assert broker.admin("PUT", "tenants/public", {"adminRoles": [], "allowedClusters": ["standalone"]}) in (204, 409)  # the broker made it, as Pulsar standalone
        policies = {"auth_policies": {"namespace_auth": {"anonymous": ["produce", "consume"]}}}
        assert broker.admin("PUT", f"namespaces/{OPEN_NAMESPACE}", policies) in (200, 204)
        yield broker
    finally:
        for c in broker.clients:
            c.close()
        proc.stop()


def _round_trip(client: pulsar.Client) -> None:
    topic = topic_name(OPEN_NAMESPACE)
    consumer = client.subscribe(topic, "sub")
    client.create_producer(topic).send(b"over TLS only")
    assert consumer.receive(timeout_millis=10_000).data() == b"over TLS only"


def test_plain_ports_are_off(tls_only: SecureBroker) -> None:
    for port in (tls_only.proc.port, tls_only.proc.http_port):
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_anonymous_client_over_pulsar_ssl_with_hostname_verification(tls_only: SecureBroker) -> None:
    _round_trip(tls_only.client(tls_only.tls_url))


def test_anonymous_client_over_https_lookup(tls_only: SecureBroker) -> None:
    assert tls_only.proc.https_port is not None
    _round_trip(tls_only.client(tls_only.proc.https_url, tls_trust_certs_file_path=str(tls_only.pki.ca_cert),
                                tls_validate_hostname=True))


def test_https_lookup_answers_the_tls_urls(tls_only: SecureBroker) -> None:
    context = ssl.create_default_context(cafile=str(tls_only.pki.ca_cert))
    topic = topic_name(OPEN_NAMESPACE).removeprefix("persistent://")
    url = f"{tls_only.proc.https_url}/lookup/v2/topic/persistent/{topic}"
    with urllib.request.urlopen(url, timeout=10, context=context) as resp:
        answer = json.loads(resp.read())
    assert answer["brokerUrlTls"] == tls_only.tls_url
    assert answer["httpUrlTls"] == tls_only.proc.https_url


def test_anonymous_role_has_only_what_it_was_granted(tls_only: SecureBroker) -> None:
    client = tls_only.client(tls_only.tls_url)
    with pytest.raises(pulsar.AuthorizationError):
        client.create_producer("persistent://public/closed/t")
