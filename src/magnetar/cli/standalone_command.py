"""The Typer command ``magnetar standalone`` (help, option parsing and errors); the broker runs in
:mod:`magnetar.cli.standalone`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from magnetar.cli.standalone import start_standalone


def standalone(
    data_dir: Annotated[Path | None, typer.Option("--data-dir", help="Where data is stored [default: ./data]")] = None,
    port: Annotated[int | None, typer.Option("--port", help="Binary protocol port [default: 6650]")] = None,
    http_port: Annotated[int | None, typer.Option("--http-port", help="HTTP port [default: 8080]")] = None,
    bind: Annotated[str | None, typer.Option("--bind", help="Address to bind [default: 127.0.0.1]")] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="Broker settings: TOML, or Pulsar's broker.conf / standalone.conf")
    ] = None,
    tls_port: Annotated[int | None, typer.Option("--tls-port", help="pulsar+ssl:// port (brokerServicePortTls)")] = None,
    https_port: Annotated[int | None, typer.Option("--https-port", help="HTTPS port (webServicePortTls)")] = None,
    fsync: Annotated[str | None, typer.Option("--fsync", help="'always' (default) or 'never'")] = None,
    log_level: Annotated[str | None, typer.Option("--log-level", help="DEBUG, INFO, WARNING [default: INFO]")] = None,
) -> None:
    """Run a standalone broker with local storage until SIGTERM or Ctrl-C."""
    flags = {
        "data_dir": data_dir,
        "port": port,
        "http_port": http_port,
        "bind": bind,
        "config": config,
        "fsync": fsync,
        "log_level": log_level,
        "broker_service_port_tls": tls_port,
        "web_service_port_tls": https_port,
    }
    status = start_standalone(flags)
    if status:
        raise typer.Exit(status)
