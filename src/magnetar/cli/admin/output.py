"""How ``magnetar admin`` prints: tables of pulsar-admin's words, ``(none)`` for nothing, pretty
JSON for nested documents, and one line saying what a command that changed something did.

Only :func:`print_table` needs rich, and imports it when it runs: a list or a plain value is
printed without it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

NONE = "(none)"

#: the first word of a command that changes something, as the line saying it was done starts
_PAST = {
    "create": "Created", "delete": "Deleted", "update": "Updated", "set": "Set", "remove": "Removed",
    "grant": "Granted", "revoke": "Revoked", "unload": "Unloaded", "skip": "Skipped", "clear": "Cleared",
    "reset": "Reset", "expire": "Expired", "terminate": "Terminated", "unsubscribe": "Unsubscribed",
    "compact": "Requested compaction of", "split": "Split", "truncate": "Truncated",
}
#: the command group -> the thing its first argument names
_NOUN = {"tenants": "tenant", "namespaces": "namespace", "topics": "topic", "clusters": "cluster"}
#: commands whose sentence the general rule would not say well ({name}: the command's parameters)
_SENTENCES = {
    ("topics", "create-partitioned-topic"): "Created partitioned topic {topic} with {partitions} partitions",
    ("topics", "update-partitioned-topic"): "Updated partitioned topic {topic} to {partitions} partitions",
    ("topics", "delete-partitioned-topic"): "Deleted partitioned topic {topic}",
    ("topics", "create-subscription"): "Created subscription {subscription} on {topic}",
    ("topics", "unsubscribe"): "Deleted subscription {subscription} of {topic}",
    ("topics", "skip"): "Skipped {count} messages of subscription {subscription} on {topic}",
    ("topics", "clear-backlog"): "Cleared the backlog of subscription {subscription} on {topic}",
    ("topics", "expire-messages"): "Expired messages older than {expire_time} of subscription {subscription} on {topic}",
    ("topics", "expire-messages-all-subscriptions"): "Expired messages older than {expire_time} of every subscription on {topic}",
    ("topics", "reset-cursor"): "Reset subscription {subscription} of {topic}",
    ("topics", "grant-permission"): "Granted {actions} on topic {topic} to {role}",
    ("topics", "revoke-permission"): "Revoked the permissions of {role} on topic {topic}",
    ("namespaces", "grant-permission"): "Granted {actions} on namespace {namespace} to {role}",
    ("namespaces", "revoke-permission"): "Revoked the permissions of {role} on namespace {namespace}",
    ("namespaces", "grant-subscription-permission"): "Granted subscription {subscription} of namespace {namespace} to {roles}",
    ("namespaces", "revoke-subscription-permission"): "Revoked subscription {subscription} of namespace {namespace} from {role}",
}


def cell(value: Any) -> str:
    """A value as a table cell, in the words pulsar-admin's JSON uses (true, false, null)."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def is_document(data: Mapping[str, Any]) -> bool:
    """Whether an object nests objects (internal stats, policies): printed as indented JSON, which
    reads better than folded JSON in table cells."""
    return any(isinstance(v, dict) and v or isinstance(v, list) and any(isinstance(i, dict) for i in v) for v in data.values())


def print_value(data: Any, title: str | None = None) -> None:
    """Print an answer for a person: lists one item a line (``(none)`` when empty), objects as a
    key / value table (nested ones as indented JSON), plain values as they are."""
    if isinstance(data, list) and not title:
        print("\n".join(cell(item) for item in data) if data else NONE)
    elif isinstance(data, list):
        print_table(title, [title], [[cell(item)] for item in data])
    elif isinstance(data, dict) and not data:
        print(NONE)
    elif isinstance(data, dict) and is_document(data):
        print(json.dumps(data, indent=2))
    elif isinstance(data, dict):
        print_table(title, ["key", "value"], [[str(k), cell(v)] for k, v in data.items()])
    else:
        print(cell(data) if isinstance(data, bool) or data is None else data)


def new_table(**options: Any) -> Any:
    """A rich ``Table(**options)``, rich being imported by the first command that draws one."""
    from rich.table import Table

    return Table(**options)


def print_table(title: str | None, columns: list[str], rows: list[list[str]]) -> None:
    """A rich table (``(none)`` in it when there are no rows), as wide as the terminal allows."""
    from rich.console import Console

    table = new_table(title=title)
    for i, column in enumerate(columns):
        table.add_column(column, style="bold" if i == 0 and len(columns) > 1 else None, overflow="fold")
    for row in rows or [[NONE, *[""] * (len(columns) - 1)]]:
        table.add_row(*row)
    Console(soft_wrap=False, file=sys.stdout).print(table)


def done_message(group: str, command: str, params: Mapping[str, Any]) -> str:
    """The line a command that changed something prints: ``Created tenant acme``."""
    sentence = _SENTENCES.get((group, command))
    if sentence is not None:
        try:
            return sentence.format(**{k: _word(v) for k, v in params.items()})
        except (KeyError, IndexError):
            pass  # a parameter renamed since: the general rule below
    verb, _, rest = command.partition("-")
    noun = _NOUN.get(group, group.rstrip("s"))
    target = next((_word(v) for k, v in params.items() if k in ("tenant", "namespace", "topic", "cluster")), "")
    past = _PAST.get(verb)
    if past is None:
        return f"Done: {group} {command} {target}".rstrip()
    if rest:
        return f"{past} {rest.replace('-', ' ')} of {noun} {target}".rstrip()
    return f"{past} {noun} {target}".rstrip()


def _word(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)
