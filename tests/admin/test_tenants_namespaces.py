"""Clusters, tenants, namespaces and namespace policies over the REST API."""

from __future__ import annotations

import uuid

from .admin_http import Http


def _t() -> str:
    return f"tn-{uuid.uuid4().hex[:8]}"


def test_clusters(http: Http) -> None:
    assert http.get("/admin/v2/clusters").json() == ["standalone"]
    data = http.get("/admin/v2/clusters/standalone").json()
    assert data["brokerServiceUrl"].startswith("pulsar://")
    assert data["serviceUrl"].startswith("http://")
    r = http.get("/admin/v2/clusters/nope")
    assert (r.status, r.reason) == (404, "Cluster does not exist")
    r = http.put("/admin/v2/clusters/standalone", {})
    assert (r.status, r.reason) == (409, "Cluster already exists")
    name = f"c-{uuid.uuid4().hex[:6]}"
    assert http.put(f"/admin/v2/clusters/{name}", {"serviceUrl": "http://x:8080"}).status == 204
    assert name in http.get("/admin/v2/clusters").json()
    assert http.get(f"/admin/v2/clusters/{name}").json()["serviceUrl"] == "http://x:8080"
    r = http.put("/admin/v2/clusters/bad%20name", {})
    assert (r.status, r.reason) == (412, "Cluster name is not valid")


def test_tenant_lifecycle(http: Http) -> None:
    t = _t()
    assert http.get(f"/admin/v2/tenants/{t}").status == 404
    r = http.put(f"/admin/v2/tenants/{t}", {"allowedClusters": ["standalone"], "adminRoles": ["me"]})
    assert r.status == 204
    assert t in http.get("/admin/v2/tenants").json()
    assert http.get(f"/admin/v2/tenants/{t}").json() == {"adminRoles": ["me"], "allowedClusters": ["standalone"]}
    r = http.put(f"/admin/v2/tenants/{t}", {"allowedClusters": ["standalone"]})
    assert (r.status, r.reason) == (409, "Tenant already exists")
    assert http.post(f"/admin/v2/tenants/{t}", {"allowedClusters": ["standalone"], "adminRoles": []}).status == 204
    assert http.get(f"/admin/v2/tenants/{t}").json()["adminRoles"] == []
    assert http.put(f"/admin/v2/namespaces/{t}/ns1").status == 204
    r = http.delete(f"/admin/v2/tenants/{t}")
    assert (r.status, r.reason) == (409, "The tenant still has active namespaces")
    assert t in http.get("/admin/v2/tenants").json()
    assert http.delete(f"/admin/v2/namespaces/{t}/ns1").status == 204
    assert http.delete(f"/admin/v2/tenants/{t}").status == 204
    assert t not in http.get("/admin/v2/tenants").json()
    r = http.delete(f"/admin/v2/tenants/{t}")
    assert r.status == 404


def test_tenant_refusals_change_nothing(http: Http) -> None:
    t = _t()
    for body, reason in [
        ({"allowedClusters": []}, "Clusters can not be empty"),
        ({"allowedClusters": ["mars"]}, "Clusters do not exist"),
        ({}, "Clusters can not be empty"),
    ]:
        r = http.put(f"/admin/v2/tenants/{t}", body)
        assert (r.status, r.reason) == (412, reason)
    r = http.put("/admin/v2/tenants/bad$name", {"allowedClusters": ["standalone"]})
    assert (r.status, r.reason) == (412, "Tenant name is not valid")
    assert t not in http.get("/admin/v2/tenants").json()
    r = http.post(f"/admin/v2/tenants/{t}", {"allowedClusters": ["standalone"]})
    assert r.status == 404


