"""The admin app of a standalone broker builds each group of routes on the first request under its paths:
that request waits for it (never a 404), other groups stay unbuilt, and what the app answers is what
the complete app answers."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from magnetar.admin.app import create_app
from magnetar.admin.route_groups import BUILDERS, LazyRoutesApp, groups_for
from magnetar.broker.config import BrokerConfig
from magnetar.testing import BrokerThread, free_port


def get(port: int, path: str) -> tuple[int, bytes]:
    """GET ``path``: status and body."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    config = BrokerConfig(data_dir=tmp_path / "data", port=free_port(), http_port=free_port(), fsync="never")
    with BrokerThread(config) as thread:
        yield thread


def lazy_app(broker: BrokerThread) -> LazyRoutesApp:
    assert broker.server is not None and broker.server.http is not None
    app = broker.server.http.app
    assert isinstance(app, LazyRoutesApp)
    return app


def test_paths_map_to_their_group() -> None:
    assert groups_for("/admin/v2/brokers/health") == ()
    assert groups_for("/metrics") == ()
    assert groups_for("/admin/v2/clusters") == ("clusters",)
    assert groups_for("/admin/v2/clusters/") == ("clusters",)
    assert groups_for("/admin/v2/persistent/public/default/t/stats") == ("persistent",)
    assert groups_for("/admin/v2/non-persistent/public/default/t/stats") == ("non-persistent",)
    assert groups_for("/lookup/v2/topic/persistent/public/default/t") == ("lookup",)
    assert groups_for("/console/topics") == ("console",)
    assert groups_for("/") == ("console",)
    assert groups_for("/openapi.json") == tuple(BUILDERS)
    assert groups_for("/admin/v2/persistentx") == tuple(BUILDERS)


def test_a_request_builds_only_its_group(broker: BrokerThread) -> None:
    port = broker.config.http_port
    groups = lazy_app(broker).groups
    assert get(port, "/admin/v2/brokers/health") == (200, b"ok")
    assert groups.built == []
    assert get(port, "/admin/v2/tenants") == (200, b'["public"]')
    assert groups.built == ["tenants"]
    status, body = get(port, "/admin/v2/persistent/public/default")
    assert status == 200 and json.loads(body) == []
    assert groups.built == ["tenants", "persistent"]


def test_concurrent_first_requests_all_get_their_route(broker: BrokerThread) -> None:
    port = broker.config.http_port
    paths = ["/admin/v2/clusters", "/admin/v2/namespaces/public", "/admin/v2/clusters/standalone",
             "/admin/v2/non-persistent/public/default", "/admin/v2/tenants/public"] * 4
    with ThreadPoolExecutor(len(paths)) as pool:
        statuses = list(pool.map(lambda path: get(port, path)[0], paths))
    assert statuses == [200] * len(paths)
    assert lazy_app(broker).groups.built == ["clusters", "tenants", "namespaces", "non-persistent"]


def test_a_path_under_no_group_gets_the_complete_apps_answer(broker: BrokerThread) -> None:
    port = broker.config.http_port
    assert get(port, "/admin/v2/no-such-resource") == (404, b'{"reason":"Not Found"}')
    groups = lazy_app(broker).groups
    assert groups.complete
    status, body = get(port, "/openapi.json")
    assert status == 200
    assert broker.server is not None
    complete = create_app(broker.server.service)  # built off the loop: routes only, no sampling
    assert json.loads(body) == complete.openapi()
    assert [getattr(r, "path", None) for r in groups.app.routes] == [getattr(r, "path", None) for r in complete.routes]
