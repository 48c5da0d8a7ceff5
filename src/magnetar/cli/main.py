"""The ``magnetar`` command.

Each sub-command lives in its own module, and :func:`main` imports only the one named on the
command line: ``magnetar standalone`` never loads the admin CLI, the client or the policy registry,
and a plain ``magnetar standalone --option value ...`` does not even load Typer.
Without a known sub-command (``--help``, completion, a typo) every sub-command is registered, so the
help and the errors are the ones of the whole command. Of the sub-command, only the groups and
commands the command line names are built (:mod:`magnetar.cli.pruning`). ``app`` (the whole command, for tests and
``CliRunner``) is built on first access.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typer

#: sub-command name -> (module, attribute, whether it is a Typer group), in --help order
SUBCOMMANDS: dict[str, tuple[str, str, bool]] = {
    "admin": ("magnetar.cli.admin", "admin_app", True),
    "perf": ("magnetar.cli.perf", "perf_app", True),
    "tokens": ("magnetar.cli.tokens", "tokens_app", True),
    "produce": ("magnetar.cli.messaging", "produce", False),
    "consume": ("magnetar.cli.messaging", "consume", False),
    "sql": ("magnetar.cli.sql", "sql", False),
    "standalone": ("magnetar.cli.standalone_command", "standalone", False),
    "repair": ("magnetar.cli.repair", "repair", False),
    "backup": ("magnetar.cli.backup", "backup", False),
    "version": ("magnetar.cli.version", "version", False),
}
HELP = "magnetar: a light messaging broker with Apache Pulsar's model and wire protocol."


def _print_version(value: bool) -> None:
    if value:
        from magnetar.cli.version import version

        version()
        sys.exit(0)


def build_app(names: list[str] | None = None, given: dict[str, typer.Typer] | None = None) -> typer.Typer:
    """The ``magnetar`` command with the named sub-commands (all of them when ``names`` is None);
    ``given``: sub-commands already built (name -> Typer), used instead of importing them."""
    import typer

    def root(
        show_version: bool = typer.Option(
            False, "--version", is_eager=True, callback=_print_version, help="Print the version and exit"
        ),
    ) -> None:
        """magnetar: a light messaging broker with Apache Pulsar's model and wire protocol."""

    command = typer.Typer(name="magnetar", help=HELP, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None)
    command.callback()(root)
    for name, (module_name, attribute, is_group) in SUBCOMMANDS.items():
        if names is not None and name not in names:
            continue
        target = (given or {}).get(name) or getattr(importlib.import_module(module_name), attribute)
        if is_group:
            command.add_typer(target, name=name)
        else:
            command.command(name)(target)
    return command


def __getattr__(name: str) -> typer.Typer:
    if name == "app":
        whole = build_app()
        globals()["app"] = whole
        return whole
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Entry point of the ``magnetar`` console script."""
    chosen = sys.argv[1] if len(sys.argv) > 1 else None
    if chosen in ("--version", "version") and len(sys.argv) == 2:
        from magnetar.cli.version import version

        version()
        return
    if chosen == "standalone":
        # a broker's start-up: a plain command line skips Typer (and the pydantic it loads)
        from magnetar.cli.standalone import parse_flags, start_standalone

        flags = parse_flags(sys.argv[2:])
        if flags is not None:
            sys.exit(start_standalone(flags))
    if chosen not in SUBCOMMANDS:
        build_app()(prog_name="magnetar")
        return
    from magnetar.cli.pruning import leading_names, only_named

    rest = sys.argv[2:]
    given = {}
    if chosen == "admin":  # its own options may come first: ``admin --json topics list``
        from magnetar.cli.admin import app_for
        from magnetar.cli.admin.context import split_global_options

        rest = split_global_options(rest)[1]
        given["admin"] = app_for(rest[0] if rest else None)  # only the modules of the group named
    app = build_app([chosen], given)
    with only_named(app, [chosen, *leading_names(rest)]):
        app(prog_name="magnetar")


if __name__ == "__main__":
    main()
