"""Refused calls: each answers its exact status and a reason, and changes nothing."""

from __future__ import annotations

import pytest

from .admin_http import Http

P = "/admin/v2/persistent/public/default"

# (method, path, body or None, raw bytes or None, status, reason or None)
BAD = [
    ("PUT", "/admin/v2/tenants/bad$name", {"allowedClusters": ["standalone"]}, None, 412, "Tenant name is not valid"),
    ("PUT", "/admin/v2/tenants/t-bad", {"allowedClusters": "standalone"}, None, 400, None),
    ("PUT", "/admin/v2/tenants/t-bad", None, b"[1,", 400, None),
    ("GET", "/admin/v2/tenants/no-such-tenant", None, None, 404, "Tenant does not exist"),
    ("DELETE", "/admin/v2/tenants/no-such-tenant", None, None, 404, "Tenant does not exist"),
    ("PUT", "/admin/v2/namespaces/public/bad$ns", None, None, 412, "Namespace name is not valid"),
    ("PUT", "/admin/v2/namespaces/no-such-tenant/ns", None, None, 404, "Tenant does not exist"),
    ("PUT", "/admin/v2/namespaces/public/default", None, None, 409, "Namespace already exists"),
    ("GET", "/admin/v2/namespaces/public/missing", None, None, 404, "Namespace does not exist"),
    ("DELETE", "/admin/v2/namespaces/public/missing", None, None, 404, "Namespace does not exist"),
    ("POST", "/admin/v2/namespaces/public/default/retention", None, b"{", 400, None),
    ("POST", "/admin/v2/namespaces/public/default/retention", {"retentionTimeInMinutes": "x"}, None, 400, None),
    ("POST", "/admin/v2/namespaces/public/default/messageTTL", -1, None, 412,
     "Invalid value for message TTL, message TTL must >= 0"),
    ("POST", "/admin/v2/namespaces/public/default/deduplication", 3, None, 400, None),
    ("POST", "/admin/v2/namespaces/public/default/backlogQuota?backlogQuotaType=nowhere", {"limitSize": 1}, None, 412, None),
    ("POST", "/admin/v2/namespaces/public/default/backlogQuota", {"limitSize": 1, "policy": "explode"}, None, 412, None),
    ("PUT", "/admin/v2/namespaces/public/default/schemaCompatibilityStrategy", "NOPE", None, 412, None),
    ("PUT", f"{P}/bad-parts/partitions", -3, None, 406, "Number of partitions should be more than 0"),
    ("PUT", f"{P}/bad-parts/partitions", 0, None, 406, "Number of partitions should be more than 0"),
    ("PUT", f"{P}/bad-parts/partitions", 10**12, None, 406, "Number of partitions should be less than or equal to 10000"),
    ("POST", "/admin/v2/namespaces/public/default/autoTopicCreation",
     {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 10**9}, None, 406, None),
    ("PUT", f"{P}/bad-parts/partitions", "3", None, 400, None),
    ("PUT", f"{P}/bad-parts/partitions", None, b"three", 400, None),
    ("POST", f"{P}/bad-parts/partitions", 3, None, 409, None),
    ("PUT", "/admin/v2/persistent/public/missing/t", None, None, 404, "Namespace does not exist"),
    ("PUT", "/admin/v2/persistent/bad$t/default/t", None, None, 412, "Namespace name is not valid"),
    ("PUT", "/admin/v2/persistent/public/default/%20t%20", None, None, 412, None),
    ("GET", f"{P}/no-topic/stats", None, None, 404, "Topic persistent://public/default/no-topic not found"),
    ("GET", f"{P}/no-topic/internalStats", None, None, 404, None),
    ("GET", f"{P}/no-topic/partitioned-stats", None, None, 404, None),
    ("DELETE", f"{P}/no-topic", None, None, 404, None),
    ("DELETE", f"{P}/no-topic/partitions", None, None, 404, None),
    ("POST", f"{P}/no-topic/subscription/s/skip_all", None, None, 404, None),
    ("POST", f"{P}/no-topic/subscription/s/skip/abc", None, None, 412, None),
    ("POST", f"{P}/no-topic/subscription/s/resetcursor/soon", None, None, 412, None),
    ("GET", f"{P}/no-topic/subscription/s/position/x", None, None, 412, None),
    ("DELETE", f"{P}/no-topic?force=maybe", None, None, 412, None),
    ("GET", "/admin/v2/namespaces/public/default/topics?mode=SOME", None, None, 412, None),
    ("GET", "/lookup/v2/topic/elsewhere/public/default/t", None, None, 412, None),
]


def _state(http: Http) -> tuple:
    tenants = http.get("/admin/v2/tenants").json()
    namespaces = {t: http.get(f"/admin/v2/namespaces/{t}").json() for t in tenants}
    return (
        tenants,
        namespaces,
        http.get("/admin/v2/namespaces/public/default").json(),
        sorted(http.get("/admin/v2/namespaces/public/default/topics?mode=ALL").json()),
        http.get(f"{P}/partitioned").json(),
    )


@pytest.mark.parametrize(("method", "path", "body", "raw", "status", "reason"), BAD)
def test_refused_call(http: Http, method: str, path: str, body, raw, status: int, reason: str | None) -> None:
    before = _state(http)
    if raw is not None:
        r = http.request(method, path, raw=raw)
    elif body is not None:
        r = http.request(method, path, body)
    else:
        r = http.request(method, path)
    assert r.status == status, r.body
    assert isinstance(r.reason, str) and r.reason
    if reason is not None:
        assert r.reason == reason
    assert _state(http) == before
