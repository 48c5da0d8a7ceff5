"""Clusters (ClusterData), the local cluster's name, and the replication policies of namespaces and
topics, over REST as pulsar-admin sends them; the broker client's credentials and the secured defaults."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from magnetar.broker.config import BrokerConfig
from magnetar.broker.security import SecuritySettings
from magnetar.broker.security.tokens import create_token, generate_secret_key
from magnetar.testing import BrokerThread, free_port

from .rest import rest


@pytest.fixture(scope="module")
def east(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A broker of cluster "east"; its HTTP base URL."""
    http_port = free_port()
    config = BrokerConfig(data_dir=tmp_path_factory.mktemp("east") / "data", port=free_port(), http_port=http_port,
                          fsync="never", cluster_name="east")
    thread = BrokerThread(config).start()
    yield f"http://127.0.0.1:{http_port}"
    thread.stop()


def test_the_local_cluster_is_the_configured_one(east: str) -> None:
    assert rest(east, "GET", "/admin/v2/clusters") == (200, ["east"])
    status, data = rest(east, "GET", "/admin/v2/clusters/east")
    assert status == 200 and data["serviceUrl"] == east.replace("127.0.0.1", "127.0.0.1")
    assert data["brokerServiceUrl"].startswith("pulsar://") and data["brokerClientTlsEnabled"] is False
    assert rest(east, "GET", "/admin/v2/tenants/public")[1]["allowedClusters"] == ["east"]
    assert rest(east, "GET", "/admin/v2/namespaces/public/default/replication") == (200, ["east"])
    assert rest(east, "GET", "/admin/v2/namespaces/public/default")[1]["replication_clusters"] == ["east"]


def test_cluster_data_is_stored_updated_and_deleted(east: str) -> None:
    data = {"serviceUrl": "http://west:8080", "brokerServiceUrl": "pulsar://west:6650",
            "authenticationPlugin": "org.apache.pulsar.client.impl.auth.AuthenticationToken",
            "authenticationParameters": "token:abc", "brokerClientTlsEnabled": False}
    assert rest(east, "PUT", "/admin/v2/clusters/west", data) == (204, None)
    assert rest(east, "PUT", "/admin/v2/clusters/west", data) == (409, {"reason": "Cluster already exists"})
    status, got = rest(east, "GET", "/admin/v2/clusters/west")
    assert status == 200 and {k: got[k] for k in data} == data and got["tlsAllowInsecureConnection"] is False
    assert rest(east, "POST", "/admin/v2/clusters/west", {"serviceUrl": "http://west2:8080"}) == (204, None)
    assert rest(east, "GET", "/admin/v2/clusters/west")[1]["serviceUrl"] == "http://west2:8080"
    assert "authenticationPlugin" not in rest(east, "GET", "/admin/v2/clusters/west")[1]
    assert sorted(rest(east, "GET", "/admin/v2/clusters")[1]) == ["east", "west"]
    assert rest(east, "POST", "/admin/v2/clusters/nowhere", data) == (404, {"reason": "Cluster does not exist"})
    assert rest(east, "DELETE", "/admin/v2/clusters/west") == (204, None)
    assert rest(east, "DELETE", "/admin/v2/clusters/west") == (404, {"reason": "Cluster does not exist"})


@pytest.mark.parametrize(("body", "reason"), [
    ({}, "At least one of the serviceUrl, serviceUrlTls, brokerServiceUrl or brokerServiceUrlTls must be set"),
    ({"serviceUrl": "pulsar://x:6650"}, "Invalid cluster data: serviceUrl 'pulsar://x:6650' is not a http:// or https:// URL"),
])
def test_bad_cluster_data_is_refused(east: str, body: dict, reason: str) -> None:
    assert rest(east, "PUT", "/admin/v2/clusters/bad", body) == (412, {"reason": reason})
    assert rest(east, "GET", "/admin/v2/clusters/bad")[0] == 404


def test_replication_clusters_must_be_registered_and_allowed(east: str) -> None:
    assert rest(east, "PUT", "/admin/v2/clusters/north", {"serviceUrl": "http://north:8080"}) == (204, None)
    assert rest(east, "PUT", "/admin/v2/clusters/south", {"serviceUrl": "http://south:8080"}) == (204, None)
    assert rest(east, "PUT", "/admin/v2/tenants/geo", {"adminRoles": [], "allowedClusters": ["east", "north"]}) == (204, None)
    assert rest(east, "PUT", "/admin/v2/namespaces/geo/ns") == (204, None)
    path = "/admin/v2/namespaces/geo/ns/replication"
    assert rest(east, "POST", path, ["east", "south"]) == (
        403, {"reason": "Cluster [south] is not in the list of allowed clusters list for tenant [geo]"})
    assert rest(east, "POST", path, ["east", "mars"]) == (412, {"reason": "Invalid cluster id: mars"})
    assert rest(east, "POST", path, []) == (412, {"reason": "ClusterIds should not be null or empty"})
    assert rest(east, "POST", path, ["east", "global"]) == (
        412, {"reason": "Cannot specify global in the list of replication clusters"})
    assert rest(east, "GET", path) == (200, ["east"])
    assert rest(east, "POST", path, ["east", "north", "east"]) == (204, None)
    assert rest(east, "GET", path) == (200, ["east", "north"])
    assert rest(east, "POST", "/admin/v2/namespaces/geo/missing/replication", ["east"]) == (
        404, {"reason": "Namespace does not exist"})
    assert rest(east, "DELETE", "/admin/v2/clusters/north") == (412, {"reason": "Cluster not empty"})


