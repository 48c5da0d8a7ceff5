"""`magnetar admin <group> ...` imports only the modules registering commands in that group
(magnetar.cli.admin.GROUP_MODULES), and that is every command the whole admin app has there: a
module added later that registers in a group without being listed fails here."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from magnetar.cli.admin import GROUP_MODULES

PROBE = """
import json, sys
from magnetar.cli.admin import app_for
app = app_for(sys.argv[1] if sys.argv[1] != "-" else None)
groups = {g.name: sorted(c.name for c in g.typer_instance.registered_commands) for g in app.registered_groups}
loaded = sorted(m for m in sys.modules if m.startswith("magnetar.cli.admin.") or m == "magnetar.broker.policies.registry")
print(json.dumps({"groups": groups, "loaded": loaded}))
"""


def _probe(group: str | None) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, group or "-"], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def whole() -> dict:
    return _probe(None)


@pytest.mark.parametrize("group", sorted(GROUP_MODULES))
def test_a_group_gets_all_its_commands_from_its_modules(group: str, whole: dict) -> None:
    partial = _probe(group)
    assert partial["groups"][group] == whole["groups"][group]
    assert len(whole["groups"][group]) > 2


def test_every_group_of_the_whole_app_is_mapped(whole: dict) -> None:
    assert sorted(whole["groups"]) == sorted(GROUP_MODULES)


def test_tenants_and_clusters_do_not_load_the_policy_registry() -> None:
    for group in ("tenants", "clusters"):
        loaded = _probe(group)["loaded"]
        assert "magnetar.broker.policies.registry" not in loaded and "magnetar.cli.admin.policies" not in loaded
    assert "magnetar.broker.policies.registry" in _probe("namespaces")["loaded"]
