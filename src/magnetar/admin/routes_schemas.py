"""Pulsar's schema REST API (``/admin/v2/schemas/...``) over the broker's schema registry."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body

from magnetar.admin.access import AccessGuard
from magnetar.admin.errors import HttpError
from magnetar.broker.resources.admin import BrokerAdmin
from magnetar.broker.schemas import SchemaData, StoredSchema
from magnetar.broker.schemas.compatibility import IncompatibleSchemaError
from magnetar.broker.schemas.registry import resolved
from magnetar.broker.security import TopicOperation

_BASE = "/admin/v2/schemas/{tenant}/{namespace}/{topic}"
#: the DeleteSchemaResponse of a forced delete: Pulsar's schema storage answers it without a version
#: (a history removed, or none there), which its REST layer gives as -1
FORCED_DELETE_VERSION = -1
_PAYLOAD = Body(..., description='PostSchemaPayload: {"type": "AVRO", "schema": "...", "properties": {}}')


def _schema_from_body(body: Any) -> SchemaData:
    """A PostSchemaPayload ``{"type", "schema", "properties"}`` as registry input."""
    if not isinstance(body, dict):
        raise HttpError(400, "Schema payload must be an object with type, schema and properties")
    kind = body.get("type")
    definition = body.get("schema", "")
    properties = body.get("properties") or {}
    if not isinstance(kind, str) or not kind:
        raise HttpError(400, "Schema payload needs a type (e.g. AVRO, JSON, STRING)")
    if not isinstance(definition, str):
        raise HttpError(400, "Schema payload's schema must be a string")
    if not isinstance(properties, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in properties.items()):
        raise HttpError(400, "Schema payload's properties must map strings to strings")
    return SchemaData(kind.upper(), definition.encode(), properties)


def schema_metadata(versions: list[StoredSchema]) -> dict[str, Any]:
    """Pulsar's SchemaMetadata: the latest version's locator (``info``) and every version's (``index``).
    magnetar keeps schemas in its metadata store, not in ledgers: a locator's ledger id is -1 and its
    entry id the version."""
    index = [{"ledgerId": -1, "entryId": s.version, "version": s.version} for s in versions]
    return {"info": index[-1], "index": index}


def router(admin: BrokerAdmin, access: AccessGuard) -> APIRouter:
    """Schema routes: get (latest, by version, all), post, delete, compatibility, version lookup."""
    r = APIRouter(tags=["schemas"])
    registry = admin.service.schemas
    # as Pulsar's SchemasResource: reading needs lookup rights, uploading produce, deleting admin
    read = [access.topic(TopicOperation.GET_METADATA)]

    def _tn(tenant: str, namespace: str, name: str):  # noqa: ANN202 - TopicName
        return admin.ctx.topic_name("persistent", tenant, namespace, name)

    @r.get(_BASE + "/schema", dependencies=read, summary="Latest schema of a topic")
    async def latest(tenant: str, namespace: str, topic: str) -> dict:
        stored = registry.latest(_tn(tenant, namespace, topic))
        if stored is None:
            raise HttpError(404, "Schema not found")
        return stored.to_rest()

    @r.get(_BASE + "/schema/{version}", dependencies=read, summary="One version of a topic's schema")
    async def by_version(tenant: str, namespace: str, topic: str, version: str) -> dict:
        try:
            number = int(version)
        except ValueError:
            raise HttpError(412, f"Invalid schema version {version!r}") from None
        stored = registry.version(_tn(tenant, namespace, topic), number)
        if stored is None:
            raise HttpError(404, "Schema not found")
        return stored.to_rest()

    @r.get(_BASE + "/schemas", dependencies=read, summary="Every version of a topic's schema")
    async def all_versions(tenant: str, namespace: str, topic: str) -> dict:
        versions = registry.all_versions(_tn(tenant, namespace, topic))
        if not versions:
            raise HttpError(404, "Schema not found")
        return {"getSchemaResponses": [s.to_rest() for s in versions]}

    @r.get(_BASE + "/metadata", dependencies=read, summary="Where each version of a topic's schema is stored")
    async def metadata(tenant: str, namespace: str, topic: str) -> dict:
        versions = registry.all_versions(_tn(tenant, namespace, topic))
        if not versions:
            raise HttpError(404, "Schema not found")
        return schema_metadata(versions)

    @r.post(_BASE + "/schema", dependencies=[access.topic(TopicOperation.PRODUCE)], summary="Upload a new schema version")
    async def post(tenant: str, namespace: str, topic: str, body: Any = _PAYLOAD) -> dict:
        tn = _tn(tenant, namespace, topic)
        try:
            version = await resolved(registry.post(tn, _schema_from_body(body)))  # committed by a metadata job
        except IncompatibleSchemaError as exc:
            raise HttpError(409, str(exc)) from None
        return {"version": {"version": version}}

    @r.delete(_BASE + "/schema", dependencies=[access.topic(TopicOperation.DELETE_METADATA)],
              summary="Delete a topic's schema (a new one starts a fresh history)")
    async def delete(tenant: str, namespace: str, topic: str, force: bool = False) -> dict:
        version = await resolved(registry.delete(_tn(tenant, namespace, topic), force=force))
        if force:  # as Pulsar's: the history is gone and there is no version to give, history or not
            return {"version": FORCED_DELETE_VERSION}
        if version is None:
            raise HttpError(404, "Schema not found")
        return {"version": version}  # Pulsar's DeleteSchemaResponse: the version as a number

    @r.post(_BASE + "/compatibility", dependencies=read, summary="Test a schema against the topic's compatibility strategy")
    async def compatibility(tenant: str, namespace: str, topic: str, body: Any = _PAYLOAD) -> dict:
        ok, strategy, _reason = registry.test_compatibility(_tn(tenant, namespace, topic), _schema_from_body(body))
        return {"isCompatible": ok, "schemaCompatibilityStrategy": getattr(strategy, "name", str(strategy))}

    @r.post(_BASE + "/version", dependencies=read, summary="The version of a given schema, if the topic has it")
    async def version_of(tenant: str, namespace: str, topic: str, body: Any = _PAYLOAD) -> dict:
        version = registry.version_of(_tn(tenant, namespace, topic), _schema_from_body(body))
        if version is None:
            raise HttpError(404, "Schema not found")
        return {"version": version}

    return r
