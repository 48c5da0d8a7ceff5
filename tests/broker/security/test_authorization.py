"""PulsarAuthorizationProvider semantics over plain tenant and namespace data."""

from __future__ import annotations

from typing import Any

import pytest

from magnetar.broker.security import (
    AuthorizationError,
    AuthorizationService,
    AuthPolicies,
    NamespaceOperation,
    SecuritySettings,
    TenantOperation,
    TopicOperation,
)

TENANTS: dict[str, dict[str, Any]] = {
    "public": {"adminRoles": ["anonymous"], "allowedClusters": ["standalone"]},
    "private": {"adminRoles": [], "allowedClusters": ["standalone"]},
    "acme": {"adminRoles": ["acme-admin"], "allowedClusters": ["standalone"]},
}


def _namespaces() -> dict[str, dict[str, Any]]:
    return {
        "private/auth": {"auth_policies": {"namespace_auth": {"token-principal": ["produce", "consume"]},
                                          "destination_auth": {}, "subscription_auth_roles": {}}},
        "acme/orders": {"auth_policies": {
            "namespace_auth": {"reader": ["consume"], "app.*": ["produce"], "*.audit": ["consume"]},
            "destination_auth": {"persistent://acme/orders/events": {"writer": ["produce"]},
                                 "persistent://acme/orders/parted": {"writer": ["consume"]}},
            "subscription_auth_roles": {"billing": ["reader"]},
        }},
        "acme/prefixed": {"subscription_auth_mode": "Prefix",
                          "auth_policies": {"namespace_auth": {"reader": ["consume"]}}},
        "acme/broken": {"auth_policies": {"namespace_auth": "not a map"}},
    }


@pytest.fixture
def namespaces() -> dict[str, dict[str, Any]]:
    return _namespaces()


def _service(namespaces: dict[str, dict[str, Any]], wildcards: bool = False,
             enabled: bool = True) -> AuthorizationService:
    settings = SecuritySettings(authorization_enabled=enabled, super_user_roles=("superUser", "admin"),
                                authorization_allow_wildcards_matching=wildcards)
    return AuthorizationService(settings, TENANTS.get, namespaces.get)


def test_namespace_grants(namespaces: dict[str, dict[str, Any]]) -> None:
    authz = _service(namespaces)
    topic = "persistent://private/auth/my-python-topic-token-auth"
    assert authz.can_produce(topic, "token-principal") and authz.can_consume(topic, "token-principal", "my-sub")
    assert authz.can_lookup(topic, "token-principal")
    assert not authz.can_produce(topic, "anonymous") and not authz.can_lookup(topic, "anonymous")
    assert not authz.can_produce(topic, None)
    assert authz.can_produce(topic, "superUser") and authz.can_consume(topic, "admin", "s")


def test_tenant_admins_may_do_everything_in_their_tenant(namespaces: dict[str, dict[str, Any]]) -> None:
    authz = _service(namespaces)
    topic = "persistent://public/default/t"  # no auth_policies at all: only admins
    assert authz.allow_topic_operation(topic, "anonymous", TopicOperation.PRODUCE)
    assert authz.allow_topic_operation(topic, "anonymous", TopicOperation.TERMINATE)
    assert not authz.allow_topic_operation(topic, "someone", TopicOperation.LOOKUP)
    assert authz.allow_namespace_operation("public/default", "anonymous", NamespaceOperation.GRANT_PERMISSION)
    assert authz.allow_tenant_operation("public", "anonymous", TenantOperation.CREATE_NAMESPACE)
    assert not authz.allow_tenant_operation("private", "anonymous", TenantOperation.CREATE_NAMESPACE)
    assert not authz.is_tenant_admin("missing-tenant", "anonymous")
    assert authz.allow_namespace_policy_operation("acme/orders", "acme-admin")
    assert not authz.allow_namespace_policy_operation("acme/orders", "reader")
    assert authz.allow_topic_policy_operation("acme/orders/events", "acme-admin")


def test_only_superusers_administer_clusters_and_tenants(namespaces: dict[str, dict[str, Any]]) -> None:
    authz = _service(namespaces)
    assert authz.allow_super_user_operation("superUser")
    assert not authz.allow_super_user_operation("acme-admin") and not authz.allow_super_user_operation(None)


def test_topic_grants_and_partitions(namespaces: dict[str, dict[str, Any]]) -> None:
    authz = _service(namespaces)
    assert authz.can_produce("persistent://acme/orders/events", "writer")
    assert not authz.can_consume("persistent://acme/orders/events", "writer")
    assert not authz.can_produce("persistent://acme/orders/other", "writer")
    assert authz.can_consume("persistent://acme/orders/parted-partition-3", "writer")
    assert authz.can_lookup("persistent://acme/orders/events", "writer")


