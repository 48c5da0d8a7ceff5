"""``magnetar produce`` and ``magnetar consume``: messaging from the shell (``magnetar perf`` is
in :mod:`magnetar.cli.perf`).

They use magnetar's own client, so they work against magnetar and any Pulsar broker. The broker,
credentials and TLS settings come from ``--client-conf`` / $PULSAR_CLIENT_CONF (Pulsar's client.conf)
and pulsar-client's flags (:mod:`magnetar.cli.client_conf`). Errors print one line saying what was
wrong and exit non-zero.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from magnetar.cli.client_conf import (
    AuthParamsOpt,
    AuthPluginOpt,
    ClientConfError,
    ClientConfOpt,
    TlsHostnameOpt,
    TlsInsecureOpt,
    TlsTrustOpt,
    load_client_conf,
)
from magnetar.protocol.enums import InitialPosition, SubType

DEFAULT_URL = "pulsar://localhost:6650"

ServiceUrl = Annotated[
    str | None,
    typer.Option("--service-url", "-u",
                 help=f"Broker URL, pulsar:// or pulsar+ssl:// (default: brokerServiceUrl of the client.conf, else {DEFAULT_URL})"),
]


@dataclass
class Connection:
    """Where and how a tool connects: the service URL and the client's keyword arguments."""

    service_url: str
    options: dict[str, Any]

    @classmethod
    def resolve(
        cls,
        service_url: str | None,
        client_conf: Any = None,
        auth_plugin: str | None = None,
        auth_params: str | None = None,
        tls_trust_cert_path: str | None = None,
        tls_allow_insecure: bool | None = None,
        tls_enable_hostname_verification: bool | None = None,
    ) -> Connection:
        """The flags over the client.conf over the defaults; a bad setting ends the command."""
        try:
            conf = load_client_conf(
                client_conf, auth_plugin=auth_plugin, auth_params=auth_params,
                tls_trust_cert_path=tls_trust_cert_path, tls_allow_insecure=tls_allow_insecure,
                tls_enable_hostname_verification=tls_enable_hostname_verification,
            )
            options = conf.native_client_options()
        except (ClientConfError, OSError) as exc:
            raise _fail(str(exc)) from None
        return cls(service_url or conf.broker_service_url or DEFAULT_URL, options)


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(1)


def _run(coro) -> None:  # noqa: ANN001 - any coroutine
    # the client, with the command's run, not for its --help: 200-270 ms CPU (python -X importtime)
    from magnetar.client.exceptions import PulsarError

    try:
        try:
            import uvloop

            uvloop.run(coro)
        except ImportError:  # pragma: no cover
            asyncio.run(coro)
    except PulsarError as exc:
        raise _fail(f"{type(exc).__name__}: {exc}") from None
    except ValueError as exc:  # invalid names and options the client rejects before any I/O
        raise _fail(str(exc)) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def _properties(items: list[str]) -> dict[str, str]:
    props = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise _fail(f"property {item!r} is not key=value")
        props[key] = value
    return props


def produce(
    topic: Annotated[str, typer.Argument(help="Topic to produce to")],
    messages: Annotated[list[str] | None, typer.Option("--messages", "-m", help="Message payload (repeatable)")] = None,
    files: Annotated[list[Path] | None, typer.Option("--file", "-f", help="File whose bytes are one message (repeatable)")] = None,
    num_produce: Annotated[int, typer.Option("--num-produce", "-n", help="Send the messages this many times")] = 1,
    key: Annotated[str | None, typer.Option("--key", "-k", help="Message key")] = None,
    properties: Annotated[list[str] | None, typer.Option("--property", "-p", help="Property key=value (repeatable)")] = None,
    service_url: ServiceUrl = None,
    client_conf: ClientConfOpt = None,
    auth_plugin: AuthPluginOpt = None,
    auth_params: AuthParamsOpt = None,
    tls_trust_cert_path: TlsTrustOpt = None,
    tls_allow_insecure: TlsInsecureOpt = None,
    tls_enable_hostname_verification: TlsHostnameOpt = None,
) -> None:
    """Produce messages to a topic and print their ids."""
    payloads = [m.encode() for m in messages or []]
    for path in files or []:
        try:
            payloads.append(path.read_bytes())
        except OSError as exc:
            raise _fail(f"cannot read {path}: {exc.strerror}") from None
    if not payloads:
        raise _fail("nothing to send: give --messages/-m or --file/-f")
    if num_produce < 1:
        raise _fail("--num-produce must be at least 1")
    props = _properties(properties or [])

    conn = Connection.resolve(service_url, client_conf, auth_plugin, auth_params, tls_trust_cert_path,
                              tls_allow_insecure, tls_enable_hostname_verification)

    async def main() -> None:
        # the client, with the command's run, not for its --help: 200-270 ms CPU (python -X importtime)
        from magnetar.client import AsyncClient

        async with AsyncClient(conn.service_url, operation_timeout_seconds=10, connection_timeout_ms=5000,
                               **conn.options) as client:
            producer = await client.create_producer(topic)
            futures = []
            for _ in range(num_produce):
                for payload in payloads:
                    futures.append(await producer.send_async(payload, properties=props or None, partition_key=key))
            await producer.flush()
            for fut in futures:
                typer.echo(str(await fut))
            typer.echo(f"{len(futures)} messages produced to {topic}", err=True)

    _run(main())


