"""The policy commands of ``magnetar admin`` come from the broker's policy registry."""

from __future__ import annotations

import typer

from magnetar.broker.policies.registry import NAMESPACE, POLICIES, TOPIC
from magnetar.cli.main import app


def _commands(*path: str) -> set[str]:
    group = typer.main.get_command(app)
    for name in path:
        group = group.commands[name]  # type: ignore[attr-defined]
    return set(group.commands)  # type: ignore[attr-defined]


def test_every_registry_entry_with_a_cli_stem_has_its_commands() -> None:
    for scope, group in ((NAMESPACE, "namespaces"), (TOPIC, "topics")):
        commands = _commands("admin", group)
        for policy in POLICIES:
            where = policy.scope(scope)
            if where is None or where.cli is None:
                continue
            for verb in where.commands:
                assert f"{verb}-{where.cli}" in commands, (scope, policy.name, verb)


def test_pulsar_admin_policy_verbs_are_all_there() -> None:
    namespaces = _commands("admin", "namespaces")
    assert {"set-message-ttl", "get-message-ttl", "remove-message-ttl", "set-auto-topic-creation",
            "get-backlog-quotas", "set-backlog-quota", "remove-backlog-quota",
            "get-schema-compatibility-strategy", "set-schema-compatibility-strategy"} <= namespaces
    assert "remove-schema-compatibility-strategy" not in namespaces
    topics = _commands("admin", "topics")
    assert {"set-retention", "get-retention", "remove-retention", "set-max-producers", "get-deduplication"} <= topics
