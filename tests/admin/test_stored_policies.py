"""The namespace and topic policies pulsar-admin sets that magnetar stores (issue #28): exact
bodies, status codes and Pulsar's refusals over the REST API."""

from __future__ import annotations

import uuid

import pytest

from .admin_http import Http


@pytest.fixture
def ns(http: Http) -> str:
    """A fresh namespace's REST base path."""
    tenant = f"sp-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/tenants/{tenant}", {"allowedClusters": ["standalone"]}).status == 204
    assert http.put(f"/admin/v2/namespaces/{tenant}/ns").status == 204
    return f"/admin/v2/namespaces/{tenant}/ns"


#: (path, set method, value, what GET returns before any set / after remove)
NAMESPACE_CASES = [
    ("persistence", "POST", {"bookkeeperEnsemble": 3, "bookkeeperWriteQuorum": 2, "bookkeeperAckQuorum": 2,
                             "managedLedgerMaxMarkDeleteRate": 0.5}, None),
    ("maxConsumersPerTopic", "POST", 6, None),
    ("maxSubscriptionsPerTopic", "POST", 7, None),
    ("maxTopicsPerNamespace", "POST", 100, 0),
    ("maxUnackedMessagesPerSubscription", "POST", 1000, None),
    ("subscriptionTypesEnabled", "POST", ["Exclusive", "Shared"], []),
    ("autoSubscriptionCreation", "POST", {"allowAutoSubscriptionCreation": False}, None),
    ("deduplicationSnapshotInterval", "POST", 1000, None),
    ("offloadDeletionLagMs", "PUT", 3_600_000, None),
    ("persistence/bookieAffinity", "POST", {"bookkeeperAffinityGroupPrimary": "group1"}, None),
    ("dispatcherPauseOnAckStatePersistent", "POST", None, False),
]


@pytest.mark.parametrize(("path", "method", "value", "unset"), NAMESPACE_CASES, ids=[c[0] for c in NAMESPACE_CASES])
def test_namespace_policy_set_get_remove(http: Http, ns: str, path: str, method: str, value: object, unset: object) -> None:
    url = f"{ns}/{path}"
    assert http.get(url).status == 200
    assert http.get(url).json() == unset
    r = http.request(method, url) if value is None else http.request(method, url, value)
    assert r.status == 204, r.body
    assert http.get(url).json() == (True if value is None else value)
    assert http.delete(url).status == 204
    assert http.get(url).json() == unset


def test_flags_and_names_without_delete(http: Http, ns: str) -> None:
    cases = [
        ("encryptionRequired", "POST", True, False),
        ("isAllowAutoUpdateSchema", "POST", False, True),
        ("schemaValidationEnforced", "POST", True, False),
        ("subscriptionAuthMode", "POST", "Prefix", "None"),
        ("schemaAutoUpdateCompatibilityStrategy", "PUT", "Backward", "Full"),
        ("offloadThreshold", "PUT", 1 << 30, -1),
        ("offloadThresholdInSeconds", "PUT", 3600, -1),
        ("allowedClusters", "POST", ["standalone"], []),
    ]
    for path, method, value, unset in cases:
        url = f"{ns}/{path}"
        assert http.get(url).json() == unset, path
        assert http.request(method, url, value).status == 204, path
        assert http.get(url).json() == value, path
    policies = http.get(ns).json()
    assert policies["encryption_required"] is True
    assert policies["subscription_auth_mode"] == "Prefix"
    assert policies["schema_auto_update_compatibility_strategy"] == "Backward"
    assert policies["is_allow_auto_update_schema"] is False
    assert policies["offload_threshold"] == 1 << 30
    assert policies["allowed_clusters"] == ["standalone"]


def test_anti_affinity_group_is_plain_text(http: Http, ns: str) -> None:
    url = f"{ns}/antiAffinity"
    assert http.get(url).status == 204
    assert http.post(url, raw=b"grp1", content_type="application/json").status == 204
    r = http.get(url)
    assert (r.status, r.body) == (200, b"grp1")
    assert http.delete(url).status == 204
    assert http.get(url).status == 204


def test_null_body_removes_the_dedup_snapshot_interval(http: Http, ns: str) -> None:
    url = f"{ns}/deduplicationSnapshotInterval"
    assert http.post(url, 30).status == 204
    assert http.post(url).status == 204  # pulsar-admin's remove verb: POST without a body
    assert http.get(url).json() is None


def test_offload_policies(http: Http, ns: str) -> None:
    body = {"managedLedgerOffloadDriver": "aws-s3", "s3ManagedLedgerOffloadRegion": "us-east-1",
            "s3ManagedLedgerOffloadBucket": "bkt", "managedLedgerOffloadThresholdInBytes": -1}
    assert http.post(f"{ns}/offloadPolicies", body).status == 204
    assert http.get(f"{ns}/offloadPolicies").json() == body
    assert http.delete(f"{ns}/removeOffloadPolicies").status == 204
    assert http.get(f"{ns}/offloadPolicies").json() is None
    r = http.post(f"{ns}/offloadPolicies", {"managedLedgerOffloadDriver": "tape"})
    assert r.status == 412 and r.reason.startswith("The driver tape is not supported")
    r = http.post(f"{ns}/offloadPolicies", {"managedLedgerOffloadDriver": "aws-s3"})
    assert (r.status, r.reason) == (412, "The bucket must be specified for namespace offload.")