def test_topic_replication_policy(east: str) -> None:
    assert rest(east, "PUT", "/admin/v2/tenants/geo2", {"adminRoles": [], "allowedClusters": ["east"]}) == (204, None)
    assert rest(east, "PUT", "/admin/v2/namespaces/geo2/ns") == (204, None)
    topic = "/admin/v2/persistent/geo2/ns/t1"
    assert rest(east, "PUT", topic) == (204, None)
    assert rest(east, "GET", topic + "/replication") == (200, None)
    assert rest(east, "GET", topic + "/replication?applied=true") == (200, ["east"])
    assert rest(east, "POST", topic + "/replication", ["east"]) == (204, None)
    assert rest(east, "GET", topic + "/replication") == (200, ["east"])
    assert rest(east, "PUT", "/admin/v2/clusters/far", {"serviceUrl": "http://far:8080"}) == (204, None)
    assert rest(east, "POST", topic + "/replication", ["far"]) == (
        403, {"reason": "Cluster [far] is not in the list of allowed clusters list for tenant [geo2]"})
    assert rest(east, "DELETE", topic + "/replication") == (204, None)
    assert rest(east, "GET", topic + "/replication") == (200, None)
    assert rest(east, "POST", "/admin/v2/persistent/geo2/ns/nope/replication", ["east"])[0] == 404


def _secured(base: Path, secret: bytes, client_token: str | None) -> tuple[BrokerThread, str]:
    (base / "secret.key").write_bytes(secret)
    settings = SecuritySettings(
        authentication_enabled=True, authorization_enabled=True, super_user_roles=("admin",),
        authentication_providers=("token",), token_secret_key=f"file://{base / 'secret.key'}",
    )
    http_port = free_port()
    config = BrokerConfig(
        data_dir=base / "data", port=free_port(), http_port=http_port, fsync="never", security=settings,
        broker_client_authentication_plugin="org.apache.pulsar.client.impl.auth.AuthenticationToken" if client_token else "",
        broker_client_authentication_parameters=f"token:{client_token}" if client_token else "",
    )
    return BrokerThread(config).start(), f"http://127.0.0.1:{http_port}"


def test_secured_standalone_makes_public_and_default_with_superuser_broker_client(tmp_path: Path) -> None:
    secret = generate_secret_key()
    thread, url = _secured(tmp_path, secret, create_token(secret, "admin"))
    try:
        admin = create_token(secret, "admin")
        assert rest(url, "GET", "/admin/v2/tenants/public", token=admin) == (
            200, {"adminRoles": ["admin"], "allowedClusters": ["standalone"]})
        assert rest(url, "GET", "/admin/v2/namespaces/public", token=admin) == (200, ["public/default"])
    finally:
        thread.stop()


@pytest.mark.parametrize("client_role", [None, "nobody"])
def test_secured_standalone_without_superuser_broker_client_makes_only_public(tmp_path: Path, client_role: str | None) -> None:
    secret = generate_secret_key()
    thread, url = _secured(tmp_path, secret, create_token(secret, client_role) if client_role else None)
    try:
        admin = create_token(secret, "admin")
        assert rest(url, "GET", "/admin/v2/tenants/public", token=admin)[0] == 200
        assert rest(url, "GET", "/admin/v2/namespaces/public", token=admin) == (200, [])
    finally:
        thread.stop()


def _self_signed(base: Path, common_name: str) -> tuple[Path, Path]:
    """A certificate of ``common_name`` and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256()))
    cert_file, key_file = base / f"{common_name}.pem", base / f"{common_name}.key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


@pytest.mark.parametrize(("common_name", "namespaces"), [("admin", ["public/default"]), ("nobody", [])])
def test_a_tls_broker_client_certificate_is_a_superuser_by_its_common_name(
    tmp_path: Path, common_name: str, namespaces: list[str]
) -> None:
    """As the Go client's suite configures Pulsar: brokerClientAuthenticationPlugin AuthenticationTls with
    a certificate whose CN is a superuser; Pulsar's standalone then makes public/default."""
    secret = generate_secret_key()
    (tmp_path / "secret.key").write_bytes(secret)
    cert_file, key_file = _self_signed(tmp_path, common_name)
    settings = SecuritySettings(
        authentication_enabled=True, authorization_enabled=True, super_user_roles=("admin",),
        authentication_providers=("token", "tls"), token_secret_key=f"file://{tmp_path / 'secret.key'}",
    )
    http_port = free_port()
    config = BrokerConfig(
        data_dir=tmp_path / "data", port=free_port(), http_port=http_port, fsync="never", security=settings,
        broker_client_authentication_plugin="org.apache.pulsar.client.impl.auth.AuthenticationTls",
        broker_client_authentication_parameters=f'{{"tlsCertFile":"{cert_file}","tlsKeyFile":"{key_file}"}}',
    )
    thread = BrokerThread(config).start()
    try:
        admin = create_token(secret, "admin")
        url = f"http://127.0.0.1:{http_port}"
        assert rest(url, "GET", "/admin/v2/namespaces/public", token=admin) == (200, namespaces)
    finally:
        thread.stop()
