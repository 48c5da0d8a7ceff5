"""``magnetar sql``: Spark SQL over topics, printed as a table.

Topics are named in the query as ``pulsar.`<topic>``` (backquotes, full or short topic name);
each one is read with the "pulsar" data source (a batch read, from the earliest message to
the latest one) and registered as a temporary view that the query then uses:

    magnetar sql "SELECT __key, count(*) FROM pulsar.`persistent://public/default/orders` GROUP BY __key"

Needs PySpark (``pip install 'magnetar[spark]'``) and Java 17+; Spark runs in this process
(``local[*]``). The broker, credentials and TLS settings come from ``--client-conf`` /
$PULSAR_CLIENT_CONF and pulsar-client's flags, handed to the data source as its
``pulsar.client.*`` options.
"""

from __future__ import annotations

import json
import os
import re
from typing import Annotated, Any

import typer

import magnetar.spark
from magnetar.cli.client_conf import (
    AuthParamsOpt,
    AuthPluginOpt,
    ClientConf,
    ClientConfError,
    ClientConfOpt,
    TlsHostnameOpt,
    TlsInsecureOpt,
    TlsTrustOpt,
    load_client_conf,
)

DEFAULT_URL = "pulsar://localhost:6650"
#: ``pulsar.`topic``` in a query
TOPIC_REF = re.compile(r"\bpulsar\.`([^`]+)`", re.IGNORECASE)


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(1)


def rewrite(query: str) -> tuple[str, dict[str, str]]:
    """The query with every ``pulsar.`topic``` replaced by a view name, and {view: topic}."""
    views: dict[str, str] = {}
    by_topic: dict[str, str] = {}

    def repl(m: re.Match) -> str:
        topic = m.group(1).strip()
        view = by_topic.get(topic)
        if view is None:
            view = by_topic[topic] = f"__pulsar_topic_{len(by_topic)}"
            views[view] = topic
        return view

    return TOPIC_REF.sub(repl, query), views


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, (bytes, bytearray)):
        try:
            text = bytes(value).decode("utf-8")
            if text.isprintable():
                return text
        except UnicodeDecodeError:
            pass
        return "0x" + bytes(value).hex()
    if isinstance(value, dict):
        return json.dumps({str(k): _plain(v) for k, v in value.items()}, default=str)
    if isinstance(value, (list, tuple)) or hasattr(value, "asDict"):
        return json.dumps(_plain(value), default=str)
    return str(value)


def _plain(value: Any) -> Any:
    if hasattr(value, "asDict"):
        return {k: _plain(v) for k, v in value.asDict().items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return _cell(value)
    return value


def connection_options(conf: ClientConf) -> dict[str, str]:
    """The data source's ``pulsar.client.*`` options for a tool's client.conf and flags."""
    options = {
        "pulsar.client.tlsAllowInsecureConnection": str(conf.tls_allow_insecure_connection).lower(),
        "pulsar.client.tlsHostnameVerificationEnable": str(conf.tls_enable_hostname_verification).lower(),
    }
    if conf.tls_trust_certs_file_path:
        options["pulsar.client.tlsTrustCertsFilePath"] = conf.tls_trust_certs_file_path
    if conf.auth_plugin:
        options["pulsar.client.authPluginClassName"] = conf.auth_plugin
        options["pulsar.client.authParams"] = conf.auth_params or ""
    return options


def sql(
    query: Annotated[str, typer.Argument(help="Spark SQL; name topics as pulsar.`<topic>`")],
    service_url: Annotated[
        str | None,
        typer.Option("--service-url", "-u", help=f"Broker URL (default: brokerServiceUrl of the client.conf, else {DEFAULT_URL})"),
    ] = None,
    options: Annotated[
        list[str] | None,
        typer.Option("--option", "-o", help="Option of the pulsar data source, key=value (repeatable), e.g. startingTime=...")
    ] = None,
    max_rows: Annotated[int, typer.Option("--max-rows", "-n", help="Print at most this many rows")] = 1000,
    json_output: Annotated[bool, typer.Option("--json", help="One JSON object per row instead of a table")] = False,
    master: Annotated[str, typer.Option("--master", help="Spark master")] = "local[*]",
    client_conf: ClientConfOpt = None,
    auth_plugin: AuthPluginOpt = None,
    auth_params: AuthParamsOpt = None,
    tls_trust_cert_path: TlsTrustOpt = None,
    tls_allow_insecure: TlsInsecureOpt = None,
    tls_enable_hostname_verification: TlsHostnameOpt = None,
) -> None:
    """Run Spark SQL over topics (batch reads) and print the result."""
    try:
        conf = load_client_conf(
            client_conf, auth_plugin=auth_plugin, auth_params=auth_params, tls_trust_cert_path=tls_trust_cert_path,
            tls_allow_insecure=tls_allow_insecure, tls_enable_hostname_verification=tls_enable_hostname_verification,
        )
    except ClientConfError as exc:
        raise _fail(str(exc)) from None
    service_url = service_url or conf.broker_service_url or DEFAULT_URL
    extra: dict[str, str] = connection_options(conf)
    for item in options or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise _fail(f"option {item!r} is not key=value")
        extra[key] = value
    if max_rows < 0:
        raise _fail("--max-rows must be >= 0")
    rewritten, views = rewrite(query)
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise _fail("magnetar sql needs PySpark: pip install 'magnetar[spark]'") from None
    from pyspark.errors import PySparkException
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    existing = SparkSession.getActiveSession()  # run in-process next to a session: leave it running
    spark = magnetar.spark.local_session("magnetar-sql", master, **{"spark.sql.shuffle.partitions": "4"})
    try:
        try:
            for view, topic in views.items():
                reader = spark.read.format("pulsar").option("service.url", service_url).option("topic", topic)
                for key, value in extra.items():
                    reader = reader.option(key, value)
                reader.load().createOrReplaceTempView(view)
            df = spark.sql(rewritten)
            rows = df.take(max_rows + 1)
        except PySparkException as exc:
            raise _fail(_short(str(exc), views)) from None
        columns = df.columns
        shown = rows[:max_rows]
        if json_output:
            for row in shown:
                typer.echo(json.dumps({c: _plain(v) for c, v in zip(columns, row, strict=True)}, default=str))
        else:
            from rich.console import Console
            from rich.table import Table

            table = Table(*columns)
            for row in shown:
                table.add_row(*(_cell(v) for v in row))
            Console(width=max(80, min(250, 24 * len(columns)))).print(table)
            more = " (more not shown: --max-rows)" if len(rows) > max_rows else ""
            typer.echo(f"{len(shown)} row{'s' if len(shown) != 1 else ''}{more}")
    finally:
        if existing is None:
            spark.stop()


def _short(text: str, views: dict[str, str]) -> str:
    """The connector's own message in a Spark error (else its first line), topics named as given."""
    for view, topic in views.items():
        text = text.replace(view, f"pulsar.`{topic}`")
    ours = re.findall(r"(?:PulsarOptionError|PulsarSchemaError|DataLossError|PulsarReadError|PulsarWriteError): (.+)", text)
    if ours:
        return ours[-1].strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else "query failed"
