"""``magnetar admin clusters ...`` and ``namespaces set-clusters / get-clusters`` / ``topics
set-replication-clusters ...`` as pulsar-admin, against a broker of cluster "east"."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest
from typer.testing import CliRunner

from magnetar.broker.config import BrokerConfig
from magnetar.cli.main import app
from magnetar.testing import BrokerThread, free_port


@pytest.fixture(scope="module")
def admin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., tuple[int, str, str]]]:
    http_port = free_port()
    config = BrokerConfig(data_dir=tmp_path_factory.mktemp("cli") / "data", port=free_port(), http_port=http_port,
                          fsync="never", cluster_name="east")
    thread = BrokerThread(config).start()
    runner = CliRunner()

    def run(*args: str) -> tuple[int, str, str]:
        r = runner.invoke(app, ["admin", "--admin-url", f"http://127.0.0.1:{http_port}", *args])
        return r.exit_code, r.stdout, r.stderr

    yield run
    thread.stop()


def test_clusters_verbs(admin: Callable[..., tuple[int, str, str]]) -> None:
    assert admin("clusters", "create", "west", "--url", "http://w:8080", "--broker-url", "pulsar://w:6650",
                 "--auth-plugin", "token", "--auth-parameters", "token:x") == (0, "Created cluster west\n", "")
    code, out, _ = admin("--json", "clusters", "list")
    assert (code, json.loads(out)) == (0, ["east", "west"])
    data = json.loads(admin("--json", "clusters", "get", "west")[1])
    assert (data["serviceUrl"], data["brokerServiceUrl"], data["authenticationPlugin"]) == (
        "http://w:8080", "pulsar://w:6650", "token")
    assert admin("clusters", "update", "west", "--url", "http://w2:8080", "--broker-url", "pulsar://w2:6650",
                 "--tls-enable")[0] == 0
    data = json.loads(admin("--json", "clusters", "get", "west")[1])
    assert (data["serviceUrl"], data["brokerClientTlsEnabled"]) == ("http://w2:8080", True)
    code, _, err = admin("clusters", "create", "bad")
    assert code == 1 and err.strip().startswith("error: 412")
    assert admin("clusters", "delete", "west")[0] == 0
    assert json.loads(admin("--json", "clusters", "list")[1]) == ["east"]


def test_set_and_get_clusters(admin: Callable[..., tuple[int, str, str]]) -> None:
    assert admin("clusters", "create", "north", "--url", "http://n:8080", "--broker-url", "pulsar://n:6650")[0] == 0
    assert admin("tenants", "create", "geo", "--allowed-clusters", "east,north")[0] == 0
    assert admin("namespaces", "create", "geo/ns")[0] == 0
    assert json.loads(admin("--json", "namespaces", "get-clusters", "geo/ns")[1]) == ["east"]
    assert admin("namespaces", "set-clusters", "geo/ns", "--clusters", "east,north")[0] == 0
    assert json.loads(admin("--json", "namespaces", "get-clusters", "geo/ns")[1]) == ["east", "north"]
    code, _, err = admin("namespaces", "set-clusters", "geo/ns", "--clusters", "east,mars")
    assert code == 1 and err.strip() == "error: 412 Precondition Failed: Invalid cluster id: mars"
    assert admin("topics", "create", "persistent://geo/ns/t")[0] == 0
    assert admin("topics", "set-replication-clusters", "persistent://geo/ns/t", "--clusters", "east")[0] == 0
    assert json.loads(admin("--json", "topics", "get-replication-clusters", "persistent://geo/ns/t")[1]) == ["east"]
    assert admin("topics", "remove-replication-clusters", "persistent://geo/ns/t")[0] == 0
    applied = admin("--json", "topics", "get-replication-clusters", "persistent://geo/ns/t", "--applied")[1]
    assert json.loads(applied) == ["east", "north"]
