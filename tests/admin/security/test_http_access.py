"""HTTP authentication (401) and authorization (403) per role, for representative routes of each resource."""

from __future__ import annotations

import time
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magnetar.admin.access import unguarded_routes
from magnetar.admin.app import create_app

from .conftest import SecuredBroker

T = "/admin/v2/persistent/acme/shop/t-access"

# (method, path, body, {role: expected status}); None is a request without credentials
CASES = [
    ("GET", "/admin/v2/clusters", None, {"super": 200, "alice": 200, "bob": 200, None: 401}),
    ("GET", "/admin/v2/clusters/standalone", None, {"super": 200, "alice": 403, "bob": 403, None: 401}),
    ("GET", "/admin/v2/tenants", None, {"super": 200, "alice": 403, "bob": 403, None: 401}),
    ("GET", "/admin/v2/tenants/acme", None, {"super": 200, "alice": 403, "bob": 403, None: 401}),
    ("GET", "/admin/v2/namespaces/acme", None, {"super": 200, "alice": 200, "bob": 403, None: 401}),
    ("GET", "/admin/v2/namespaces/acme/shop", None, {"super": 200, "alice": 200, "bob": 403, None: 401}),
    ("GET", "/admin/v2/namespaces/acme/shop/messageTTL", None, {"alice": 200, "bob": 403, "carol": 403}),
    ("GET", "/admin/v2/namespaces/acme/shop/topics", None, {"alice": 200, "bob": 403, "carol": 200, None: 401}),
    ("GET", "/admin/v2/namespaces/acme/shop/permissions", None, {"alice": 200, "bob": 403, "carol": 403}),
    ("GET", f"{T}/stats", None, {"super": 200, "alice": 200, "bob": 200, "carol": 200, "mallory": 403, None: 401}),
    ("GET", f"{T}/internalStats", None, {"alice": 200, "bob": 200, "mallory": 403}),
    ("GET", f"{T}/subscriptions", None, {"alice": 200, "bob": 403, "carol": 200, "mallory": 403}),
    ("GET", f"{T}/partitions", None, {"alice": 200, "bob": 200, "mallory": 403}),
    ("GET", f"{T}/permissions", None, {"alice": 200, "bob": 403, "carol": 403}),
    ("GET", f"{T}/messageTTL", None, {"alice": 200, "bob": 403}),
    ("GET", "/lookup/v2/topic/persistent/acme/shop/t-access", None, {"alice": 200, "bob": 200, "mallory": 403, None: 401}),
    ("GET", "/admin/v2/schemas/acme/shop/t-access/schema", None, {"alice": 404, "bob": 404, "mallory": 403}),
    ("GET", "/metrics", None, {None: 200, "mallory": 200}),
    ("GET", "/admin/v2/brokers/health", None, {None: 200}),
]


@pytest.fixture(scope="module", autouse=True)
def _topic(secured: SecuredBroker) -> None:
    assert secured.as_role("alice")("PUT", T).status in (204, 409)


@pytest.mark.parametrize(("method", "path", "body", "expected"), CASES, ids=[f"{c[0]} {c[1]}" for c in CASES])
def test_role_matrix(secured: SecuredBroker, method: str, path: str, body: object, expected: dict) -> None:
    for role, status in expected.items():
        answer = secured.as_role(role)(method, path) if body is None else secured.as_role(role)(method, path, body)
        assert answer.status == status, f"{role}: {answer.status} {answer.body}"
        if status in (401, 403):
            assert answer.reason, answer.body


def test_writes_per_role(secured: SecuredBroker) -> None:
    ns = f"ns-{uuid.uuid4().hex[:8]}"
    alice, bob, su = secured.as_role("alice"), secured.as_role("bob"), secured.as_role("super")
    # tenants and clusters: superusers only
    refused = alice("PUT", f"/admin/v2/tenants/t-{ns}", {"adminRoles": [], "allowedClusters": ["standalone"]})
    assert (refused.status, refused.reason) == (403, "This operation requires super-user access")
    assert alice("PUT", "/admin/v2/clusters/other", {"serviceUrl": "http://x:8080"}).status == 403
    assert su("PUT", f"/admin/v2/tenants/t-{ns}", {"adminRoles": [], "allowedClusters": ["standalone"]}).status == 204
    assert su("DELETE", f"/admin/v2/tenants/t-{ns}").status == 204
    # inside the tenant: its admin
    refused = bob("PUT", f"/admin/v2/namespaces/acme/{ns}")
    assert (refused.status, refused.reason) == (403, "Don't have permission to administrate resources on this tenant")
    assert alice("PUT", f"/admin/v2/namespaces/acme/{ns}").status == 204
    assert bob("POST", f"/admin/v2/namespaces/acme/{ns}/messageTTL", 60).status == 403
    assert alice("POST", f"/admin/v2/namespaces/acme/{ns}/messageTTL", 60).status == 204
    refused = bob("PUT", f"/admin/v2/persistent/acme/{ns}/t")
    assert refused.status == 403
    assert refused.reason == f"Unauthorized to validateNamespaceOperation for operation [CREATE_TOPIC] on namespace [acme/{ns}]"
    assert alice("PUT", f"/admin/v2/persistent/acme/{ns}/t").status == 204
    assert bob("DELETE", f"/admin/v2/persistent/acme/{ns}/t").status == 403
    assert alice("DELETE", f"/admin/v2/persistent/acme/{ns}/t").status == 204
    assert alice("DELETE", f"/admin/v2/namespaces/acme/{ns}").status == 204


