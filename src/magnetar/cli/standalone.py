"""``magnetar standalone``: a broker with its admin HTTP API until SIGTERM or Ctrl-C."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from magnetar.broker.config import BrokerConfig, ConfigError
from magnetar.broker.security import SecurityConfigError

log = logging.getLogger("magnetar.broker")


async def run_standalone(config: BrokerConfig) -> None:
    """Run a broker and its HTTP server until SIGTERM or SIGINT, then shut both down cleanly."""
    from magnetar.admin.standalone import StandaloneServer

    started = time.perf_counter()
    if config.ignored_settings:
        log.info("ignoring settings magnetar does not implement: %s", ", ".join(config.ignored_settings))
    server = StandaloneServer(config)
    await server.start()
    listeners = [f"pulsar://{config.bind}:{server.port}" if server.port is not None else "",
                 f"pulsar+ssl://{config.bind}:{server.tls_port}" if server.tls_port is not None else "",
                 f"http://{config.bind}:{server.http_port}" if server.http else "",
                 f"https://{config.bind}:{server.https_port}" if server.https else ""]
    security = config.security
    log.info(
        "magnetar standalone ready in %.0f ms: %s, data in %s, fsync %s, authentication %s, authorization %s",
        (time.perf_counter() - started) * 1000,
        ", ".join(url for url in listeners if url),
        config.data_dir,
        config.fsync,
        ", ".join(security.provider_methods) if security.authentication_enabled else "off",
        "on" if security.authorization_enabled else "off",
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("shutting down")
    await server.stop()
    log.info("stopped")


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
        "fsync": fsync,
        "log_level": log_level,
        "broker_service_port_tls": tls_port,
        "web_service_port_tls": https_port,
    }
    try:
        cfg = BrokerConfig.load(flags, config)
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    logging.basicConfig(
        level=cfg.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        import uvloop

        runner = uvloop.run
    except ImportError:  # pragma: no cover - uvloop is absent on some platforms
        runner = asyncio.run
    try:
        runner(run_standalone(cfg))
    except (SecurityConfigError, ConfigError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    except OSError as exc:
        typer.echo(f"error: cannot start broker: {exc.strerror or exc}", err=True)
        raise typer.Exit(1) from None
