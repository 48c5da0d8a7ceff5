"""``magnetar standalone`` in the whole Typer command (``magnetar --help``, ``CliRunner``): it hands its
arguments, ``--help`` included, to the command's one flag parser in :mod:`magnetar.cli.standalone`."""

from __future__ import annotations

import typer

from magnetar.cli.standalone import main as standalone_main


def standalone(context: typer.Context) -> None:
    """Run a standalone broker with local storage until SIGTERM or Ctrl-C."""
    status = standalone_main(list(context.args))
    if status:
        raise typer.Exit(status)


#: Typer parses nothing: every argument goes to the flag parser as it is
standalone.context_settings = {  # type: ignore[attr-defined]
    "ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": [],
}