def test_topic_operations_follow_grants(secured: SecuredBroker) -> None:
    bob, carol = secured.as_role("bob"), secured.as_role("carol")
    # bob produces: stats yes, subscriptions and cursors no; carol consumes: subscribe and skip yes
    refused = bob("PUT", f"{T}/subscription/s1")
    assert refused.status == 403
    assert refused.reason == "Unauthorized to validateTopicOperation for operation [SUBSCRIBE] on topic [persistent://acme/shop/t-access]"
    assert carol("PUT", f"{T}/subscription/s1").status in (204, 409)
    assert carol("POST", f"{T}/subscription/s1/skip_all").status == 204
    assert bob("POST", f"{T}/subscription/s1/skip_all").status == 403
    # terminate, compaction and topic policies stay with the tenant's admins
    assert carol("PUT", f"{T}/compaction").status == 403
    assert carol("POST", f"{T}/messageTTL?messageTTL=10").status == 403
    assert carol("DELETE", f"{T}/subscription/s1").status == 204


def test_bad_credentials_get_401(secured: SecuredBroker) -> None:
    path = "/admin/v2/clusters"
    for caller in (
        secured.with_header("Bearer not-a-token"),
        secured.with_header("Bearer " + secured.token("super", expires_in=-10)),
        secured.basic("admin", "wrong"),
        secured.with_header("Negotiate abc"),
        secured.with_header("Bearer " + "x" * 8_000),
    ):
        answer = caller("GET", path)
        assert answer.status == 401, answer.body
        assert answer.reason and answer.reason.startswith("Authentication required")
    assert secured.basic("admin", "123456")("GET", "/admin/v2/tenants").status == 200


def test_metrics_count_outcomes(secured: SecuredBroker) -> None:
    secured.with_header("Bearer garbage")("GET", "/admin/v2/clusters")
    secured.as_role("mallory")("GET", f"{T}/stats")
    text = secured.as_role(None)("GET", "/metrics").body
    assert 'pulsar_authentication_success_total{auth_method="token",provider_name="AuthenticationProviderToken"}' in text
    assert "pulsar_authentication_failures_total{" in text and 'provider_name="AuthenticationProviderToken"' in text
    assert 'magnetar_authorization_refusals_total{operation="GET_STATS",protocol="http"}' in text


def test_every_route_declares_its_access(secured: SecuredBroker) -> None:
    app = create_app(secured.thread.server.service)  # built off the loop: routes only, no sampling
    missing = [r for r in unguarded_routes(app) if "/magnetar/v1/" not in r]
    assert missing == []


def test_grant_takes_effect_at_once(secured: SecuredBroker) -> None:
    alice, mallory = secured.as_role("alice"), secured.as_role("mallory")
    assert mallory("GET", f"{T}/stats").status == 403
    assert alice("POST", f"{T}/permissions/mallory", ["consume"]).status == 204
    assert mallory("GET", f"{T}/stats").status == 200
    assert alice("DELETE", f"{T}/permissions/mallory").status == 204
    deadline = time.monotonic() + 1
    assert mallory("GET", f"{T}/stats").status == 403
    assert time.monotonic() < deadline


def test_lookup_and_cluster_answer_the_tls_urls(secured: SecuredBroker) -> None:
    data = secured.as_role("bob")("GET", "/lookup/v2/topic/persistent/acme/shop/t-access").body
    assert data["brokerUrlTls"].startswith("pulsar+ssl://") and data["brokerUrlTls"].endswith(f":{secured.tls_port}")
    assert data["httpUrlTls"].startswith("https://") and data["httpUrlTls"].endswith(f":{secured.https_port}")
    cluster = secured.as_role("super")("GET", "/admin/v2/clusters/standalone").body
    assert cluster["brokerServiceUrlTls"] == data["brokerUrlTls"]


_HEADER_CHARS = st.characters(min_codepoint=0x20, max_codepoint=0x7E)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None)
@given(scheme=st.sampled_from(["Bearer", "Basic", "bearer", "Digest", ""]), value=st.text(_HEADER_CHARS, max_size=300),
       method=st.sampled_from(["", "token", "basic", "tls", "none", "x" * 100]))
def test_random_credentials_are_refused_cleanly(secured: SecuredBroker, scheme: str, value: str, method: str) -> None:
    header = f"{scheme} {value}".strip()
    extra = {"X-Pulsar-Auth-Method-Name": method} if method else {}
    answer = secured.with_header(header or "Bearer", **extra)("GET", "/admin/v2/clusters")
    assert answer.status in (200, 401), answer.body
    if answer.status == 401:
        assert answer.reason and answer.reason.startswith("Authentication required")
