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


def test_a_setting_that_is_not_dynamic_is_refused(http: Http) -> None:
    assert "maxProducersPerTopic" in http.get("/admin/v2/brokers/configuration").json()
    r = http.post("/admin/v2/brokers/configuration/brokerServicePort/6651")
    assert (r.status, r.reason) == (412, "Can't update non-dynamic configuration")
    r = http.delete("/admin/v2/brokers/configuration/brokerServicePort")
    assert (r.status, r.reason) == (412, "Can't delete non-dynamic configuration")
    r = http.post("/admin/v2/brokers/configuration/maxProducersPerTopic/many")
    assert (r.status, r.reason) == (412, " Invalid dynamic-config value")


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


def test_namespace_wide_operations(http: Http, client_factory, broker: BrokerProcess) -> None:  # noqa: ANN001
    tenant = f"tb-{uuid.uuid4().hex[:8]}"
    ns = f"{tenant}/ns"
    assert http.put(f"/admin/v2/tenants/{tenant}", {"allowedClusters": ["standalone"]}).status == 204
    assert http.put(f"/admin/v2/namespaces/{ns}").status == 204
    assert http.get(f"/admin/v2/namespaces/{ns}/bundles").json() == {
        "boundaries": ["0x00000000", "0xffffffff"], "numBundles": 1}
    assert http.get(f"/lookup/v2/topic/persistent/{ns}/t/bundle").json() == "0x00000000_0xffffffff"
    client = client_factory(broker.service_url)
    for topic in ("a", "b"):
        assert http.put(f"/admin/v2/persistent/{ns}/{topic}/subscription/s", {"ledgerId": -1, "entryId": -1}).status == 204
        producer = client.create_producer(f"persistent://{ns}/{topic}")
        for i in range(3):
            producer.send(f"m{i}".encode())
        producer.close()

    def backlog(topic: str) -> int:
        return http.get(f"/admin/v2/persistent/{ns}/{topic}/stats").json()["subscriptions"]["s"]["msgBacklog"]

    assert (backlog("a"), backlog("b")) == (3, 3)
    assert http.post(f"/admin/v2/namespaces/{ns}/clearBacklog/s").status == 204
    assert (backlog("a"), backlog("b")) == (0, 0)
    assert http.put(f"/admin/v2/namespaces/{ns}/unload").status == 204
    r = http.put(f"/admin/v2/namespaces/{ns}/0x00000000_0x80000000/unload")
    assert r.status == 404
    assert http.post(f"/admin/v2/namespaces/{ns}/unsubscribe/s").status == 204
    assert http.get(f"/admin/v2/persistent/{ns}/a/subscriptions").json() == []
    assert http.get(f"/admin/v2/persistent/{ns}/b/subscriptions").json() == []
    # pulsar-admin's set-compaction-threshold uses PUT
    assert http.put(f"/admin/v2/namespaces/{ns}/compactionThreshold", 1000).status == 204
    assert http.get(f"/admin/v2/namespaces/{ns}/compactionThreshold").json() == 1000


def test_partitioned_terminate_terminates_every_partition(http: Http) -> None:
    tenant = f"tb-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/tenants/{tenant}", {"allowedClusters": ["standalone"]}).status == 204
    assert http.put(f"/admin/v2/namespaces/{tenant}/ns").status == 204
    base = f"/admin/v2/persistent/{tenant}/ns/pt"
    assert http.put(base + "/partitions", 2).status == 204
    answer = http.post(base + "/terminate/partitions").json()
    assert sorted(answer) == ["0", "1"]
    r = http.post(f"/admin/v2/persistent/{tenant}/ns/pt-partition-0/terminate")
    assert r.status == 200  # terminating again answers the same last message id


def test_topic_properties_are_set_read_and_removed(http: Http) -> None:
    base = f"/admin/v2/persistent/public/default/props-{uuid.uuid4().hex[:8]}"
    assert http.put(base, {"a": "1"}).status == 204  # created with properties, as pulsar-admin create -m
    assert http.get(base + "/properties").json() == {"a": "1"}
    assert http.put(base + "/properties", {"b": "2", "a": "3"}).status == 204
    assert http.get(base + "/properties").json() == {"a": "3", "b": "2"}
    assert http.request("DELETE", base + "/properties?key=a").status == 204
    assert http.get(base + "/properties").json() == {"b": "2"}
    missing = http.get("/admin/v2/persistent/public/default/no-such-topic-xyz/properties")
    assert missing.status == 404


def test_create_missed_partitions(http: Http) -> None:
    base = f"/admin/v2/persistent/public/default/missed-{uuid.uuid4().hex[:8]}"
    assert http.put(base + "/partitions", 3).status == 204
    assert http.post(base + "/createMissedPartitions").status == 204
    listed = http.get("/admin/v2/persistent/public/default").json()
    name = base.rsplit("/", 1)[1]
    assert sorted(t for t in listed if name in t) == [
        f"persistent://public/default/{name}-partition-{i}" for i in range(3)]
    missing = http.post("/admin/v2/persistent/public/default/not-partitioned-xyz/createMissedPartitions")
    assert (missing.status, missing.reason) == (404, "Partitioned Topic not found")
