"""pulsar-admin's clusters verbs beyond create / update: peer clusters, failure domains and the
migration policy, with Pulsar's bodies and statuses."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest

from .admin_http import Http


@pytest.fixture
def new_cluster(http: Http) -> Iterator[Callable[[], str]]:
    """Clusters made for the test, deleted after it (the package's broker is shared)."""
    made: list[str] = []

    def make() -> str:
        name = f"c-{uuid.uuid4().hex[:8]}"
        assert http.put(f"/admin/v2/clusters/{name}", {"serviceUrl": "http://127.0.0.1:9"}).status == 204
        made.append(name)
        return name

    yield make
    for name in made:
        http.delete(f"/admin/v2/clusters/{name}")


def test_peer_clusters_are_set_shown_and_kept_by_an_update(http: Http, new_cluster: Callable[[], str]) -> None:
    a, b = new_cluster(), new_cluster()
    r = http.get(f"/admin/v2/clusters/{a}/peers")
    assert (r.status, r.body) == (204, b"")
    assert http.post(f"/admin/v2/clusters/{a}/peers", [b, "standalone"]).status == 204
    assert http.get(f"/admin/v2/clusters/{a}/peers").json() == [b, "standalone"]
    assert http.get(f"/admin/v2/clusters/{a}").json()["peerClusterNames"] == [b, "standalone"]
    assert http.post(f"/admin/v2/clusters/{a}", {"serviceUrl": "http://127.0.0.1:10"}).status == 204
    assert http.get(f"/admin/v2/clusters/{a}/peers").json() == [b, "standalone"]
    r = http.post(f"/admin/v2/clusters/{a}/peers", [a])
    assert (r.status, r.reason) == (412, f"{a} itself can't be part of peer-list")
    r = http.post(f"/admin/v2/clusters/{a}/peers", ["nowhere"])
    assert (r.status, r.reason) == (412, "Peer cluster nowhere does not exist")
    assert http.get("/admin/v2/clusters/nowhere/peers").status == 404


def test_failure_domains_create_get_update_list_delete(http: Http, new_cluster: Callable[[], str]) -> None:
    c = new_cluster()
    base = f"/admin/v2/clusters/{c}/failureDomains"
    assert http.get(base).json() == {}
    assert http.post(base + "/d1", {"brokers": ["127.0.0.1:9"]}).status == 204
    assert http.get(base + "/d1").json() == {"brokers": ["127.0.0.1:9"]}
    assert http.post(base + "/d1", {"brokers": ["127.0.0.1:10"]}).status == 204
    assert http.post(base + "/d2", {"brokers": ["127.0.0.1:11"]}).status == 204
    assert http.get(base).json() == {"d1": {"brokers": ["127.0.0.1:10"]}, "d2": {"brokers": ["127.0.0.1:11"]}}
    r = http.post(base + "/d3", {"brokers": ["127.0.0.1:11"]})
    assert (r.status, r.reason) == (409, f"Domain d2 for cluster {c} already has brokers ['127.0.0.1:11']")
    assert http.delete(base + "/d1").status == 204
    r = http.get(base + "/d1")
    assert (r.status, r.reason) == (404, f"Domain d1 for cluster {c} does not exist")
    assert http.delete(base + "/d1").status == 404
    assert http.get(base).json() == {"d2": {"brokers": ["127.0.0.1:11"]}}
    assert http.delete(f"/admin/v2/clusters/{c}").status == 204
    assert http.put(f"/admin/v2/clusters/{c}", {"serviceUrl": "http://127.0.0.1:9"}).status == 204
    assert http.get(base).json() == {}


def test_cluster_migration_policy(http: Http, new_cluster: Callable[[], str]) -> None:
    c = new_cluster()
    r = http.get(f"/admin/v2/clusters/{c}/migrate")
    assert (r.status, r.reason) == (404, "Cluster does not exist")
    url = {"serviceUrl": "http://127.0.0.1:9", "brokerServiceUrl": "pulsar://127.0.0.1:9"}
    assert http.post(f"/admin/v2/clusters/{c}/migrate?migrated=true", url).status == 204
    assert http.get(f"/admin/v2/clusters/{c}/migrate").json() == {
        "migrated": True,
        "migratedClusterUrl": {**url, "serviceUrlTls": None, "brokerServiceUrlTls": None},
    }
    r = http.post(f"/admin/v2/clusters/{c}/migrate?migrated=true", {})
    assert (r.status, r.reason) == (400, "Cluster url must not be empty")
    assert http.post("/admin/v2/clusters/nowhere/migrate", url).status == 404
