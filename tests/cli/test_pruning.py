"""`magnetar admin ...` builds only the command it runs and imports only what that command needs
(magnetar.cli.pruning; the figures are in benchmarks/cli_latency.py)."""

from __future__ import annotations

import subprocess
import sys

import typer
from typer.testing import CliRunner

from magnetar.cli.admin.context import split_global_options
from magnetar.cli.pruning import leading_names, only_named

PROBE = """
import sys
sys.argv = ["magnetar", *sys.argv[1:]]
from magnetar.cli.main import main
try:
    main()
except SystemExit as exc:
    code = exc.code
heavy = ("magnetar.client", "magnetar.broker.service", "rich", "urllib.request", "fastapi", "asyncio")
print(code, ",".join(m for m in heavy if m in sys.modules))
"""


def test_an_admin_call_imports_neither_the_client_nor_rich() -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE, "admin", "--admin-url", "http://127.0.0.1:1", "tenants", "list"],
                          capture_output=True, text=True, timeout=60)
    code, _, loaded = proc.stdout.strip().splitlines()[-1].partition(" ")
    assert (code, loaded) == ("1", "")
    assert proc.stderr.startswith("error: cannot reach http://127.0.0.1:1")


def _tree() -> typer.Typer:
    root = typer.Typer()
    group = typer.Typer()
    root.add_typer(group, name="tenants")
    root.add_typer(typer.Typer(), name="topics")
    for name in ("list", "get"):
        group.command(name)(lambda: print("ran"))
    return root


def test_only_the_named_path_is_registered_and_restored_after() -> None:
    root = _tree()
    group = root.registered_groups[0].typer_instance
    with only_named(root, ["tenants", "list", "acme"]):
        assert [g.name for g in root.registered_groups] == ["tenants"]
        assert [c.name for c in group.registered_commands] == ["list"]
        assert CliRunner().invoke(root, ["tenants", "list"]).output == "ran\n"
    assert [g.name for g in root.registered_groups] == ["tenants", "topics"]
    assert [c.name for c in group.registered_commands] == ["list", "get"]


def test_a_name_that_matches_nothing_leaves_the_level_whole() -> None:
    root = _tree()
    group = root.registered_groups[0].typer_instance
    with only_named(root, ["tenants", "lst"]):
        assert [c.name for c in group.registered_commands] == ["list", "get"]
        result = CliRunner().invoke(root, ["tenants", "lst"])
        assert result.exit_code == 2 and "No such command 'lst'" in result.output


def test_the_path_skips_admin_wide_options() -> None:
    args = ["--admin-url", "http://x:1", "--json", "topics", "list", "public/default", "--client-conf", "c"]
    assert leading_names(split_global_options(args)[1]) == ["topics", "list", "public/default"]
    assert leading_names(["tenants", "--help"]) == ["tenants"]
