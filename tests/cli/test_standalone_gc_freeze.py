"""``magnetar standalone`` takes each admin route group's objects out of the garbage collector's generations
once the group is built (issue 22: the full collections of a loaded broker walked the tenants and namespaces
groups' ~400 FastAPI fields and their pydantic validators every time, 32-82 ms of the loop each), and does
so once per group, never per request."""

from __future__ import annotations

import gc
import linecache
import re
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from magnetar.admin.route_groups import BUILDERS, LazyRoutesApp
from magnetar.broker.config import BrokerConfig
from magnetar.cli import standalone
from magnetar.testing import BrokerThread, free_port

#: a value for each path parameter of the admin routes (any other parameter: "x")
PATH_VALUES = {"tenant": "public", "namespace": "default", "cluster": "standalone", "property": "public",
               "topic": "gc-freeze", "schema": "gc-freeze"}


def request(port: int, method: str, path: str) -> int:
    """One admin request; its status."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=b"" if method in ("PUT", "POST") else None)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            resp.read()
            return resp.status
    except urllib.error.HTTPError as exc:
        exc.read()
        return exc.code


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    """An in-process broker wired as the standalone command wires its admin app's freezes; what its hooks
    froze in this process is unfrozen after the test."""
    config = BrokerConfig(data_dir=tmp_path / "data", port=free_port(), http_port=free_port(), fsync="never")
    try:
        with BrokerThread(config) as thread:
            assert thread.server is not None
            standalone.freeze_admin_builds(thread.server)
            yield thread
    finally:
        gc.unfreeze()


def groups_of(broker: BrokerThread) -> Any:
    assert broker.server is not None and broker.server.http is not None
    app = broker.server.http.app
    assert isinstance(app, LazyRoutesApp)
    return app.groups


def get_paths(broker: BrokerThread) -> list[str]:
    """A path for every GET route of the complete app, its parameters filled in."""
    paths = []
    for route in groups_of(broker).app.routes:
        if "GET" not in (getattr(route, "methods", None) or ()):
            continue
        path = re.sub(r"\{([^}:]+)(:[^}]*)?\}", lambda m: PATH_VALUES.get(m.group(1), "x"), route.path)
        paths.append(path)
    return paths


def model_fields(route: Any) -> list[Any]:
    """The FastAPI fields a route was built with: its parameters', its body's and its response's."""
    dependant = route.dependant
    fields = [*dependant.path_params, *dependant.query_params, *dependant.header_params,
              *dependant.cookie_params, *dependant.body_params]
    for extra in (route.body_field, route.response_field):
        if extra is not None:
            fields.append(extra)
    return fields


def test_a_built_groups_objects_are_frozen(broker: BrokerThread) -> None:
    port = broker.config.http_port
    assert request(port, "GET", "/admin/v2/tenants") == 200
    assert request(port, "GET", "/admin/v2/tenants/public") == 200
    tenants = [route for route in groups_of(broker).app.routes
               if getattr(route, "path", "").startswith("/admin/v2/tenants") and hasattr(route, "dependant")]
    assert len(tenants) >= 5
    fields = [field for route in tenants for field in model_fields(route)]
    assert len(fields) >= 10
    walked = {id(obj) for obj in gc.get_objects()}
    assert [field.name for field in fields if id(field) in walked] == []
    assert [route.path for route in tenants if id(route) in walked or id(route.dependant) in walked] == []
    # a group not built yet is not frozen: its objects do not exist
    assert "namespaces" not in groups_of(broker).built


def test_the_freezes_come_once_per_group_not_per_request(broker: BrokerThread) -> None:
    port = broker.config.http_port
    freezes: list[str] = []
    real = standalone.freeze_built

    def counted() -> None:
        freezes.append("group")
        real()

    broker.call(setattr, broker.server, "on_routes_built", counted)
    # a path under no group's prefix builds every group: 11 groups, each built and frozen once
    assert request(port, "GET", "/admin/v2/no-such-resource") == 404
    assert groups_of(broker).complete
    assert len(freezes) == len(BUILDERS)
    paths = get_paths(broker)
    assert len(paths) > 100
    for path in paths:  # every route's first call (its first-call parts are made at its group's build)
        request(port, "GET", path)
    frozen = gc.get_freeze_count()
    sent = 0
    while sent < 1000:
        for path in paths:
            request(port, "GET", path)
            sent += 1
        name = f"public/gc-freeze-{sent}"
        assert request(port, "PUT", f"/admin/v2/namespaces/{name}") == 204
        assert request(port, "DELETE", f"/admin/v2/namespaces/{name}") == 204
        sent += 2
    # no freeze after the groups' builds: the frozen objects only get fewer (those freed by their count)
    assert len(freezes) == len(BUILDERS)
    assert gc.get_freeze_count() <= frozen


def test_a_routes_first_call_reads_no_source_file_on_the_loop(broker: BrokerThread,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    port = broker.config.http_port
    reads: list[tuple[str, str]] = []
    real_update = linecache.updatecache

    def recorded(filename: str, module_globals: Any = None) -> list[str]:
        reads.append((Path(filename).name, threading.current_thread().name))
        return real_update(filename, module_globals)

    monkeypatch.setattr(linecache, "updatecache", recorded)
    linecache.clearcache()
    # the clusters group is built for this request, and its route called for the first time: FastAPI
    # looks up where the endpoint is defined (for its error messages) then, in the source file
    assert request(port, "GET", "/admin/v2/clusters") == 200
    assert request(port, "GET", "/admin/v2/clusters/standalone") == 200
    assert ("routes_clusters.py", "magnetar-broker") not in reads
    assert [name for name, _thread in reads].count("routes_clusters.py") == 1  # read once, in the build's thread