def test_refusals_as_pulsar(http: Http, ns: str) -> None:
    refusals = [
        ("maxConsumersPerTopic", -1, 412, "maxConsumersPerTopic must be 0 or more"),
        ("maxSubscriptionsPerTopic", -1, 412, "maxSubscriptionsPerTopic must be 0 or more"),
        ("maxUnackedMessagesPerSubscription", -2, 412, "maxUnackedMessagesPerSubscription must be 0 or more"),
        ("maxUnackedMessagesPerSubscription", -1, 412, "maxUnackedMessagesPerSubscription must be 0 or more"),
        ("deduplicationSnapshotInterval", -1, 412, "interval must be greater than or equal to 0"),
        ("persistence", {"bookkeeperEnsemble": 1, "bookkeeperWriteQuorum": 2, "bookkeeperAckQuorum": 1},
         400, "Bookkeeper Ensemble (1) >= WriteQuorum (2) >= AckQuoru (1)"),
    ]
    for path, value, status, reason in refusals:
        r = http.post(f"{ns}/{path}", value)
        assert (r.status, r.reason) == (status, reason), path
        assert http.get(f"{ns}/{path}").json() is None, path
    r = http.post(f"{ns}/maxTopicsPerNamespace", -2)
    assert (r.status, r.reason) == (412, "maxTopicsPerNamespace must be 0 or more")
    assert http.get(f"{ns}/maxTopicsPerNamespace").json() == 0
    assert http.post(f"{ns}/subscriptionTypesEnabled", ["Exclusive", "Nope"]).status == 400
    assert http.post(f"{ns}/subscriptionAuthMode", "prefix").status == 400
    assert http.get(f"{ns}/subscriptionAuthMode").json() == "None"
    r = http.post(f"{ns}/resourcegroup/rg1")
    assert (r.status, r.reason) == (412, "ResourceGroup does not exist")
    assert http.get(f"{ns}/resourcegroup").status == 204
    r = http.post(f"{ns}/entryFilters", {"entryFilterNames": "filter1"})
    assert (r.status, r.reason) == (400, "Entry filter 'filter1' not found")
    assert http.get(f"{ns}/entryFilters").json() is None
    assert http.get("/admin/v2/namespaces/nosuch/ns/maxConsumersPerTopic").status == 404


def test_topic_level_policies(http: Http, ns: str) -> None:
    tenant_ns = ns.removeprefix("/admin/v2/namespaces/")
    topic = f"/admin/v2/persistent/{tenant_ns}/tp"
    assert http.put(topic).status == 204
    cases = [
        ("schemaValidationEnforced", True),
        ("maxConsumers", 3),
        ("maxSubscriptionsPerTopic", 2),
        ("maxUnackedMessagesOnSubscription", 10),
        ("subscriptionTypesEnabled", ["Shared"]),
        ("autoSubscriptionCreation", {"allowAutoSubscriptionCreation": True}),
        ("deduplicationSnapshotInterval", 5),
        ("persistence", {"bookkeeperEnsemble": 1, "bookkeeperWriteQuorum": 1, "bookkeeperAckQuorum": 1,
                         "managedLedgerMaxMarkDeleteRate": 1.0}),
    ]
    for path, value in cases:
        assert http.get(f"{topic}/{path}").json() is None, path
        assert http.post(f"{topic}/{path}", value).status == 204, path
        assert http.get(f"{topic}/{path}").json() == value, path
        assert http.delete(f"{topic}/{path}").status == 204, path
        assert http.get(f"{topic}/{path}").json() is None, path
    assert http.post(f"{ns}/maxConsumersPerTopic", 9).status == 204
    assert http.get(f"{topic}/maxConsumers?applied=true").json() == 9
    assert http.get(f"{topic}/schemaValidationEnforced?applied=true").json() is False


def test_replicated_subscription_status(http: Http, ns: str) -> None:
    tenant_ns = ns.removeprefix("/admin/v2/namespaces/")
    topic = f"/admin/v2/persistent/{tenant_ns}/rs"
    full = f"persistent://{tenant_ns}/rs"
    assert http.put(topic).status == 204
    assert http.put(f"{topic}/subscription/sub1").status == 204
    url = f"{topic}/subscription/sub1/replicatedSubscriptionStatus"
    assert http.get(url).json() == {full: False}
    assert http.post(url, True).status == 204
    assert http.get(url).json() == {full: True}
    assert http.post(url, False).status == 204
    assert http.get(url).json() == {full: False}
    assert http.post(url, "yes").status == 400
    assert http.get(f"{topic}/subscription/nosub/replicatedSubscriptionStatus").status == 404
