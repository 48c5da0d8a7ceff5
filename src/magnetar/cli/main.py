"""The ``magnetar`` command.

Each sub-command lives in its own module, and :func:`main` imports only the one named on the
command line: ``magnetar standalone`` never loads the admin CLI, the client or the policy registry,
nor Typer (its one flag parser is :mod:`magnetar.cli.standalone`'s). The root's own help, a typo and
a bare ``magnetar`` list the sub-commands by their :data:`SUMMARIES` and import none of them (an
import of every sub-command costs 0.4-0.6 s CPU); shell completion builds the whole command. Of the
sub-command, only the groups and commands the command line names are built
(:mod:`magnetar.cli.pruning`). ``app`` (the whole command, for tests and ``CliRunner``) is built on
first access.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from typing import TYPE_CHECKING

from magnetar.cli.pruning import leading_names, only_named
from magnetar.cli.version import version

if TYPE_CHECKING:
    import typer

#: sub-command name -> (module, attribute, whether it is a Typer group), in --help order; a group's
#: attribute is a Typer, or a function of the group's first word returning one (the admin command)
SUBCOMMANDS: dict[str, tuple[str, str, bool]] = {
    "admin": ("magnetar.cli.admin", "app_for", True),
    "perf": ("magnetar.cli.perf.commands", "perf_app", True),
    "tokens": ("magnetar.cli.tokens", "tokens_app", True),
    "produce": ("magnetar.cli.messaging", "produce", False),
    "consume": ("magnetar.cli.messaging", "consume", False),
    "sql": ("magnetar.cli.sql", "sql", False),
    "standalone": ("magnetar.cli.standalone_command", "standalone", False),
    "repair": ("magnetar.cli.repair", "repair", False),
    "backup": ("magnetar.cli.backup", "backup", False),
    "version": ("magnetar.cli.version", "version", False),
}
#: what the root's help says of each sub-command: its own help text (tests/cli/test_main_dispatch.py
#: checks that they are the same)
SUMMARIES: dict[str, str] = {
    "admin": "Administer a broker over its REST API, like pulsar-admin.",
    "perf": "Load generators in the manner of pulsar-perf: produce, consume, end-to-end; rates and latency "
            "percentiles.",
    "tokens": "Create and inspect JWT authentication tokens and their keys (as `pulsar tokens`).",
    "produce": "Produce messages to a topic and print their ids.",
    "consume": "Consume messages, printing each with its id, key and properties, and acknowledge them.",
    "sql": "Run Spark SQL over topics (batch reads) and print the result.",
    "standalone": "Run a standalone broker with local storage until SIGTERM or Ctrl-C.",
    "repair": "Check a data directory, repair what can be repaired, report what was lost.",
    "backup": "Copy a data directory consistently, even while its broker runs; restore by starting a broker on "
              "the copy.",
    "version": "Print magnetar's version.",
}
HELP = "magnetar: a light messaging broker with Apache Pulsar's model and wire protocol."
#: the environment variable of Click's shell completion for the ``magnetar`` program
COMPLETION_ENV = "_MAGNETAR_COMPLETE"


def _print_version(value: bool) -> None:
    if value:
        version()
        sys.exit(0)


def _sub_command(name: str, given: dict[str, typer.Typer]) -> typer.Typer | object:
    """The Typer group or command function of sub-command ``name`` (importing its module)."""
    if name in given:
        return given[name]
    import typer

    module_name, attribute, is_group = SUBCOMMANDS[name]
    target = getattr(importlib.import_module(module_name), attribute)
    return target(None) if is_group and not isinstance(target, typer.Typer) else target


def _summary_only(name: str) -> typer.Typer | object:
    """A stand-in for sub-command ``name`` with its help text and nothing else (for the root's help)."""
    import typer

    if SUBCOMMANDS[name][2]:
        return typer.Typer(help=SUMMARIES[name])

    def stand_in() -> None:  # pragma: no cover - never run: a named sub-command is always the real one
        raise AssertionError(name)

    stand_in.__doc__ = SUMMARIES[name]
    return stand_in


def build_app(names: list[str] | None = None, given: dict[str, typer.Typer] | None = None,
              summaries_only: bool = False) -> typer.Typer:
    """The ``magnetar`` command with the named sub-commands (all of them when ``names`` is None);
    ``given``: sub-commands already built (name -> Typer), used instead of importing them;
    ``summaries_only``: every sub-command a stand-in with its help text (the root's help and errors)."""
    # Typer, imported by the commands that need it (not by --version or standalone): 80-160 ms CPU
    import typer

    def root(
        show_version: bool = typer.Option(
            False, "--version", is_eager=True, callback=_print_version, help="Print the version and exit"
        ),
    ) -> None:
        """magnetar: a light messaging broker with Apache Pulsar's model and wire protocol."""

    command = typer.Typer(name="magnetar", help=HELP, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None)
    command.callback()(root)
    for name, (_module, _attribute, is_group) in SUBCOMMANDS.items():
        if names is not None and name not in names:
            continue
        target = _summary_only(name) if summaries_only else _sub_command(name, given or {})
        if is_group:
            command.add_typer(target, name=name)  # type: ignore[arg-type]
        else:
            settings = getattr(target, "context_settings", None)  # standalone: its arguments as they are
            command.command(name, context_settings=settings)(target)  # type: ignore[arg-type]
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
        version()
        return
    if chosen == "standalone":
        # no cyclic collection while the broker's modules load and it starts: the collector's passes over
        # the growing heap cost 5% of the start's CPU (23 of 425 ms, load 9); run_standalone collects once
        # and turns it on again when the broker serves
        gc.disable()
        # the broker's start-up: its one flag parser, no Typer; the broker's modules 150-200 ms CPU
        from magnetar.cli.standalone import main as standalone_main

        sys.exit(standalone_main(sys.argv[2:]))
    if chosen == "admin" or chosen not in SUBCOMMANDS:
        # One answer and out (an admin request, the root's help): the cyclic collector off for the call,
        # and what it built frozen out of the collection at exit. Typer's imports allocate enough to run
        # it dozens of times: 40-60 ms CPU of a 0.25 s call (benchmarks/cli_latency.py). Long-running
        # commands (consume, perf) keep it.
        gc.disable()
    try:
        _run(chosen)
    finally:
        if not gc.isenabled():
            gc.freeze()


def _run(chosen: str | None) -> None:
    """Build and run the command line's sub-command (the root's help or completion when it names none)."""
    if chosen not in SUBCOMMANDS:  # the root's help, a typo, or completion
        build_app(summaries_only=COMPLETION_ENV not in os.environ)(prog_name="magnetar")
        return
    rest = sys.argv[2:]
    given = {}
    if chosen == "admin":  # its own options may come first: ``admin --json topics list``
        # the admin command (Typer, a socket) is imported by admin commands only: 100-150 ms CPU
        from magnetar.cli.admin import app_for
        from magnetar.cli.admin.context import split_global_options

        rest = split_global_options(rest)[1]
        given["admin"] = app_for(rest[0] if rest else None)  # only the modules of the group named
    app = build_app([chosen], given)
    with only_named(app, [chosen, *leading_names(rest)]):
        app(prog_name="magnetar")


if __name__ == "__main__":
    main()
