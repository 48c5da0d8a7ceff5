"""``magnetar admin clusters``: peer clusters, failure domains and the migration policy (pulsar-admin's
update-peer-clusters, *-failure-domain, *-cluster-migration, with its flags)."""

from __future__ import annotations

from typing import Annotated

import typer

from magnetar.cli.admin.context import Name, call, clusters_app, show, state
from magnetar.cli.admin.parsing import q, split_csv

DomainOpt = Annotated[str, typer.Option("--domain-name", "-dn", help="Failure domain name")]
BrokersOpt = Annotated[list[str] | None, typer.Option("--broker-list", "-b", help="Brokers of the domain (comma separated)")]


@clusters_app.command("update-peer-clusters")
def clusters_update_peers(
    ctx: typer.Context, cluster: Name,
    peer_clusters: Annotated[list[str] | None, typer.Option("--peer-clusters", "-pc", help="Peer clusters (comma separated)")] = None,
) -> None:
    """Replace a cluster's peer clusters."""
    call(state(ctx).client.post, f"/admin/v2/clusters/{q(cluster)}/peers", split_csv(peer_clusters))


@clusters_app.command("get-peer-clusters")
def clusters_get_peers(ctx: typer.Context, cluster: Name) -> None:
    """Show a cluster's peer clusters."""
    show(ctx, call(state(ctx).client.get, f"/admin/v2/clusters/{q(cluster)}/peers"))


def _domain_path(cluster: str, domain: str = "") -> str:
    return f"/admin/v2/clusters/{q(cluster)}/failureDomains" + (f"/{q(domain)}" if domain else "")


@clusters_app.command("create-failure-domain")
def clusters_create_domain(ctx: typer.Context, cluster: Name, domain_name: DomainOpt, broker_list: BrokersOpt = None) -> None:
    """Create a failure domain of brokers."""
    call(state(ctx).client.post, _domain_path(cluster, domain_name), {"brokers": split_csv(broker_list)})


@clusters_app.command("update-failure-domain")
def clusters_update_domain(ctx: typer.Context, cluster: Name, domain_name: DomainOpt, broker_list: BrokersOpt = None) -> None:
    """Replace the brokers of a failure domain."""
    call(state(ctx).client.post, _domain_path(cluster, domain_name), {"brokers": split_csv(broker_list)})


@clusters_app.command("get-failure-domain")
def clusters_get_domain(ctx: typer.Context, cluster: Name, domain_name: DomainOpt) -> None:
    """Show a failure domain."""
    show(ctx, call(state(ctx).client.get, _domain_path(cluster, domain_name)))


@clusters_app.command("list-failure-domains")
def clusters_list_domains(ctx: typer.Context, cluster: Name) -> None:
    """List a cluster's failure domains."""
    show(ctx, call(state(ctx).client.get, _domain_path(cluster)))


@clusters_app.command("delete-failure-domain")
def clusters_delete_domain(ctx: typer.Context, cluster: Name, domain_name: DomainOpt) -> None:
    """Delete a failure domain."""
    call(state(ctx).client.delete, _domain_path(cluster, domain_name))


@clusters_app.command("update-cluster-migration")
def clusters_update_migration(
    ctx: typer.Context, cluster: Name,
    migrated: Annotated[bool, typer.Option("--migrated", help="The cluster is migrated")] = False,
    service_url: Annotated[str | None, typer.Option("--service-url", help="HTTP URL of the new cluster")] = None,
    service_url_secure: Annotated[str | None, typer.Option("--service-url-secure", help="HTTPS URL")] = None,
    broker_url: Annotated[str | None, typer.Option("--broker-url", help="pulsar:// URL of the new cluster")] = None,
    broker_url_secure: Annotated[str | None, typer.Option("--broker-url-secure", help="pulsar+ssl:// URL")] = None,
) -> None:
    """Mark a cluster migrated (or not) to another cluster's URLs."""
    url = {"serviceUrl": service_url, "serviceUrlTls": service_url_secure, "brokerServiceUrl": broker_url,
           "brokerServiceUrlTls": broker_url_secure}
    body = {k: v for k, v in url.items() if v is not None}
    call(state(ctx).client.post, f"/admin/v2/clusters/{q(cluster)}/migrate?migrated={str(migrated).lower()}", body)


@clusters_app.command("get-cluster-migration")
def clusters_get_migration(ctx: typer.Context, cluster: Name) -> None:
    """Show a cluster's migration policy."""
    show(ctx, call(state(ctx).client.get, f"/admin/v2/clusters/{q(cluster)}/migrate"))
