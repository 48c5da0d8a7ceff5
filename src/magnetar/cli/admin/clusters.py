"""``magnetar admin clusters``: list, get, create, update, delete (pulsar-admin's flags)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from magnetar.cli.admin.context import Name, call, clusters_app, show, state
from magnetar.cli.admin.parsing import q

UrlOpt = Annotated[str | None, typer.Option("--url", help="HTTP service URL (http://host:8080)")]
UrlTlsOpt = Annotated[str | None, typer.Option("--url-secure", help="HTTPS service URL")]
BrokerUrlOpt = Annotated[str | None, typer.Option("--broker-url", help="Broker service URL (pulsar://host:6650)")]
BrokerUrlTlsOpt = Annotated[str | None, typer.Option("--broker-url-secure", help="Broker TLS service URL (pulsar+ssl://)")]
AuthPluginOpt = Annotated[str | None, typer.Option("--auth-plugin", help="Authentication plugin brokers use to reach it")]
AuthParamsOpt = Annotated[str | None, typer.Option("--auth-parameters", help="The authentication plugin's parameters")]
TlsOpt = Annotated[bool | None, typer.Option("--tls-enable/--tls-disable", help="Brokers reach it over TLS")]
InsecureOpt = Annotated[bool | None, typer.Option("--tls-allow-insecure", help="Accept untrusted certificates")]
TrustOpt = Annotated[str | None, typer.Option("--tls-trust-certs-filepath", help="CA certificates to trust")]


def _cluster_data(**flags: Any) -> dict[str, Any]:
    """The ClusterData body of the flags given."""
    names = {
        "url": "serviceUrl", "url_secure": "serviceUrlTls", "broker_url": "brokerServiceUrl",
        "broker_url_secure": "brokerServiceUrlTls", "auth_plugin": "authenticationPlugin",
        "auth_parameters": "authenticationParameters", "tls_enable": "brokerClientTlsEnabled",
        "tls_allow_insecure": "tlsAllowInsecureConnection", "tls_trust_certs_filepath": "brokerClientTrustCertsFilePath",
    }
    return {names[key]: value for key, value in flags.items() if value is not None}


@clusters_app.command("list")
def clusters_list(ctx: typer.Context) -> None:
    """List clusters."""
    show(ctx, call(state(ctx).client.get, "/admin/v2/clusters"))


@clusters_app.command("get")
def clusters_get(ctx: typer.Context, cluster: Name) -> None:
    """Show a cluster's ClusterData."""
    show(ctx, call(state(ctx).client.get, f"/admin/v2/clusters/{q(cluster)}"))


@clusters_app.command("create")
def clusters_create(
    ctx: typer.Context, cluster: Name, url: UrlOpt = None, url_secure: UrlTlsOpt = None, broker_url: BrokerUrlOpt = None,
    broker_url_secure: BrokerUrlTlsOpt = None, auth_plugin: AuthPluginOpt = None, auth_parameters: AuthParamsOpt = None,
    tls_enable: TlsOpt = None, tls_allow_insecure: InsecureOpt = None, tls_trust_certs_filepath: TrustOpt = None,
) -> None:
    """Create a cluster."""
    body = _cluster_data(
        url=url, url_secure=url_secure, broker_url=broker_url, broker_url_secure=broker_url_secure,
        auth_plugin=auth_plugin, auth_parameters=auth_parameters, tls_enable=tls_enable,
        tls_allow_insecure=tls_allow_insecure, tls_trust_certs_filepath=tls_trust_certs_filepath,
    )
    call(state(ctx).client.put, f"/admin/v2/clusters/{q(cluster)}", body)


@clusters_app.command("update")
def clusters_update(
    ctx: typer.Context, cluster: Name, url: UrlOpt = None, url_secure: UrlTlsOpt = None, broker_url: BrokerUrlOpt = None,
    broker_url_secure: BrokerUrlTlsOpt = None, auth_plugin: AuthPluginOpt = None, auth_parameters: AuthParamsOpt = None,
    tls_enable: TlsOpt = None, tls_allow_insecure: InsecureOpt = None, tls_trust_certs_filepath: TrustOpt = None,
) -> None:
    """Replace a cluster's ClusterData."""
    body = _cluster_data(
        url=url, url_secure=url_secure, broker_url=broker_url, broker_url_secure=broker_url_secure,
        auth_plugin=auth_plugin, auth_parameters=auth_parameters, tls_enable=tls_enable,
        tls_allow_insecure=tls_allow_insecure, tls_trust_certs_filepath=tls_trust_certs_filepath,
    )
    call(state(ctx).client.post, f"/admin/v2/clusters/{q(cluster)}", body)


@clusters_app.command("delete")
def clusters_delete(ctx: typer.Context, cluster: Name) -> None:
    """Delete a cluster."""
    call(state(ctx).client.delete, f"/admin/v2/clusters/{q(cluster)}")