def test_namespace_lifecycle_and_topics(http: Http) -> None:
    t = _t()
    http.put(f"/admin/v2/tenants/{t}", {"allowedClusters": ["standalone"]})
    assert http.get(f"/admin/v2/namespaces/{t}").json() == []
    assert http.put(f"/admin/v2/namespaces/{t}/ns").status == 204
    r = http.put(f"/admin/v2/namespaces/{t}/ns")
    assert (r.status, r.reason) == (409, "Namespace already exists")
    assert http.get(f"/admin/v2/namespaces/{t}").json() == [f"{t}/ns"]
    r = http.put("/admin/v2/namespaces/no-such-tenant/ns")
    assert (r.status, r.reason) == (404, "Tenant does not exist")
    assert http.get("/admin/v2/namespaces/no-such-tenant").status == 404
    policies = http.get(f"/admin/v2/namespaces/{t}/ns").json()
    assert policies["replication_clusters"] == ["standalone"]
    assert http.get(f"/admin/v2/namespaces/{t}/ns/topics").json() == []
    assert http.put(f"/admin/v2/persistent/{t}/ns/a").status == 204
    assert http.put(f"/admin/v2/persistent/{t}/ns/p/partitions", 2).status == 204
    topics = http.get(f"/admin/v2/namespaces/{t}/ns/topics?mode=ALL").json()
    assert topics == [f"persistent://{t}/ns/a", f"persistent://{t}/ns/p-partition-0", f"persistent://{t}/ns/p-partition-1"]
    assert http.get(f"/admin/v2/namespaces/{t}/ns/topics?mode=NON_PERSISTENT").json() == []
    r = http.get(f"/admin/v2/namespaces/{t}/ns/topics?mode=SOME")
    assert r.status == 412
    r = http.delete(f"/admin/v2/namespaces/{t}/ns")
    assert (r.status, r.reason) == (409, "Cannot delete non empty namespace")
    assert http.get(f"/admin/v2/namespaces/{t}").json() == [f"{t}/ns"]
    assert http.delete(f"/admin/v2/namespaces/{t}/ns?force=true").status == 204
    assert http.get(f"/admin/v2/namespaces/{t}").json() == []
    assert http.get(f"/admin/v2/namespaces/{t}/ns").status == 404
    assert http.delete(f"/admin/v2/tenants/{t}").status == 204


def test_namespace_policies_round_trip(http: Http) -> None:
    t = _t()
    http.put(f"/admin/v2/tenants/{t}", {"allowedClusters": ["standalone"]})
    http.put(f"/admin/v2/namespaces/{t}/ns")
    base = f"/admin/v2/namespaces/{t}/ns"
    cases = [
        ("retention", {"retentionTimeInMinutes": 60, "retentionSizeInMB": 100}),
        ("messageTTL", 60),
        ("deduplication", True),
        ("maxProducersPerTopic", 3),
        ("maxConsumersPerSubscription", 4),
        ("maxUnackedMessagesPerConsumer", 500),
        ("subscriptionExpirationTime", 30),
        ("delayedDelivery", {"active": False, "tickTime": 500, "maxDeliveryDelayInMillis": 0}),
        ("autoTopicCreation", {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 3}),
    ]
    for path, value in cases:
        assert http.get(f"{base}/{path}").json() is None, path
        r = http.post(f"{base}/{path}", value)
        assert r.status == 204, (path, r.status, r.body)
        assert http.get(f"{base}/{path}").json() == value, path
    policies = http.get(base).json()
    assert policies["message_ttl_in_seconds"] == 60
    assert policies["retention_policies"] == {"retentionTimeInMinutes": 60, "retentionSizeInMB": 100}
    assert policies["autoTopicCreationOverride"]["defaultNumPartitions"] == 3
    for path, _ in cases:
        assert http.delete(f"{base}/{path}").status == 204
        assert http.get(f"{base}/{path}").json() is None, path

    assert http.get(f"{base}/schemaCompatibilityStrategy").json() == "UNDEFINED"
    assert http.put(f"{base}/schemaCompatibilityStrategy", "BACKWARD").status == 204
    assert http.get(f"{base}/schemaCompatibilityStrategy").json() == "BACKWARD"
    assert http.put(f"{base}/schemaCompatibilityStrategy", "SIDEWAYS").status == 412

    assert http.get(f"{base}/backlogQuotaMap").json() == {}
    quota = {"limitSize": 1024 * 1024, "limitTime": -1, "policy": "producer_exception"}
    assert http.post(f"{base}/backlogQuota?backlogQuotaType=destination_storage", quota).status == 204
    assert http.post(f"{base}/backlogQuota?backlogQuotaType=message_age", {"limitTime": 60, "policy": "producer_request_hold"}).status == 204
    quotas = http.get(f"{base}/backlogQuotaMap").json()
    assert quotas["destination_storage"] == quota
    assert quotas["message_age"]["limitTime"] == 60
    r = http.post(f"{base}/backlogQuota?backlogQuotaType=elsewhere", quota)
    assert r.status == 412
    assert http.delete(f"{base}/backlogQuota?backlogQuotaType=message_age").status == 204
    assert list(http.get(f"{base}/backlogQuotaMap").json()) == ["destination_storage"]
    # the limit as a string of digits, as the Go admin client sends it (Pulsar's JSON mapper accepts it)
    as_text = {"limit": "10240", "policy": "producer_request_hold"}
    assert http.post(f"{base}/backlogQuota?backlogQuotaType=destination_storage", as_text).status == 204
    assert http.get(f"{base}/backlogQuotaMap").json()["destination_storage"]["limitSize"] == 10240
    assert http.post(f"{base}/backlogQuota?backlogQuotaType=destination_storage", {"limit": "ten"}).status == 400
    http.delete(f"/admin/v2/namespaces/{t}/ns")
    http.delete(f"/admin/v2/tenants/{t}")


