"""Lookups Pulsar answers without an error: a namespace with no topics, the transaction coordinator."""

from __future__ import annotations

import urllib.request

from magnetar.protocol.enums import CommandType, PartitionedMetadataResult, ServerError
from magnetar.protocol.schema import BaseCommand
from magnetar.testing import BrokerProcess

from .test_wire_errors import WireClient, broker, wire  # noqa: F401 - the fixtures

TC_ASSIGN = "persistent://pulsar/system/transaction_coordinator_assign"


def test_topics_of_a_namespace_that_does_not_exist_is_an_empty_list(wire) -> None:  # noqa: ANN001, F811
    c = wire()
    cmd = BaseCommand(type=CommandType.GET_TOPICS_OF_NAMESPACE)
    cmd.get_topics_of_namespace.namespace = "no-such-tenant/no-such-ns"
    cmd.get_topics_of_namespace.request_id = 31
    c.send(cmd)
    resp = c.expect(CommandType.GET_TOPICS_OF_NAMESPACE_RESPONSE).command.get_topics_of_namespace_response
    assert resp.request_id == 31
    assert list(resp.topics) == []


def _assign_partitions(c, request_id: int) -> int:  # noqa: ANN001
    cmd = BaseCommand(type=CommandType.PARTITIONED_METADATA)
    cmd.partition_metadata.topic = TC_ASSIGN
    cmd.partition_metadata.request_id = request_id
    c.send(cmd)
    meta = c.expect(CommandType.PARTITIONED_METADATA_RESPONSE).command.partition_metadata_response
    assert (meta.request_id, meta.response) == (request_id, PartitionedMetadataResult.Success)
    return meta.partitions


def _tc_connect(c, request_id: int, tc_id: int):  # noqa: ANN001, ANN202
    connect = BaseCommand(type=CommandType.TC_CLIENT_CONNECT_REQUEST)
    connect.tc_client_connect_request.request_id = request_id
    connect.tc_client_connect_request.tc_id = tc_id
    c.send(connect)
    return c.expect(CommandType.TC_CLIENT_CONNECT_RESPONSE).command.tc_client_connect_response


def test_transaction_coordinator_is_looked_up_and_connected(wire) -> None:  # noqa: ANN001, F811
    c = wire()
    assert _assign_partitions(c, 32) == 1  # transactionCoordinatorCount defaults to 1
    resp = _tc_connect(c, 33, 0)
    assert (resp.request_id, resp.HasField("error")) == (33, False)
    resp = _tc_connect(c, 34, 7)
    assert (resp.request_id, resp.error) == (34, ServerError.TransactionCoordinatorNotFound)
    c.ping()


def test_transaction_coordinator_is_refused_when_disabled(tmp_path) -> None:  # noqa: ANN001
    env = {"MAGNETAR_TRANSACTION_COORDINATOR_ENABLED": "false"}
    with BrokerProcess(tmp_path / "data", env=env) as disabled:
        c = WireClient(disabled.port)
        try:
            c.connect()
            assert _assign_partitions(c, 32) == 0
            resp = _tc_connect(c, 33, 0)
            assert (resp.request_id, resp.error, resp.message) == (
                33, ServerError.NotAllowedError, "Transactions are not enabled."
            )
            url = f"{disabled.http_url}/admin/v2/persistent/pulsar/system/transaction_coordinator_assign/partitions"
            with urllib.request.urlopen(url, timeout=10) as response:
                assert response.read() == b'{"partitions":0}'
        finally:
            c.close()


def test_http_partitioned_metadata_of_the_transaction_coordinator(broker: BrokerProcess) -> None:  # noqa: F811
    url = f"{broker.http_url}/admin/v2/persistent/pulsar/system/transaction_coordinator_assign/partitions"
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.read() == b'{"partitions":1}'
