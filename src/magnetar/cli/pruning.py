"""Build only the part of the command tree a command line names.

Typer turns every registered command into a click command, with a pydantic validator per
parameter, before it parses anything: ``magnetar admin tenants list`` would pay for the hundred
other admin commands. :func:`only_named` hides, for one call, the groups and commands the command
line does not name, level by level, and stops where a name matches nothing (a typo, a positional
argument, an option), so help and errors stay those of the whole level.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typer


def leading_names(args: list[str]) -> list[str]:
    """The words of ``args`` before the first option: the path to a command (and its arguments)."""
    names: list[str] = []
    for arg in args:
        if arg.startswith("-"):
            break
        names.append(arg)
    return names


@contextmanager
def only_named(app: typer.Typer, names: list[str]) -> Iterator[None]:
    """Within the block, each level of ``app`` along ``names`` registers only the named group or
    command; the registrations are restored afterwards."""
    saved = []
    node = app
    try:
        for name in names:
            groups = [g for g in node.registered_groups if g.name == name]
            commands = [
                c for c in node.registered_commands
                if (c.name or getattr(c.callback, "__name__", "").lower().replace("_", "-")) == name
            ]
            if not groups and not commands:
                break
            saved.append((node, node.registered_groups, node.registered_commands))
            node.registered_groups, node.registered_commands = groups, commands
            if not groups or groups[0].typer_instance is None:
                break
            node = groups[0].typer_instance
        yield
    finally:
        for level, groups, commands in reversed(saved):
            level.registered_groups, level.registered_commands = groups, commands
