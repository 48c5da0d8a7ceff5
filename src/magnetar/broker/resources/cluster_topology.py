"""What a cluster's record says beyond its URLs: its peer clusters, its failure domains and its
migration policy (pulsar-admin's update-peer-clusters, *-failure-domain and *-cluster-migration).

Peer clusters are a field of the cluster's ClusterData (``peerClusterNames``), as in Pulsar. Failure
domains and the migration policy are stored as Pulsar keeps them beside the cluster, in the metadata
store under ``failure-domains/<cluster>`` and ``cluster-policies/<cluster>``. A standalone broker places
no topic by domain: the domains are kept and shown, as Pulsar's standalone keeps them.
"""

from __future__ import annotations

import json
from typing import Any

from magnetar.broker.resources.base import NAME, ResourceContext
from magnetar.broker.resources.errors import (
    BadRequestError,
    ConflictError,
    NotFoundError,
    PreconditionFailedError,
)

DOMAINS_PREFIX = "failure-domains/"
POLICIES_PREFIX = "cluster-policies/"
#: ClusterUrl's fields (the migration target)
_URL_FIELDS = ("serviceUrl", "serviceUrlTls", "brokerServiceUrl", "brokerServiceUrlTls")


class ClusterTopologyResources:
    """Peer clusters, failure domains and migration policies of the clusters."""

    def __init__(self, ctx: ResourceContext) -> None:
        self.ctx = ctx

    def _cluster(self, cluster: str) -> dict[str, Any]:
        data = self.ctx.metadata.get_cluster(cluster)
        if data is None:
            raise NotFoundError("Cluster does not exist")
        return data

    # -- peers -----------------------------------------------------------------------------
    def get_peers(self, cluster: str) -> list[str] | None:
        """The cluster's peer clusters (None when never set, as Pulsar's null)."""
        return self._cluster(cluster).get("peerClusterNames")

    def set_peers(self, cluster: str, peers: list[str] | None) -> None:
        """Replace the cluster's peer clusters: existing clusters, never itself."""
        data = self._cluster(cluster)
        names = list(dict.fromkeys(peers or []))
        for peer in names:
            if peer == cluster:
                raise PreconditionFailedError(f"{cluster} itself can't be part of peer-list")
            if self.ctx.metadata.get_cluster(peer) is None:
                raise PreconditionFailedError(f"Peer cluster {peer} does not exist")
        data = {k: v for k, v in data.items() if k != "peerClusterNames"}
        if names:
            data["peerClusterNames"] = names
        self.ctx.metadata.update_cluster(cluster, data)

    # -- failure domains -------------------------------------------------------------------
    def _domains(self, cluster: str) -> dict[str, dict[str, Any]]:
        self._cluster(cluster)
        stored = self.ctx.metadata.get_kv(DOMAINS_PREFIX + cluster)
        return json.loads(stored) if stored else {}

    def list_domains(self, cluster: str) -> dict[str, dict[str, Any]]:
        """Every failure domain of the cluster, by name (Pulsar's Map<String, FailureDomain>)."""
        return self._domains(cluster)

    def get_domain(self, cluster: str, domain: str) -> dict[str, Any]:
        """One failure domain ({"brokers": [...]})."""
        found = self._domains(cluster).get(domain)
        if found is None:
            raise NotFoundError(f"Domain {domain} for cluster {cluster} does not exist")
        return found

    def set_domain(self, cluster: str, domain: str, data: dict[str, Any] | None) -> None:
        """Create or replace a failure domain; a broker belongs to one domain at most."""
        if not NAME.match(domain or ""):
            raise PreconditionFailedError("Failure domain name is not valid")
        brokers = (data or {}).get("brokers")
        if brokers is None:
            brokers = []
        if not isinstance(brokers, list) or not all(isinstance(b, str) for b in brokers):
            raise BadRequestError("Invalid failure domain: brokers must be a list of broker names")
        domains = self._domains(cluster)
        for other, info in domains.items():
            clash = sorted(set(brokers) & set(info.get("brokers", [])))
            if other != domain and clash:
                raise ConflictError(f"Domain {other} for cluster {cluster} already has brokers {clash}")
        domains[domain] = {"brokers": list(dict.fromkeys(brokers))}
        self.ctx.metadata.put_kv(DOMAINS_PREFIX + cluster, json.dumps(domains).encode())

    def delete_domain(self, cluster: str, domain: str) -> None:
        """Forget a failure domain."""
        domains = self._domains(cluster)
        if domains.pop(domain, None) is None:
            raise NotFoundError(f"Domain {domain} for cluster {cluster} does not exist")
        self.ctx.metadata.put_kv(DOMAINS_PREFIX + cluster, json.dumps(domains).encode())

    # -- migration -------------------------------------------------------------------------
    def get_migration(self, cluster: str) -> dict[str, Any]:
        """The cluster's ClusterPolicies (migrated, migratedClusterUrl); 404 while never set, as Pulsar."""
        self._cluster(cluster)
        stored = self.ctx.metadata.get_kv(POLICIES_PREFIX + cluster)
        if stored is None:
            raise NotFoundError("Cluster does not exist")
        return json.loads(stored)

    def set_migration(self, cluster: str, migrated: bool, url: dict[str, Any] | None) -> None:
        """Record that the cluster is (or is not) migrated, and where to."""
        target = {k: v for k, v in (url or {}).items() if k in _URL_FIELDS and v}
        if not all(isinstance(v, str) for v in target.values()):
            raise BadRequestError("Invalid cluster url: its fields must be strings")
        if migrated and not target:
            raise BadRequestError("Cluster url must not be empty")
        self._cluster(cluster)
        policies = {"migrated": migrated, "migratedClusterUrl": {k: target.get(k) for k in _URL_FIELDS}}
        self.ctx.metadata.put_kv(POLICIES_PREFIX + cluster, json.dumps(policies).encode())