def consume(
    topic: Annotated[str, typer.Argument(help="Topic to consume from")],
    subscription: Annotated[str, typer.Option("--subscription-name", "-s", help="Subscription name")],
    sub_type: Annotated[str, typer.Option("--subscription-type", "-t", help="Exclusive, Shared, Failover or Key_Shared")] = "Exclusive",
    num_messages: Annotated[int, typer.Option("--num-messages", "-n", help="Stop after this many (0 = forever)")] = 1,
    earliest: Annotated[bool, typer.Option("--earliest", help="Start a new subscription at the earliest message")] = False,
    timeout: Annotated[float, typer.Option("--timeout", help="Give up after this many seconds without a message (0 = wait forever)")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per message")] = False,
    service_url: ServiceUrl = None,
    client_conf: ClientConfOpt = None,
    auth_plugin: AuthPluginOpt = None,
    auth_params: AuthParamsOpt = None,
    tls_trust_cert_path: TlsTrustOpt = None,
    tls_allow_insecure: TlsInsecureOpt = None,
    tls_enable_hostname_verification: TlsHostnameOpt = None,
) -> None:
    """Consume messages, printing each with its id, key and properties, and acknowledge them."""
    types = {t.name.lower(): t for t in SubType}
    chosen = types.get(sub_type.lower().replace("-", "_"))
    if chosen is None:
        raise _fail(f"unknown subscription type {sub_type!r}: use Exclusive, Shared, Failover or Key_Shared")

    conn = Connection.resolve(service_url, client_conf, auth_plugin, auth_params, tls_trust_cert_path,
                              tls_allow_insecure, tls_enable_hostname_verification)

    async def main() -> None:
        # the client, with the command's run, not for its --help: 200-270 ms CPU (python -X importtime)
        from magnetar.client import AsyncClient
        from magnetar.client.exceptions import Timeout

        async with AsyncClient(conn.service_url, operation_timeout_seconds=10, connection_timeout_ms=5000,
                               **conn.options) as client:
            consumer = await client.subscribe(
                topic, subscription, consumer_type=chosen,
                initial_position=InitialPosition.Earliest if earliest else InitialPosition.Latest,
            )
            received = 0
            while num_messages == 0 or received < num_messages:
                try:
                    msg = await consumer.receive(int(timeout * 1000) if timeout > 0 else None)
                except Timeout:
                    raise _fail(f"no message within {timeout:g} s ({received} received)") from None
                received += 1
                _print_message(msg, as_json)
                consumer.acknowledge(msg)
            await consumer.close()

    _run(main())


def _print_message(msg, as_json: bool) -> None:  # noqa: ANN001 - client Message
    data = msg.data()
    try:
        text = data.decode()
    except UnicodeDecodeError:
        text = data.hex()
    if as_json:
        typer.echo(json.dumps({
            "id": str(msg.message_id()), "key": msg.partition_key() or None, "properties": msg.properties(),
            "publish_time": msg.publish_timestamp(), "data": text,
        }))
        return
    parts = [f"id={msg.message_id()}"]
    if msg.partition_key():
        parts.append(f"key={msg.partition_key()}")
    if msg.properties():
        parts.append("properties=" + ",".join(f"{k}={v}" for k, v in msg.properties().items()))
    typer.echo(" ".join(parts) + f" content={text}")
