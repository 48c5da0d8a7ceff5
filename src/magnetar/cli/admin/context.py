"""What every ``magnetar admin`` command shares: the Typer apps, the client of the broker, output
(tables or JSON, :mod:`magnetar.cli.admin.output`), the line saying what a change did, and the
one-line errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

from magnetar.cli.admin.client import DEFAULT_ADMIN_URL, AdminClient, AdminCliError
from magnetar.cli.admin.output import cell as output_cell
from magnetar.cli.admin.output import done_message, print_value
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
    front, rest = split_global_options(args)
    return front + rest


def split_global_options(args: list[str]) -> tuple[list[str], list[str]]:
    """(the admin-wide options with their values, the rest: subcommand, its arguments and options)."""
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
    return front, rest


class _AdminGroup(TyperGroup):
    """The ``admin`` group: accepts its own options after the subcommand too."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_global_options(args))


#: the State of the invocation under way (the result callback is given no context)
_CURRENT: list[State] = []


def _report_change(*_result: Any, **_options: Any) -> None:
    """After a command that worked: a change that printed nothing says what it did
    (``Created tenant acme``); with --json nothing is added."""
    st = _CURRENT[-1] if _CURRENT else None
    leaf = st.command if st is not None else None
    if st is None or leaf is None or leaf.parent is None or not st.client.changed or st.shown or st.json:
        return
    print(done_message(leaf.parent.info_name or "", leaf.info_name or "", leaf.params))


admin_app = typer.Typer(
    name="admin",
    cls=_AdminGroup,
    help="Administer a broker over its REST API, like pulsar-admin.",
    no_args_is_help=True,
    result_callback=_report_change,
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
    """The broker client and output settings of one ``magnetar admin`` invocation, the command's
    context, and whether it printed an answer."""

    client: AdminClient
    json: bool
    shown: bool = False
    command: typer.Context | None = None

    @property
    def console(self) -> Any:
        """A rich Console on stdout (rich is imported by the first command that prints a table)."""
        from rich.console import Console

        return Console(soft_wrap=False)


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
    ctx.obj = State(client, json_output)
    _CURRENT[:] = [ctx.obj]


def state(ctx: typer.Context) -> State:
    """The invocation's state (set by the admin callback); ``ctx`` is remembered as the command's."""
    found = ctx.find_object(State)
    if found is None:  # pragma: no cover - the callback always sets it
        found = State(AdminClient(DEFAULT_ADMIN_URL), False)
    found.command = ctx
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


#: a value as a table cell (pulsar-admin's words: true, false, null)
cell = output_cell


def show(ctx: typer.Context, data: Any, title: str | None = None) -> None:
    """Print an answer: JSON with --json, else a list one item a line (``(none)`` when empty), an
    object as a key / value table (a nested one as indented JSON), a plain value as it is."""
    st = state(ctx)
    st.shown = True
    if st.json:
        typer.echo(json.dumps(data, indent=2))
        return
    print_value(data, title)
