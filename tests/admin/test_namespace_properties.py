"""A namespace's properties over REST, as pulsar-admin's set-property, get-property, remove-property,
set-properties, get-properties and clear-properties call them."""

from __future__ import annotations

import uuid

from .admin_http import Http


def _namespace(http: Http) -> str:
    ns = f"public/p-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/namespaces/{ns}").status == 204
    return f"/admin/v2/namespaces/{ns}"


def test_namespace_properties(http: Http) -> None:
    base = _namespace(http)
    assert http.get(base + "/properties").json() == {}
    r = http.get(base + "/property/a")
    assert (r.status, r.body) == (204, b"")
    assert http.put(base + "/property/a/1").status == 204
    r = http.get(base + "/property/a")
    assert (r.status, r.body) == (200, b"1")
    assert http.put(base + "/properties", {"b": "2", "c": "3"}).status == 204
    assert http.get(base + "/properties").json() == {"a": "1", "b": "2", "c": "3"}
    assert http.get(base).json()["properties"] == {"a": "1", "b": "2", "c": "3"}
    r = http.delete(base + "/property/a")
    assert (r.status, r.body) == (200, b"1")
    assert http.delete(base + "/property/a").status == 204
    assert http.get(base + "/properties").json() == {"b": "2", "c": "3"}
    assert http.delete(base + "/properties").status == 204
    assert http.get(base + "/properties").json() == {}
    assert http.put(base + "/properties", {"b": 2}).status in (400, 412)
    r = http.get("/admin/v2/namespaces/public/nowhere/properties")
    assert (r.status, r.reason) == (404, "Namespace does not exist")