def test_policy_refusals(http: Http) -> None:
    base = "/admin/v2/namespaces/public/default"
    before = http.get(base).json()
    table = [
        ("messageTTL", -5, 412, "Invalid value for message TTL, message TTL must >= 0"),
        ("maxProducersPerTopic", -1, 412, "maxProducersPerTopic must be 0 or more"),
        ("maxConsumersPerSubscription", -1, 412, "maxConsumersPerSubscription must be 0 or more"),
        ("maxUnackedMessagesPerConsumer", -1, 412, "maxUnackedMessagesPerConsumer must be 0 or more"),
        ("subscriptionExpirationTime", -1, 412, "Invalid value for subscription expiration time"),
        ("retention", {"retentionTimeInMinutes": -2, "retentionSizeInMB": 0}, 412, None),
        ("autoTopicCreation", {"allowAutoTopicCreation": True, "topicType": "partitioned"}, 412,
         "Invalid configuration for autoTopicCreationOverride. the detail is [defaultNumPartitions] cannot be null "
         "when the type is partitioned."),
        ("autoTopicCreation", {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 0},
         412, "Invalid configuration for autoTopicCreationOverride. the detail is [defaultNumPartitions] cannot be "
         "less than 1 for partition type."),
        ("autoTopicCreation", {"allowAutoTopicCreation": True, "topicType": "sideways"}, 412, None),
        ("messageTTL", "sixty", 400, None),
        ("messageTTL", 1.5, 400, None),
        ("deduplication", "yes", 400, None),
        ("retention", [1, 2], 400, None),
    ]
    for path, value, status, reason in table:
        r = http.post(f"{base}/{path}", value)
        assert r.status == status, (path, value, r.status, r.body)
        assert r.reason, (path, value)
        if reason is not None:
            assert r.reason == reason
    r = http.post(f"{base}/messageTTL", raw=b"{not json")
    assert r.status == 400 and r.reason
    r = http.post(f"{base}/messageTTL")
    assert r.status == 400 and r.reason
    assert http.get(base).json() == before
    assert http.post("/admin/v2/namespaces/public/nope/messageTTL", 5).status == 404
    assert http.post("/admin/v2/namespaces/nope/default/messageTTL", 5).reason == "Tenant does not exist"
