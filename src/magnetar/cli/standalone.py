"""``magnetar standalone``: a broker with its admin HTTP API until SIGTERM or Ctrl-C.

This module runs the broker and owns the command's one flag parser (:func:`parser`, the standard
library's argparse: its help, its errors). :func:`magnetar.cli.main.main` hands ``magnetar standalone
...`` straight to :func:`main`, so Typer (and the pydantic it builds its parameters with) never loads
on a broker's start-up, nor argparse for a command line of known ``--option value`` pairs alone
(:func:`plain_flags`, the same settings); the whole Typer command (:mod:`magnetar.cli.standalone_command`, for
``magnetar --help`` and ``CliRunner``) passes its arguments on to the same parser.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from magnetar.admin.standalone import StandaloneServer
from magnetar.broker.config import BrokerConfig, ConfigError
from magnetar.broker.security.errors import SecurityConfigError
from magnetar.storage.data_format import DataFormatError
from magnetar.storage.dir_lock import DataDirLockedError

if TYPE_CHECKING:
    import argparse

log = logging.getLogger("magnetar.broker")

#: option -> (setting of BrokerConfig.load, type, placeholder, help)
OPTIONS: dict[str, tuple[str, type, str, str]] = {
    "--data-dir": ("data_dir", Path, "<path>", "Where data is stored [default: ./data]"),
    "--port": ("port", int, "<int>", "Binary protocol port [default: 6650]"),
    "--http-port": ("http_port", int, "<int>", "HTTP port [default: 8080]"),
    "--bind": ("bind", str, "<str>", "Address to bind [default: 127.0.0.1]"),
    "--config": ("config", Path, "<path>", "Broker settings: TOML, or Pulsar's broker.conf / standalone.conf"),
    "--tls-port": ("broker_service_port_tls", int, "<int>", "pulsar+ssl:// port (brokerServicePortTls)"),
    "--https-port": ("web_service_port_tls", int, "<int>", "HTTPS port (webServicePortTls)"),
    "--fsync": ("fsync", str, "<str>", "'always' (default) or 'never'"),
    "--log-level": ("log_level", str, "<str>", "DEBUG, INFO, WARNING [default: INFO]"),
}
SUMMARY = "Run a standalone broker with local storage until SIGTERM or Ctrl-C."


def parser() -> argparse.ArgumentParser:
    """The flags of ``magnetar standalone``; each one given becomes a setting of :meth:`BrokerConfig.load`."""
    # argparse (with gettext) for a command line :func:`plain_flags` does not read alone: 3-4 ms of every
    # broker's start otherwise (python -X importtime, its import and this parser's build)
    import argparse

    flags = argparse.ArgumentParser(prog="magnetar standalone", description=SUMMARY, allow_abbrev=False,
                                    argument_default=argparse.SUPPRESS, add_help=False)
    for option, (name, kind, placeholder, text) in OPTIONS.items():
        flags.add_argument(option, dest=name, type=kind, metavar=placeholder, help=text)
    flags.add_argument("--help", action="help", help="Show this message and exit.")
    return flags


def plain_flags(args: list[str]) -> dict[str, object] | None:
    """The settings of a command line made of ``--option value`` pairs alone, each option one of
    :data:`OPTIONS` and each value of its type and not starting with ``-`` (as the testing kit and most
    scripts start a broker), exactly as :func:`parser` reads it; None for any other command line."""
    if len(args) % 2:
        return None
    settings: dict[str, object] = {}
    for option, value in zip(args[::2], args[1::2], strict=True):
        known = OPTIONS.get(option)
        if known is None or value.startswith("-"):
            return None
        try:
            settings[known[0]] = known[1](value)
        except ValueError:
            return None
    return settings


def parse_flags(args: list[str]) -> dict[str, object]:
    """The settings the command line gives (SystemExit 2 with a usage error for a bad one, 0 after --help)."""
    plain = plain_flags(args)
    return plain if plain is not None else vars(parser().parse_args(args))


def main(args: list[str]) -> int:
    """``magnetar standalone ARGS``: parse, run the broker until a signal; the exit status."""
    return start_standalone(parse_flags(args))


#: the environment variable naming a pipe's write end the broker writes one byte to once its ports accept
#: connections, then closes (magnetar.testing's brokers wait on it instead of polling the port)
READY_FD_ENV = "MAGNETAR_READY_FD"
#: seconds from "ready" to the collection and freeze of start-up's objects (the cyclic collector stays
#: off until then, as during start-up)
GC_FREEZE_DELAY = 1.0


def freeze_start_up() -> None:
    """Collect start-up's garbage, freeze what is left out of the collector's generations, turn it on
    (:mod:`magnetar.cli.main` turns it off for the start-up)."""
    gc.collect()
    gc.freeze()
    gc.enable()


# The collector's thresholds stay Python's (700, 10, 10). With the admin groups frozen, a full collection in
# benchmarks/loop_isolation.py's loaded phase walks ~2,900 objects for 4.6-5.9 ms of the loop's CPU
# (before: 25-37 ms over 33-39k); young ones hold it 1-4 ms. A gen-2 threshold of 100 took that one
# collection out of the phase (PROFILES.md section 44): at 1 send a ms that pause delays ~5 sends, fewer than
# the 10 a p99.9 of 10,000 counts, so not worth leaving cyclic garbage ten times longer (the broker's RSS
# over a 60 s produce / consume loop: 65.4 -> 66.0 MB with the defaults).
def freeze_built() -> None:
    """Collect, then freeze what is left out of the collector's generations: an admin route group just
    built (its FastAPI routes, pydantic validators and serializers: thousands of long-lived objects, made
    after start-up's freeze), so that the full collections traffic causes do not walk them again and
    again. Runs once per group (11 at most), so whatever a request or a connection had alive at that
    moment and later drops in a cycle stays uncollected: a bounded, one-off amount, never per request."""
    gc.collect()
    gc.freeze()


def freeze_admin_builds(server: StandaloneServer) -> None:
    """Take the admin app's objects out of the collector's generations as they are built: the app's core
    with the first HTTP connection, each group of routes at the first request under its paths (both
    after start-up's freeze, so a full collection would walk them every time otherwise)."""
    server.on_http_serving = gc.freeze
    server.on_routes_built = freeze_built


def signal_ready() -> None:
    """Tell the process that started this broker that its ports accept connections: one byte on the pipe of
    ``MAGNETAR_READY_FD``, when it is set (and valid)."""
    value = os.environ.pop(READY_FD_ENV, None)
    if value is None:
        return
    try:
        fd = int(value)
    except ValueError:
        log.warning("%s=%r is not a file descriptor: not signalled", READY_FD_ENV, value)
        return
    try:
        os.write(fd, b"1")
        os.close(fd)
    except OSError as exc:
        log.warning("%s=%s: not signalled: %s", READY_FD_ENV, value, exc.strerror)


async def run_standalone(config: BrokerConfig) -> None:
    """Run a broker and its HTTP server until SIGTERM or SIGINT, then shut both down cleanly."""
    started = time.perf_counter()
    if config.ignored_settings:
        log.info("ignoring settings magnetar does not implement: %s", ", ".join(config.ignored_settings))
    # a SIGTERM during start-up (the binary port answers before the HTTP app is built) stops the
    # broker cleanly once it has started, instead of killing it half-way
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    server = StandaloneServer(config)
    freeze_admin_builds(server)
    await server.start()
    signal_ready()
    http = server.http_listening
    listeners = [f"pulsar://{config.bind}:{server.port}" if server.port is not None else "",
                 f"pulsar+ssl://{config.bind}:{server.tls_port}" if server.tls_port is not None else "",
                 f"http://{config.bind}:{server.http_port}" if http and config.http_port else "",
                 f"https://{config.bind}:{server.https_port}" if http and config.https_port is not None else ""]
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
    # start-up's objects (modules) leave the collector's generations, so the collections traffic causes
    # walk only what traffic allocates: shorter pauses in the tail. Not at once: that collection holds
    # the loop 40-60 ms (26,700 objects, load 4), when the first clients connect (a test run's first test)
    loop.call_later(GC_FREEZE_DELAY, freeze_start_up)
    await stop.wait()
    log.info("shutting down")
    await server.stop()
    log.info("stopped")


def raise_open_files_limit(cap: int = 1 << 20) -> int:
    """Raise this process's soft limit of open files to its hard limit (at most ``cap``); the new limit.

    Every loaded topic holds its open segment file: a soft limit of 1,024, common by default, would
    refuse the thousand-and-first topic, where the hard limit allows far more.
    """
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = cap if hard == resource.RLIM_INFINITY else min(hard, cap)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            return target
        except (ValueError, OSError):
            return soft
    return soft


#: the broker process's switch interval (Python's default: 5 ms), the longest a thread waits for the GIL
#: while another runs Python: the commit thread after each write and fdatasync and the read thread after
#: each pread wait that long while the loop dispatches a catch-up, several times in a publish's round trip.
#: 0.1 ms (benchmarks/README.md "Ninth session"): loop_isolation.py's loaded publish p99.9 median 14.3 ms
#: at 1 ms, 8.5 at 0.25 ms, 7.6 at 0.1 ms (alone 4-8 ms); the broker's CPU per million messages
#: (cost_ab.py, magnetar.client, 12 rounds each) median 0.98 s at 1 ms against 1.02 s at 0.1 ms (+4%,
#: rounds 0.92-1.14), produce and consume rates within 4%
SWITCH_INTERVAL_SECONDS = 0.0001


def start_standalone(flags: dict[str, object]) -> int:
    """Load the settings (flags over the ``config`` file), run the broker until a signal; the exit status."""
    flags = dict(flags)
    config_path = flags.pop("config", None)
    try:
        cfg = BrokerConfig.load(flags, config_path)  # type: ignore[arg-type]
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    logging.basicConfig(
        level=cfg.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    raise_open_files_limit()
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    try:
        import uvloop

        runner = uvloop.run
    except ImportError:  # pragma: no cover - uvloop is absent on some platforms
        runner = asyncio.run
    try:
        runner(run_standalone(cfg))
    except (SecurityConfigError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except (DataDirLockedError, DataFormatError) as exc:
        print(f"error: cannot start broker: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: cannot start broker: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0
