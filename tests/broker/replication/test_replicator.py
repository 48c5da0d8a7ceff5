"""What a replicator sends to a remote: not what arrived by replication, only what ``replicate_to`` allows."""

from __future__ import annotations

from magnetar.broker.config import BrokerConfig
from magnetar.broker.replication.credentials import ClientCredentials
from magnetar.broker.replication.manager import remote_cluster
from magnetar.broker.replication.replicator import RemoteCluster, Replicator
from magnetar.protocol.schema import MessageMetadata


def _replicator(remote: str) -> Replicator:
    replicator = Replicator.__new__(Replicator)  # the filter reads only the remote's name
    replicator.remote = RemoteCluster(remote, "pulsar://x:6650", "", ClientCredentials())
    return replicator


def test_filter() -> None:
    to_west = _replicator("west")
    assert to_west.should_replicate(MessageMetadata(producer_name="p"))
    assert not to_west.should_replicate(MessageMetadata(producer_name="p", replicated_from="north"))
    assert to_west.should_replicate(MessageMetadata(producer_name="p", replicate_to=["west", "north"]))
    assert not to_west.should_replicate(MessageMetadata(producer_name="p", replicate_to=["north"]))
    assert not to_west.should_replicate(MessageMetadata(producer_name="p", replicate_to=["__local__"]))


def test_remote_cluster_from_cluster_data() -> None:
    config = BrokerConfig(broker_client_authentication_plugin="token",
                          broker_client_authentication_parameters="token:broker")
    plain = remote_cluster("west", {"serviceUrl": "http://w:8080", "brokerServiceUrl": "pulsar://w:6650"}, config)
    assert (plain.service_url, plain.http_url, plain.credentials.data, plain.tls) == (
        "pulsar://w:6650", "http://w:8080", b"broker", None)
    own = remote_cluster("west", {"brokerServiceUrl": "pulsar://w:6650", "brokerServiceUrlTls": "pulsar+ssl://w:6651",
                                  "brokerClientTlsEnabled": True, "tlsAllowInsecureConnection": True,
                                  "authenticationPlugin": "token", "authenticationParameters": "token:cluster"}, config)
    assert own.service_url == "pulsar+ssl://w:6651" and own.credentials.data == b"cluster"
    assert own.tls is not None and own.tls.check_hostname is False
