"""`magnetar admin` takes its own options (--json, --admin-url) after the subcommand too, where
pulsar-admin users put them."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from magnetar.cli.admin.context import hoist_global_options
from magnetar.cli.main import app
from magnetar.testing import BrokerProcess


def test_global_options_are_hoisted_from_anywhere() -> None:
    assert hoist_global_options(["topics", "list", "public/default", "--json"]) == ["--json", "topics", "list", "public/default"]
    assert hoist_global_options(["clusters", "list", "--admin-url", "http://h:1", "--json"]) == [
        "--admin-url", "http://h:1", "--json", "clusters", "list"]
    assert hoist_global_options(["clusters", "list", "--admin-url=http://h:1"]) == ["--admin-url=http://h:1", "clusters", "list"]
    assert hoist_global_options(["x", "--", "--json"]) == ["x", "--", "--json"]


def test_json_and_admin_url_after_the_subcommand(broker: BrokerProcess) -> None:
    runner = CliRunner()
    for argv in (
        ["admin", "--admin-url", broker.http_url, "--json", "clusters", "list"],
        ["admin", "clusters", "list", "--json", "--admin-url", broker.http_url],
        ["admin", "--admin-url", broker.http_url, "clusters", "list", "--json"],
        ["admin", "clusters", f"--admin-url={broker.http_url}", "list", "--json"],
    ):
        r = runner.invoke(app, argv)
        assert r.exit_code == 0, (argv, r.stdout, r.stderr)
        assert json.loads(r.stdout) == ["standalone"], argv
    r = runner.invoke(app, ["admin", "--admin-url", broker.http_url, "namespaces", "list", "public", "--json"])
    assert r.exit_code == 0 and "public/default" in json.loads(r.stdout)
