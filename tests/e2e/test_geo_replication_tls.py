"""Geo-replication over pulsar+ssl: a plain magnetar broker (cluster east) replicating into a secured
one (cluster west: TLS listeners, authentication and authorization), reached with the remote's
ClusterData as Pulsar reads it: ``brokerServiceUrlTls`` with ``brokerClientTlsEnabled``, the trust
file ``brokerClientTrustCertsFilePath``, and a TLS client certificate (``AuthenticationTls``) whose
role is a superuser there. With the wrong trust file the replicator cannot connect and the backlog
stays; with the right one it drains, every message once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulsar
import pytest

from magnetar.broker.security.tokens import generate_secret_key
from magnetar.testing import BrokerProcess, free_port
from tests.broker.replication.rest import rest
from tests.broker.security.conftest import Pki, pki  # noqa: F401 - the session's certificates
from tests.e2e.security.conftest import SecureBroker, pulsar_conf

from .helpers import new_client
from .test_geo_replication import NS, stats, wait_until

#: two broker processes on a loaded machine, snapshots every second
pytestmark = pytest.mark.timeout(300)
TLS_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationTls"
PROVIDERS = ",".join(f"org.apache.pulsar.broker.authentication.AuthenticationProvider{n}" for n in ("Tls", "Token"))


def _secured_west(directory: Path, certs: Pki, secret: bytes) -> SecureBroker:
    (directory / "secret.key").write_bytes(secret)
    ports = {name: free_port() for name in ("port", "tls_port", "http_port", "https_port")}
    conf = directory / "standalone.conf"
    conf.write_text(pulsar_conf(certs, ports, {"clusterName": "west", "tokenSecretKey": f"file://{directory}/secret.key",
                                               "authenticationProviders": PROVIDERS}))
    proc = BrokerProcess(directory / "data", port=ports["port"], http_port=ports["http_port"],
                         tls_port=ports["tls_port"], https_port=ports["https_port"],
                         args=("--config", str(conf), "--fsync", "never")).start(timeout=90)
    return SecureBroker(proc, certs, secret)


@pytest.fixture
def east_and_west(tmp_path: Path, pki: Pki) -> Iterator[tuple[BrokerProcess, SecureBroker]]:  # noqa: F811
    (tmp_path / "east").mkdir()
    (tmp_path / "west").mkdir()
    # east starts while west does
    east = BrokerProcess(tmp_path / "east" / "data", args=("--fsync", "never"),
                         env={"MAGNETAR_CLUSTER_NAME": "east"}).launch()
    west: SecureBroker | None = None
    try:
        west = _secured_west(tmp_path / "west", pki, generate_secret_key())
        east.wait_ready(90)
        yield east, west
    finally:
        if west is not None:
            for c in west.clients:
                c.close()
            west.proc.stop()
        east.stop()


def _west_data(west: SecureBroker, trust: Path) -> dict[str, Any]:
    return {"serviceUrl": west.proc.http_url, "serviceUrlTls": west.proc.https_url,
            "brokerServiceUrl": west.plain_url, "brokerServiceUrlTls": west.tls_url,
            "brokerClientTlsEnabled": True, "brokerClientTrustCertsFilePath": str(trust),
            "authenticationPlugin": TLS_PLUGIN,
            "authenticationParameters": f"tlsCertFile:{west.pki.client_cert},tlsKeyFile:{west.pki.client_key}"}


def test_replication_over_tls_with_the_clusters_trust_settings(east_and_west: tuple[BrokerProcess, SecureBroker]) -> None:
    east, west = east_and_west
    assert west.admin("PUT", "tenants/geo", {"adminRoles": [], "allowedClusters": ["west"]}) == 204
    assert west.admin("PUT", f"namespaces/{NS}") == 204
    # east trusts the wrong CA first: the TLS handshake to west fails, nothing is lost meanwhile
    assert rest(east.http_url, "PUT", "/admin/v2/clusters/west", _west_data(west, west.pki.rogue_ca_cert))[0] == 204
    assert rest(east.http_url, "PUT", "/admin/v2/tenants/geo", {"adminRoles": [], "allowedClusters": ["east", "west"]})[0] == 204
    assert rest(east.http_url, "PUT", f"/admin/v2/namespaces/{NS}")[0] == 204
    assert rest(east.http_url, "POST", f"/admin/v2/namespaces/{NS}/replication", ["east", "west"])[0] == 204
    client = new_client(east.service_url)
    producer = client.create_producer(f"persistent://{NS}/tls", batching_enabled=False)
    for i in range(200):
        producer.send_async(f"t-{i}".encode(), None)
    producer.flush()
    client.close()

    def replication() -> dict[str, Any]:
        return stats(east, "tls")["replication"]["west"]

    wait_until(lambda: replication()["replicationBacklog"] == 200, what="the backlog of 200")
    time.sleep(3)  # reconnection attempts meanwhile: every one fails its handshake
    assert (replication()["replicationBacklog"], replication()["connected"]) == (200, False)
    # the right CA: the replicator connects over pulsar+ssl and drains the backlog
    assert rest(east.http_url, "POST", "/admin/v2/clusters/west", _west_data(west, west.pki.ca_cert))[0] == 204
    try:
        wait_until(lambda: replication()["replicationBacklog"] == 0, timeout=60, what="the backlog drained over TLS")
    except AssertionError:
        raise AssertionError(f"{replication()}\n{east.log()[-4000:]}") from None
    assert replication()["connected"] is True
    client = west.client(west.tls_url, authentication=pulsar.AuthenticationTLS(str(west.pki.client_cert),
                                                                                str(west.pki.client_key)))
    reader = client.create_reader(f"persistent://{NS}/tls", pulsar.MessageId.earliest)
    got = [reader.read_next(timeout_millis=10_000).data() for _ in range(200)]
    assert got == [f"t-{i}".encode() for i in range(200)]
    with pytest.raises(pulsar.Timeout):
        reader.read_next(timeout_millis=1000)
