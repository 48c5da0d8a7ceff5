"""Permission routes: namespace, topic and subscription grants round trip, are stored in the
namespace's auth_policies, and take effect at once (HTTP and the binary protocol)."""

from __future__ import annotations

import uuid

import pulsar
import pytest

from .conftest import SecuredBroker

NS = "/admin/v2/namespaces/acme/shop"


@pytest.fixture
def topic(secured: SecuredBroker) -> str:
    name = f"perm-{uuid.uuid4().hex[:8]}"
    assert secured.as_role("alice")("PUT", f"/admin/v2/persistent/acme/shop/{name}").status == 204
    return name


def test_namespace_permissions_round_trip(secured: SecuredBroker) -> None:
    alice = secured.as_role("alice")
    assert alice("GET", f"{NS}/permissions").body == {"bob": ["produce"], "carol": ["consume"]}
    assert alice("POST", f"{NS}/permissions/dave", ["consume", "produce"]).status == 204
    assert alice("GET", f"{NS}/permissions").body["dave"] == ["consume", "produce"]
    policies = alice("GET", NS).body["auth_policies"]
    assert policies["namespace_auth"]["dave"] == ["consume", "produce"]
    assert alice("DELETE", f"{NS}/permissions/dave").status == 204
    assert "dave" not in alice("GET", f"{NS}/permissions").body
    bad = alice("POST", f"{NS}/permissions/dave", ["fly"])
    assert bad.status == 400 and "fly" in bad.reason
    assert alice("POST", "/admin/v2/namespaces/acme/missing/permissions/dave", ["consume"]).status == 404
    refused = secured.as_role("bob")("POST", f"{NS}/permissions/bob", ["consume"])
    assert refused.status == 403
    assert "GRANT_PERMISSION" in refused.reason


def test_topic_permissions_round_trip(secured: SecuredBroker, topic: str) -> None:
    alice = secured.as_role("alice")
    path = f"/admin/v2/persistent/acme/shop/{topic}/permissions"
    assert alice("POST", f"{path}/erin", ["consume"]).status == 204
    assert alice("POST", f"{path}/bob", ["consume"]).status == 204
    merged = alice("GET", path).body
    assert merged["erin"] == ["consume"]
    assert merged["bob"] == ["consume", "produce"]  # the namespace's grant joined with the topic's
    stored = alice("GET", NS).body["auth_policies"]["destination_auth"]
    assert stored[f"persistent://acme/shop/{topic}"] == {"bob": ["consume"], "erin": ["consume"]}
    assert alice("DELETE", f"{path}/erin").status == 204
    missing = alice("DELETE", f"{path}/erin")
    assert (missing.status, missing.reason) == (412, "Permissions are not set at the topic level")
    assert alice("DELETE", f"{path}/bob").status == 204


def test_partitioned_topic_grant_covers_partitions(secured: SecuredBroker) -> None:
    alice, frank = secured.as_role("alice"), secured.as_role("frank")
    name = f"parts-{uuid.uuid4().hex[:8]}"
    base = f"/admin/v2/persistent/acme/shop/{name}"
    assert alice("PUT", f"{base}/partitions", 2).status == 204
    assert alice("POST", f"{base}/permissions/frank", ["consume"]).status == 204
    stored = alice("GET", NS).body["auth_policies"]["destination_auth"]
    assert f"persistent://acme/shop/{name}-partition-1" in stored
    assert frank("GET", f"{base}-partition-1/subscriptions").status == 200
    assert alice("DELETE", f"{base}/permissions/frank").status == 204
    assert frank("GET", f"{base}-partition-1/subscriptions").status == 403


def test_subscription_permissions(secured: SecuredBroker, topic: str) -> None:
    alice, carol = secured.as_role("alice"), secured.as_role("carol")
    tpath = f"/admin/v2/persistent/acme/shop/{topic}"
    assert alice("POST", f"{NS}/permissions/subscription/audit", ["grace"]).status == 204
    assert alice("GET", f"{NS}/permissions/subscription").body["audit"] == ["grace"]
    # carol may consume from the namespace, but not from a subscription reserved for others
    assert carol("PUT", f"{tpath}/subscription/audit").status == 403
    assert carol("PUT", f"{tpath}/subscription/other").status == 204
    assert alice("POST", f"{NS}/permissions/subscription/audit", ["grace", "carol"]).status == 204
    assert carol("PUT", f"{tpath}/subscription/audit").status == 204
    assert alice("DELETE", f"{NS}/permissions/audit/carol").status == 204
    assert alice("GET", f"{NS}/permissions/subscription").body["audit"] == ["grace"]
    assert carol("POST", f"{tpath}/subscription/audit/skip_all").status == 403


def test_namespace_body_auth_policies(secured: SecuredBroker) -> None:
    su = secured.as_role("super")
    ns = f"ap-{uuid.uuid4().hex[:8]}"
    body = {"auth_policies": {"namespace_auth": {"anonymous": ["produce", "consume"]}},
            "replication_clusters": ["standalone"]}
    assert su("PUT", f"/admin/v2/namespaces/acme/{ns}", body).status == 204
    assert su("GET", f"/admin/v2/namespaces/acme/{ns}/permissions").body == {"anonymous": ["consume", "produce"]}
    bad = su("PUT", f"/admin/v2/namespaces/acme/{ns}-bad", {"auth_policies": {"namespace_auth": {"x": ["fly"]}}})
    assert bad.status == 400
    assert su("DELETE", f"/admin/v2/namespaces/acme/{ns}").status == 204


def test_grant_and_revoke_reach_new_producers_at_once(secured: SecuredBroker, topic: str) -> None:
    alice = secured.as_role("alice")
    full = f"persistent://acme/shop/{topic}"
    client = pulsar.Client(secured.service_url, authentication=pulsar.AuthenticationToken(secured.token("henry")),
                           operation_timeout_seconds=5, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        with pytest.raises(pulsar.AuthorizationError):
            client.create_producer(full)
        assert alice("POST", f"/admin/v2/persistent/acme/shop/{topic}/permissions/henry", ["produce"]).status == 204
        producer = client.create_producer(full)
        producer.send(b"granted")
        producer.close()
        assert alice("DELETE", f"/admin/v2/persistent/acme/shop/{topic}/permissions/henry").status == 204
        with pytest.raises(pulsar.AuthorizationError):
            client.create_producer(full)
    finally:
        client.close()
