"""``magnetar admin``: the pulsar-admin verbs, over a broker's REST API.

Every command sends one (or a few) HTTP requests to ``--admin-url`` (default
http://localhost:8080) with the standard library, and prints the answer as tables, or as JSON
with ``--json``. A refused request prints one line, ``error: <status> <phrase>: <reason>``, and
exits with status 1.

One module per resource; importing them registers their commands, in the order ``--help`` lists
them (:data:`MODULES`). :func:`app_for` imports only the modules that register commands in one
group, which is what a command line naming that group needs (the policy commands, generated from
the broker's policy registry, are loaded only for ``namespaces`` and ``topics``); ``app_for(None)``
is the whole command.
"""

from __future__ import annotations

import importlib

import typer

from magnetar.cli.admin.context import admin_app

#: every module registering commands, in --help order
MODULES = (
    "clusters", "cluster_topology", "tenants", "namespaces", "namespace_properties", "topics", "subscriptions", "messages",
    "topic_lifecycle", "topic_storage", "policies", "permissions", "transactions",
)
#: group -> the modules registering commands in it (tests/cli/test_admin_groups.py checks this against the whole app)
GROUP_MODULES = {
    "clusters": ("clusters", "cluster_topology"),
    "tenants": ("tenants",),
    "transactions": ("transactions",),
    "namespaces": ("namespaces", "namespace_properties", "policies", "permissions"),
    "topics": ("topics", "subscriptions", "messages", "topic_lifecycle", "topic_storage", "policies", "permissions"),
}


def app_for(group: str | None) -> typer.Typer:
    """The admin command with (at least) every command of ``group``; every module when it is no known group."""
    names = GROUP_MODULES.get(group or "", MODULES)
    for name in MODULES:  # in --help order, whichever are needed
        if name in names:
            importlib.import_module(f"magnetar.cli.admin.{name}")
    return admin_app


__all__ = ["GROUP_MODULES", "MODULES", "app_for"]