def test_subscription_roles(namespaces: dict[str, dict[str, Any]]) -> None:
    authz = _service(namespaces)
    namespaces["acme/orders"]["auth_policies"]["namespace_auth"]["other"] = ["consume"]
    topic = "persistent://acme/orders/events"
    assert authz.can_consume(topic, "reader", "billing")
    assert not authz.can_consume(topic, "other", "billing")
    assert authz.can_consume(topic, "other", "shipping")
    with pytest.raises(AuthorizationError, match="^Client is not authorized to subscribe$"):
        authz.check_subscribe(topic, "other", "billing")


def test_prefix_subscription_mode(namespaces: dict[str, dict[str, Any]]) -> None:
    authz = _service(namespaces)
    topic = "persistent://acme/prefixed/t"
    authz.check_subscribe(topic, "reader", "reader-sub")
    with pytest.raises(AuthorizationError, match="needs to be prefixed by the authentication role, like reader-xxxx"):
        authz.check_subscribe(topic, "reader", "sub")


def test_wildcards_only_when_enabled(namespaces: dict[str, dict[str, Any]]) -> None:
    topic = "persistent://acme/orders/events"
    plain, wild = _service(namespaces), _service(namespaces, wildcards=True)
    assert not plain.can_produce(topic, "app.orders")
    assert wild.can_produce(topic, "app.orders") and not wild.can_consume(topic, "app.orders")
    assert wild.can_consume(topic, "billing.audit") and not wild.can_consume(topic, "audit.billing")
    assert not wild.can_produce(topic, "xapp.orders")


def test_grants_and_revocations_take_effect_at_once(namespaces: dict[str, dict[str, Any]]) -> None:
    authz = _service(namespaces)
    topic = "persistent://private/auth/t"
    policies = namespaces["private/auth"]
    current = AuthPolicies.from_json(policies["auth_policies"])
    policies["auth_policies"] = current.grant_namespace("late", ["produce"]).to_json()
    assert authz.can_produce(topic, "late")
    authz.check_producer(topic, "late")
    policies["auth_policies"] = AuthPolicies.from_json(policies["auth_policies"]).revoke_namespace("late").to_json()
    assert not authz.can_produce(topic, "late")
    with pytest.raises(AuthorizationError, match="^Client is not authorized to Publish$"):
        authz.check_producer(topic, "late")


def test_auth_policies_round_trip_and_edits() -> None:
    policies = AuthPolicies.from_json(_namespaces()["acme/orders"]["auth_policies"])
    edited = (policies.grant_topic("persistent://acme/orders/x", "r", ["consume", "bogus"])
              .revoke_topic("persistent://acme/orders/events", "writer")
              .grant_subscription("s", ["a", "b"]).revoke_subscription("s", "a"))
    out = edited.to_json()
    assert out["destination_auth"] == {"persistent://acme/orders/parted": {"writer": ["consume"]},
                                       "persistent://acme/orders/x": {"r": ["consume"]}}
    assert out["subscription_auth_roles"] == {"billing": ["reader"], "s": ["b"]}
    assert AuthPolicies.from_json(out) == edited
    assert AuthPolicies.from_json(None) == AuthPolicies() == AuthPolicies.from_json({"namespace_auth": 3})


def test_namespace_operations_for_non_admins(namespaces: dict[str, dict[str, Any]]) -> None:
    authz = _service(namespaces)
    assert authz.allow_namespace_operation("acme/orders", "reader", NamespaceOperation.GET_TOPICS)
    authz.check_topics_of_namespace("acme/orders", "reader")
    assert not authz.allow_namespace_operation("acme/orders", "reader", NamespaceOperation.CREATE_TOPIC)
    with pytest.raises(AuthorizationError, match="GetTopicsOfNamespace"):
        authz.check_topics_of_namespace("acme/orders", "stranger")


def test_missing_or_malformed_policies_and_names_grant_nothing(namespaces: dict[str, dict[str, Any]]) -> None:
    authz = _service(namespaces)
    assert not authz.can_produce("persistent://acme/absent/t", "reader")
    assert not authz.can_consume("persistent://acme/broken/t", "reader")
    assert not authz.can_produce("not a://valid/topic/name/x", "reader")
    with pytest.raises(AuthorizationError, match="^Client is not authorized to Lookup$"):
        authz.check_lookup("persistent://acme/absent/t", "reader")
    with pytest.raises(AuthorizationError, match="Get Partition Metadata"):
        authz.check_lookup("persistent://acme/absent/t", "reader", "partitioned_metadata")


def test_everything_is_allowed_when_authorization_is_disabled(namespaces: dict[str, dict[str, Any]]) -> None:
    authz = _service(namespaces, enabled=False)
    assert authz.can_produce("persistent://private/auth/t", None)
    assert authz.allow_super_user_operation("nobody")
    authz.check_subscribe("persistent://private/auth/t", None, "s")
