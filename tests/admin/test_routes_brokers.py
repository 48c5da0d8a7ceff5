"""/admin/v2/brokers (pulsar-admin's `brokers` verbs and `clusters list`) and namespaces created the way
pulsar-admin creates them (an empty replication cluster list)."""

from __future__ import annotations

import uuid

from magnetar.testing import BrokerProcess

from .admin_http import Http


def test_a_standalone_is_a_cluster_of_one_broker_and_its_leader(http: Http, broker: BrokerProcess) -> None:
    me = f"127.0.0.1:{broker.http_port}"
    assert http.get("/admin/v2/brokers/standalone").json() == [me]
    assert http.get("/admin/v2/brokers/leaderBroker").json() == {"brokerId": me, "serviceUrl": f"http://{me}"}
    r = http.get("/admin/v2/brokers/elsewhere")
    assert (r.status, r.reason) == (404, "Cluster elsewhere is not served by this broker")
    assert http.get(f"/admin/v2/brokers/standalone/{me}/ownedNamespaces").status == 200
    assert http.get("/admin/v2/brokers/standalone/10.0.0.1:1/ownedNamespaces").status == 404


def test_runtime_configuration_names_the_cluster_under_pulsars_keys(http: Http, broker: BrokerProcess) -> None:
    runtime = http.get("/admin/v2/brokers/configuration/runtime").json()
    assert runtime["clusterName"] == "standalone"
    assert runtime["webServicePort"] == str(broker.http_port)
    assert runtime["brokerServicePort"] == str(broker.port)
    assert runtime["brokerDeduplicationEnabled"] in ("true", "false")
    assert "brokerClientAuthenticationParameters" not in runtime


def test_there_is_no_dynamic_configuration(http: Http) -> None:
    assert http.get("/admin/v2/brokers/configuration").json() == []
    assert http.get("/admin/v2/brokers/configuration/values").json() == {}
    r = http.post("/admin/v2/brokers/configuration/dispatchThrottlingRatePerTopicInMsg/10")
    assert r.status == 412
    assert r.reason == (
        "Field dispatchThrottlingRatePerTopicInMsg is not a dynamic config: magnetar has no dynamic configuration"
    )
    assert http.delete("/admin/v2/brokers/configuration/dispatchThrottlingRatePerTopicInMsg").status == 412


def test_version_internal_configuration_and_backlog_quota_check(http: Http) -> None:
    r = http.get("/admin/v2/brokers/version")
    assert r.status == 200
    internal = http.get("/admin/v2/brokers/internal-configuration").json()
    assert internal["metadataStoreUrl"].startswith("sqlite:") and internal["metadataStoreUrl"].endswith("metadata.db")
    assert http.get("/admin/v2/brokers/backlog-quota-check").status == 204


def test_a_namespace_created_without_clusters_replicates_to_the_local_cluster(http: Http) -> None:
    tenant = f"tb-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/tenants/{tenant}", {"allowedClusters": ["standalone"]}).status == 204
    # what pulsar-admin `namespaces create t/ns` sends without -c
    assert http.put(f"/admin/v2/namespaces/{tenant}/ns", {"replication_clusters": []}).status == 204
    assert http.get(f"/admin/v2/namespaces/{tenant}/ns/replication").json() == ["standalone"]
    assert http.get(f"/admin/v2/namespaces/{tenant}").json() == [f"{tenant}/ns"]
