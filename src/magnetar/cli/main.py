"""The ``magnetar`` command."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="magnetar",
    help="magnetar: a light messaging broker with Apache Pulsar's model and wire protocol.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


from magnetar.cli.admin import admin_app  # noqa: E402 - sub-commands are registered after `app` exists
from magnetar.cli.messaging import consume, produce  # noqa: E402
from magnetar.cli.perf import perf_app  # noqa: E402
from magnetar.cli.repair import repair  # noqa: E402
from magnetar.cli.standalone import standalone  # noqa: E402
from magnetar.cli.tokens import tokens_app  # noqa: E402

app.add_typer(admin_app, name="admin")
app.add_typer(perf_app, name="perf")
app.add_typer(tokens_app, name="tokens")
app.command()(produce)
app.command()(consume)
app.command("sql")(__import__("magnetar.cli.sql", fromlist=["sql"]).sql)
app.command()(standalone)
app.command()(repair)


@app.callback()
def _root() -> None:
    """magnetar: a light messaging broker with Apache Pulsar's model and wire protocol."""


def main() -> None:
    """Entry point of the ``magnetar`` console script."""
    app()


if __name__ == "__main__":
    main()
