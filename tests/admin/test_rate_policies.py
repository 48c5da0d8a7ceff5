"""Rate-limit and inactive-topic policies over the REST API: Pulsar's paths, bodies and refusals."""

from __future__ import annotations

import uuid

from .admin_http import Http

PUBLISH = {"publishThrottlingRateInMsg": 100, "publishThrottlingRateInByte": 1000}
DISPATCH = {"dispatchThrottlingRateInMsg": 100, "dispatchThrottlingRateInByte": 1000,
            "relativeToPublishRate": False, "ratePeriodInSecond": 2}
SUB_DISPATCH = {"dispatchThrottlingRateInMsg": 50, "dispatchThrottlingRateInByte": 500,
                "relativeToPublishRate": True, "ratePeriodInSecond": 1}
SUBSCRIBE = {"subscribeThrottlingRatePerConsumer": 10, "ratePeriodInSecond": 30}
REPLICATOR = {"dispatchThrottlingRateInMsg": 10, "dispatchThrottlingRateInByte": 100,
              "relativeToPublishRate": False, "ratePeriodInSecond": 1}
INACTIVE = {"inactiveTopicDeleteMode": "delete_when_subscriptions_caught_up", "maxInactiveDurationSeconds": 3600,
            "deleteWhileInactive": True}
CASES = [
    ("publishRate", PUBLISH),
    ("dispatchRate", DISPATCH),
    ("subscriptionDispatchRate", SUB_DISPATCH),
    ("subscribeRate", SUBSCRIBE),
    ("replicatorDispatchRate", REPLICATOR),
    ("inactiveTopicPolicies", INACTIVE),
]


def _namespace(http: Http) -> str:
    tenant = f"rt-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/tenants/{tenant}", {"allowedClusters": ["standalone"]}).status == 204
    assert http.put(f"/admin/v2/namespaces/{tenant}/ns").status == 204
    return f"{tenant}/ns"


def test_namespace_rates_set_get_remove(http: Http) -> None:
    ns = _namespace(http)
    base = f"/admin/v2/namespaces/{ns}"
    for path, value in CASES:
        assert http.get(f"{base}/{path}").json() is None, path
        r = http.post(f"{base}/{path}", value)
        assert r.status == 204, (path, r.status, r.body)
        assert http.get(f"{base}/{path}").json() == value, path
    policies = http.get(base).json()
    # Pulsar's Policies keep the rates per cluster
    assert policies["publishMaxMessageRate"] == {"standalone": PUBLISH}
    assert policies["topicDispatchRate"] == {"standalone": DISPATCH}
    assert policies["clusterDispatchRate"] == {"standalone": DISPATCH}
    assert policies["subscriptionDispatchRate"] == {"standalone": SUB_DISPATCH}
    assert policies["clusterSubscribeRate"] == {"standalone": SUBSCRIBE}
    assert policies["replicatorDispatchRate"] == {"standalone": REPLICATOR}
    assert policies["inactive_topic_policies"] == INACTIVE
    for path, _ in CASES:
        assert http.delete(f"{base}/{path}").status == 204, path
        assert http.get(f"{base}/{path}").json() is None, path
    policies = http.get(base).json()
    assert policies["publishMaxMessageRate"] == {} and policies["topicDispatchRate"] == {}
    assert "inactive_topic_policies" not in policies


def test_defaults_fill_absent_fields(http: Http) -> None:
    base = f"/admin/v2/namespaces/{_namespace(http)}"
    assert http.post(f"{base}/dispatchRate", {"dispatchThrottlingRateInMsg": 7}).status == 204
    assert http.get(f"{base}/dispatchRate").json() == {
        "dispatchThrottlingRateInMsg": 7, "dispatchThrottlingRateInByte": -1, "relativeToPublishRate": False,
        "ratePeriodInSecond": 1,
    }
    assert http.post(f"{base}/subscribeRate", {"subscribeThrottlingRatePerConsumer": 3}).status == 204
    assert http.get(f"{base}/subscribeRate").json() == {"subscribeThrottlingRatePerConsumer": 3, "ratePeriodInSecond": 30}


def test_topic_rates_set_get_remove_and_applied(http: Http) -> None:
    ns = _namespace(http)
    topic = f"/admin/v2/persistent/{ns}/t-{uuid.uuid4().hex[:8]}"
    assert http.put(topic).status == 204
    applied = http.get(f"{topic}/dispatchRate?applied=true").json()
    assert applied == {"dispatchThrottlingRateInMsg": 0, "dispatchThrottlingRateInByte": 0,
                       "relativeToPublishRate": False, "ratePeriodInSecond": 1}
    assert http.get(f"{topic}/inactiveTopicPolicies?applied=true").json() == {
        "inactiveTopicDeleteMode": "delete_when_no_subscriptions", "maxInactiveDurationSeconds": 0,
        "deleteWhileInactive": False,
    }
    assert http.post(f"/admin/v2/namespaces/{ns}/publishRate", PUBLISH).status == 204
    assert http.get(f"{topic}/publishRate").json() is None
    assert http.get(f"{topic}/publishRate?applied=true").json() == PUBLISH
    for path, value in CASES:
        r = http.post(f"{topic}/{path}", value)
        assert r.status == 204, (path, r.status, r.body)
        assert http.get(f"{topic}/{path}").json() == value, path
        assert http.get(f"{topic}/{path}?applied=true").json() == value, path
    for path, _ in CASES:
        assert http.delete(f"{topic}/{path}").status == 204, path
        assert http.get(f"{topic}/{path}").json() is None, path
    assert http.get(f"{topic}/publishRate?applied=true").json() == PUBLISH


def test_refusals(http: Http) -> None:
    ns = _namespace(http)
    base = f"/admin/v2/namespaces/{ns}"
    table = [
        ("publishRate", {"publishThrottlingRateInMsg": "many"}, "publishThrottlingRateInMsg must be an integer"),
        ("publishRate", [1, 2], None),
        ("dispatchRate", {"relativeToPublishRate": "yes"}, "relativeToPublishRate must be true or false"),
        ("dispatchRate", {"dispatchThrottlingRateInMsg": 1 << 31}, "dispatchThrottlingRateInMsg must be an integer"),
        ("subscribeRate", {"ratePeriodInSecond": 1.5}, "ratePeriodInSecond must be an integer"),
        ("inactiveTopicPolicies", {"inactiveTopicDeleteMode": "sometimes"}, "inactiveTopicDeleteMode 'sometimes'"),
        ("inactiveTopicPolicies", {"deleteWhileInactive": 1}, "deleteWhileInactive must be true or false"),
    ]
    for path, value, reason in table:
        r = http.post(f"{base}/{path}", value)
        assert r.status == 400, (path, value, r.status, r.body)
        assert r.reason and (reason is None or reason in r.reason), (path, r.reason)
        assert http.get(f"{base}/{path}").json() is None, path
    assert http.post("/admin/v2/namespaces/nope/nope/publishRate", PUBLISH).status == 404
    assert http.post(f"/admin/v2/persistent/{ns}/missing/publishRate", PUBLISH).status == 404
