"""What every ``magnetar admin`` command shares: the Typer apps, the client of the broker, output
(rich tables or JSON) and the one-line errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, NoReturn

import click
import typer
from rich.console import Console
from rich.table import Table
from typer.core import TyperGroup

from magnetar.cli.admin.client import DEFAULT_ADMIN_URL, AdminClient, AdminCliError
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

#: options of ``magnetar admin`` itself, and whether each takes a value
_GLOBAL_OPTIONS = {
    "--json": False, "--admin-url": True, "--client-conf": True, "--auth-plugin": True, "--auth-params": True,
    "--tls-trust-cert-path": True, "--tls-allow-insecure": False, "--no-tls-allow-insecure": False,
    "--tls-enable-hostname-verification": False, "--no-tls-enable-hostname-verification": False,
}


#: options ``clusters create`` / ``clusters update`` take as pulsar-admin does (the cluster's own, not the CLI's)
_CLUSTER_DATA_OPTIONS = frozenset({"--auth-plugin", "--tls-allow-insecure"})


def hoist_global_options(args: list[str]) -> list[str]:
    """``args`` with the admin-wide options moved in front of the subcommand, wherever they were
    (pulsar-admin users put flags last: ``magnetar admin topics list public/default --json``)."""
    front: list[str] = []
    rest: list[str] = []
    cluster_data = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest.extend(args[i:])
            break
        name = arg.split("=", 1)[0]
        if rest[-1:] == ["clusters"] and arg in ("create", "update"):
            cluster_data = True
        if name in _GLOBAL_OPTIONS and not (cluster_data and name in _CLUSTER_DATA_OPTIONS):
            front.append(arg)
            if _GLOBAL_OPTIONS[name] and "=" not in arg and i + 1 < len(args):
                i += 1
                front.append(args[i])
        else:
            rest.append(arg)
        i += 1
    return front + rest


class _AdminGroup(TyperGroup):
    """The ``admin`` group: accepts its own options after the subcommand too."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_global_options(args))


admin_app = typer.Typer(
    name="admin",
    cls=_AdminGroup,
    help="Administer a broker over its REST API, like pulsar-admin.",
    no_args_is_help=True,
)
clusters_app = typer.Typer(help="Clusters.", no_args_is_help=True)
tenants_app = typer.Typer(help="Tenants.", no_args_is_help=True)
namespaces_app = typer.Typer(help="Namespaces and their policies.", no_args_is_help=True)
topics_app = typer.Typer(help="Topics, subscriptions, messages and topic policies.", no_args_is_help=True)
admin_app.add_typer(clusters_app, name="clusters")
admin_app.add_typer(tenants_app, name="tenants")
admin_app.add_typer(namespaces_app, name="namespaces")
admin_app.add_typer(topics_app, name="topics")

Name = Annotated[str, typer.Argument(help="Name")]
TopicArg = Annotated[str, typer.Argument(help="Topic: persistent://tenant/namespace/topic or a short name")]
NsArg = Annotated[str, typer.Argument(help="Namespace: tenant/namespace")]
SubOpt = Annotated[str, typer.Option("--subscription", "-s", help="Subscription name")]
ForceOpt = Annotated[bool, typer.Option("--force", "-f", help="Also when clients are connected / not empty")]


@dataclass
class State:
    """The broker client and output settings of one ``magnetar admin`` invocation."""

    client: AdminClient
    json: bool
    console: Console


@admin_app.callback()
def _admin(
    ctx: typer.Context,
    admin_url: Annotated[
        str | None,
        typer.Option("--admin-url", envvar="MAGNETAR_ADMIN_URL",
                     help=f"Broker HTTP URL (default: webServiceUrl of the client.conf, else {DEFAULT_ADMIN_URL})"),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print answers as JSON")] = False,
    client_conf: ClientConfOpt = None,
    auth_plugin: AuthPluginOpt = None,
    auth_params: AuthParamsOpt = None,
    tls_trust_cert_path: TlsTrustOpt = None,
    tls_allow_insecure: TlsInsecureOpt = None,
    tls_enable_hostname_verification: TlsHostnameOpt = None,
) -> None:
    """Administer a broker over its REST API, like pulsar-admin."""
    try:
        conf = load_client_conf(
            client_conf, auth_plugin=auth_plugin, auth_params=auth_params, tls_trust_cert_path=tls_trust_cert_path,
            tls_allow_insecure=tls_allow_insecure, tls_enable_hostname_verification=tls_enable_hostname_verification,
        )
        url = admin_url or conf.web_service_url or DEFAULT_ADMIN_URL
        context = conf.http_ssl_context() if url.startswith("https:") else None
        client = AdminClient(url, authorization=conf.http_authorization(), ssl_context=context)
    except (ClientConfError, OSError) as exc:
        fail(str(exc))
    ctx.obj = State(client, json_output, Console(soft_wrap=False))


def state(ctx: typer.Context) -> State:
    """The invocation's state (set by the admin callback)."""
    found = ctx.find_object(State)
    if found is None:  # pragma: no cover - the callback always sets it
        found = State(AdminClient(DEFAULT_ADMIN_URL), False, Console())
    return found


def fail(message: str) -> NoReturn:
    """Print ``error: message`` and exit with status 1."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call a client method; a failed request ends the command with its one-line error."""
    try:
        return fn(*args, **kwargs)
    except AdminCliError as exc:
        fail(exc.message)


def cell(value: Any) -> str:
    """A value as a table cell."""
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    if isinstance(value, float):
        return f"{value:.3f}"
    return "" if value is None else str(value)


def show(ctx: typer.Context, data: Any, title: str | None = None) -> None:
    """Print an answer: JSON with --json, else a table (lists, objects) or the plain value."""
    st = state(ctx)
    if st.json:
        typer.echo(json.dumps(data, indent=2))
        return
    if isinstance(data, list):
        table = Table(title=title, show_header=bool(title))
        table.add_column(title or "value")
        for item in data:
            table.add_row(cell(item))
        if title:
            st.console.print(table)
        else:
            for item in data:
                st.console.print(cell(item), highlight=False, markup=False)
        return
    if isinstance(data, dict):
        table = Table(title=title)
        table.add_column("key", style="bold")
        table.add_column("value", overflow="fold")
        for key, value in data.items():
            table.add_row(str(key), cell(value))
        st.console.print(table)
        return
    typer.echo("null" if data is None else (json.dumps(data) if isinstance(data, bool) else str(data)))
