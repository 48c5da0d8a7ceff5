"""/admin/v2/brokers: this broker as pulsar-admin's `brokers` verbs see it (a standalone is a cluster
of one broker, its own leader). Health and readiness are core routes of the app (app.py).

The dynamic configuration (the settings changed at run time) is broker/dynamic_config.py's: a key
that is not dynamic is refused with Pulsar's 412.
"""

from typing import Any

from fastapi import APIRouter, Response
from fastapi.responses import PlainTextResponse

from magnetar import __version__
from magnetar.admin.access import AccessGuard
from magnetar.admin.errors import HttpError
from magnetar.broker.dynamic_config import dynamic_config_for
from magnetar.broker.pulsar_conf import PULSAR_BROKER_KEYS
from magnetar.broker.resources.admin import BrokerAdmin
from magnetar.protocol.topic_name import TopicName

#: the bundle range of a namespace that is never split (Pulsar's full range)
FULL_BUNDLE = "0x00000000_0xffffffff"
#: settings never shown by the runtime configuration (credentials)
_SECRET_KEYS = frozenset({"brokerClientAuthenticationParameters"})


def runtime_configuration(admin: BrokerAdmin) -> dict[str, str]:
    """The broker's settings under Pulsar's names, as text (GET /brokers/configuration/runtime)."""
    config = admin.ctx.config
    out = {
        key: str(getattr(config, field)).lower() if isinstance(getattr(config, field), bool) else str(getattr(config, field))
        for key, (field, _) in PULSAR_BROKER_KEYS.items()
        if key not in _SECRET_KEYS and getattr(config, field, None) is not None
    }
    out["clusterName"] = config.cluster_name
    out["webServicePort"] = str(config.http_port)
    out["brokerServicePort"] = str(config.port)
    return dict(sorted(out.items()))


def router(admin: BrokerAdmin, access: AccessGuard) -> APIRouter:
    """The broker routes, for superusers (as Pulsar)."""
    r = APIRouter(prefix="/admin/v2/brokers", tags=["brokers"])
    super_user = [access.super_user()]
    config = admin.ctx.config

    def broker_id() -> str:
        return config.web_service_url.split("://", 1)[1]

    @r.get("/leaderBroker", dependencies=super_user, summary="The leader broker (this one)")
    async def leader_broker() -> dict:
        return {"brokerId": broker_id(), "serviceUrl": config.web_service_url}

    @r.get("/version", response_class=PlainTextResponse, dependencies=super_user, summary="The broker's version")
    async def version() -> str:
        return __version__

    dynamic = dynamic_config_for(admin.service)

    @r.get("/configuration", dependencies=super_user, summary="The names of the dynamic settings")
    async def dynamic_names() -> list[str]:
        return dynamic.names()

    @r.get("/configuration/values", dependencies=super_user, summary="The dynamic settings overridden, and their values")
    async def dynamic_values() -> dict[str, str]:
        return dict(dynamic.overrides)

    @r.get("/configuration/runtime", dependencies=super_user, summary="The broker's settings under Pulsar's names")
    async def runtime() -> dict[str, str]:
        return runtime_configuration(admin)

    @r.post("/configuration/{name}/{value}", status_code=204, dependencies=super_user,
            summary="Override a dynamic setting (stored, applied at once and after restarts)")
    async def set_dynamic(name: str, value: str) -> Response:
        await dynamic.update(name, value)
        return Response(status_code=204)

    @r.delete("/configuration/{name}", status_code=204, dependencies=super_user,
              summary="Remove a dynamic setting's override (back to the configuration file's value)")
    async def delete_dynamic(name: str) -> Response:
        await dynamic.delete(name)
        return Response(status_code=204)

    @r.get("/internal-configuration", dependencies=super_user, summary="Where the broker keeps its metadata")
    async def internal_configuration() -> dict[str, Any]:
        store = f"sqlite:{config.data_dir / 'metadata.db'}"
        return {
            "metadataStoreUrl": store,
            "configurationMetadataStoreUrl": store,
            "bookkeeperMetadataServiceUri": None,
            "stateStorageServiceUrl": None,
        }

    @r.get("/backlog-quota-check", status_code=204, dependencies=super_user, summary="Check backlog quotas now")
    async def backlog_quota_check() -> Response:
        service = admin.ctx.service
        for topic in list(service.topics.values()):
            service.check_lifecycle(topic)
        return Response(status_code=204)

    @r.get("/{cluster}", dependencies=super_user, summary="The brokers of a cluster (this one)")
    async def brokers_of(cluster: str) -> list[str]:
        _local(admin, cluster)
        return [broker_id()]

    @r.get("/{cluster}/{broker}/ownedNamespaces", dependencies=super_user, summary="The namespace bundles this broker serves")
    async def owned_namespaces(cluster: str, broker: str) -> dict[str, dict]:
        _local(admin, cluster)
        if broker != broker_id():
            raise HttpError(404, f"Broker {broker} not found")
        namespaces = sorted({TopicName.parse(name).namespace for name in admin.ctx.service.topics})
        status = {"broker_assignment": "shared", "is_controlled": False, "is_active": True}
        return {f"{ns}/{FULL_BUNDLE}": status for ns in namespaces}

    return r


def _local(admin: BrokerAdmin, cluster: str) -> None:
    if cluster != admin.ctx.config.cluster_name:
        raise HttpError(404, f"Cluster {cluster} is not served by this broker")
