"""The ``magnetar`` command."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    name="magnetar",
    help="magnetar: a light messaging broker with Apache Pulsar's model and wire protocol.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


from magnetar.cli.admin import admin_app  # noqa: E402 - sub-commands are registered after `app` exists
from magnetar.cli.messaging import consume, perf_app, produce  # noqa: E402

app.add_typer(admin_app, name="admin")
app.add_typer(perf_app, name="perf")
app.command()(produce)
app.command()(consume)
app.command("sql")(__import__("magnetar.cli.sql", fromlist=["sql"]).sql)


@app.callback()
def _root() -> None:
    """magnetar: a light messaging broker with Apache Pulsar's model and wire protocol."""


@app.command()
def standalone(
    data_dir: Annotated[Path | None, typer.Option("--data-dir", help="Where data is stored [default: ./data]")] = None,
    port: Annotated[int | None, typer.Option("--port", help="Binary protocol port [default: 6650]")] = None,
    http_port: Annotated[int | None, typer.Option("--http-port", help="HTTP port [default: 8080]")] = None,
    bind: Annotated[str | None, typer.Option("--bind", help="Address to bind [default: 127.0.0.1]")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="TOML file with broker settings")] = None,
    fsync: Annotated[str | None, typer.Option("--fsync", help="'always' (default) or 'never'")] = None,
    log_level: Annotated[str | None, typer.Option("--log-level", help="DEBUG, INFO, WARNING [default: INFO]")] = None,
) -> None:
    """Run a standalone broker with local storage until SIGTERM or Ctrl-C."""
    from magnetar.broker.config import BrokerConfig, ConfigError

    flags = {
        "data_dir": data_dir,
        "port": port,
        "http_port": http_port,
        "bind": bind,
        "fsync": fsync,
        "log_level": log_level,
    }
    try:
        cfg = BrokerConfig.load(flags, config)
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    logging.basicConfig(
        level=cfg.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    from magnetar.broker.server import run_standalone

    try:
        import uvloop

        runner = uvloop.run
    except ImportError:  # pragma: no cover - uvloop is absent on some platforms
        runner = asyncio.run
    try:
        runner(run_standalone(cfg))
    except OSError as exc:
        typer.echo(f"error: cannot start broker: {exc.strerror or exc}", err=True)
        raise typer.Exit(1) from None


def main() -> None:
    """Entry point of the ``magnetar`` console script."""
    app()


if __name__ == "__main__":
    main()
