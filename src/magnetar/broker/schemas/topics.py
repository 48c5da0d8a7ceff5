"""Schemas as topics see them: which strategy applies, and what producers and consumers get.

The rules follow Pulsar's broker:

- the compatibility strategy comes from the topic's policies (``schema_compatibility_strategy``,
  set on the topic or on its partitioned parent), else the namespace's policy (or its older
  ``schema_auto_update_compatibility_strategy``), else the broker setting; UNDEFINED at a level
  means "ask the next one";
- ``is_allow_auto_update_schema`` (namespace policy, else the broker setting, default true):
  when false, producers may only use schemas already registered;
- ``schema_validation_enforced`` (topic policy, namespace policy, else the broker setting,
  default false): when true, producers without a schema are refused on topics that have one;
- a producer with a schema gets the version of an identical registered schema, or a new
  version when the schema passes the compatibility check;
- a consumer with a schema registers it only on an idle topic without a schema (no producers,
  no consumers, nothing ever written); otherwise it must be able to read the topic's schema
  (and a topic with data but no schema refuses it).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from magnetar.broker.errors import BrokerError
from magnetar.broker.schemas.compatibility import (
    IncompatibleSchemaError,
    SchemaData,
    Strategy,
    parse_strategy,
)
from magnetar.broker.schemas.registry import (
    NO_SCHEMA_TYPES,
    Pending,
    SchemaNotFoundError,
    SchemaRegistry,
    StoredSchema,
    schema_id_of,
    type_from_wire,
)
from magnetar.protocol.enums import ServerError
from magnetar.protocol.topic_name import TopicName

if TYPE_CHECKING:
    from magnetar.broker.config import BrokerConfig
    from magnetar.storage import MetadataStore

TOPIC_POLICIES_PREFIX = "topic-policies/"
T = TypeVar("T")


@dataclass(frozen=True)
class SchemaPolicy:
    """The schema settings in force for one topic."""

    strategy: Strategy
    allow_auto_update: bool
    validation_enforced: bool


def schema_from_wire(schema: Any) -> SchemaData | None:  # noqa: ANN401 - a wire Schema message
    """The registry form of a wire ``Schema``; None when it declares no schema (type None).

    This is how GET_OR_CREATE_SCHEMA reads its schema (Pulsar's broker answers an empty version
    for type None there); PRODUCER and SUBSCRIBE use :func:`declared_schema_from_wire`.
    """
    kind = type_from_wire(schema.type)
    if kind in NO_SCHEMA_TYPES:
        return None
    return SchemaData(kind, bytes(schema.schema_data), {kv.key: kv.value for kv in schema.properties})


def declared_schema_from_wire(schema: Any) -> SchemaData | None:  # noqa: ANN401 - a wire Schema message
    """The schema a PRODUCER or SUBSCRIBE declares; None for AUTO_CONSUME, which declares none.

    Unlike :func:`schema_from_wire`, type None is a schema here, as in Pulsar's broker: the Go
    client sends its bytes schema that way (the Java and C++ clients send no schema) and gets a
    registered version, which its messages carry and its consumers look up.
    """
    kind = type_from_wire(schema.type)
    if kind == "NONE":
        return SchemaData(kind, bytes(schema.schema_data), {kv.key: kv.value for kv in schema.properties})
    return schema_from_wire(schema)


def _bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


class TopicSchemas:
    """The schema side of the broker service: policies, producer and consumer rules, and the
    topic-name based operations the admin API needs. ``registry`` holds the histories."""

    def __init__(self, metadata: MetadataStore, config: BrokerConfig, registry: SchemaRegistry | None = None) -> None:
        self.metadata = metadata
        self.config = config
        self.registry = registry or SchemaRegistry(metadata)

    # -- policies ------------------------------------------------------------------------
    def _topic_policies(self, topic_name: TopicName) -> list[Mapping[str, Any]]:
        out = []
        names = [topic_name]
        if topic_name.partitioned_parent != topic_name:
            names.append(topic_name.partitioned_parent)
        for tn in names:
            raw = self.metadata.get_kv(TOPIC_POLICIES_PREFIX + str(tn))
            if raw:
                try:
                    value = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(value, dict):
                    out.append(value)
        return out

    def _namespace_policies(self, topic_name: TopicName) -> Mapping[str, Any]:
        return self.metadata.get_namespace(topic_name.namespace) or {}

    def strategy(self, topic_name: TopicName) -> Strategy:
        """The compatibility strategy in force for a topic."""
        for policies in self._topic_policies(topic_name):
            for key in ("schema_compatibility_strategy", "schemaCompatibilityStrategy"):
                strategy = parse_strategy(policies.get(key))
                if strategy is not None:
                    return strategy
        ns = self._namespace_policies(topic_name)
        strategy = parse_strategy(ns.get("schema_compatibility_strategy"))
        if strategy is None:
            strategy = parse_strategy(ns.get("schema_auto_update_compatibility_strategy"))
        if strategy is None:
            strategy = parse_strategy(self.config.schema_compatibility_strategy)
        return strategy or Strategy.FULL

    def allow_auto_update(self, topic_name: TopicName) -> bool:
        """Whether clients may register new schema versions on a topic."""
        value = _bool(self._namespace_policies(topic_name).get("is_allow_auto_update_schema"))
        return self.config.allow_auto_update_schema if value is None else value

    def validation_enforced(self, topic_name: TopicName) -> bool:
        """Whether producers without a schema are refused on a topic that has one."""
        if self.config.schema_validation_enforced:
            return True
        for policies in self._topic_policies(topic_name):
            for key in ("schema_validation_enforced", "schemaValidationEnforced"):
                value = _bool(policies.get(key))
                if value is not None:
                    return value
        return bool(_bool(self._namespace_policies(topic_name).get("schema_validation_enforced")))

    def policy(self, topic_name: TopicName) -> SchemaPolicy:
        """Every schema setting of a topic."""
        return SchemaPolicy(self.strategy(topic_name), self.allow_auto_update(topic_name), self.validation_enforced(topic_name))

    # -- clients -------------------------------------------------------------------------
    def producer_schema(self, topic_name: TopicName, schema: SchemaData | None) -> Pending[int | None]:
        """The schema version a producer publishes with (None: no schema); an awaitable of it while
        a new version is written (:data:`~magnetar.broker.schemas.registry.Pending`).

        BrokerError IncompatibleSchema when the schema is refused, or when a producer without
        one comes to a topic with a schema while validation is enforced.
        """
        schema_id = schema_id_of(topic_name)
        if schema is None:
            if self.registry.has_schema(schema_id) and self.validation_enforced(topic_name):
                raise BrokerError(
                    ServerError.IncompatibleSchema,
                    "Producers cannot connect or send message without a schema to topics with a schema",
                )
            return None
        try:
            version = self.registry.add_schema(
                schema_id, schema, self.strategy(topic_name), self.allow_auto_update(topic_name)
            )
        except IncompatibleSchemaError as exc:
            raise BrokerError(ServerError.IncompatibleSchema, f"{topic_name}: {exc}") from None
        return _refused_as_broker_error(version, topic_name)

    def consumer_schema(self, topic_name: TopicName, schema: SchemaData | None, topic_active: bool) -> Pending[None]:
        """Check (or register) the schema of a subscribing consumer (an awaitable while its
        registration is written).

        ``topic_active``: the topic has producers, consumers or stored messages. BrokerError
        IncompatibleSchema when refused.
        """
        if schema is None:
            return None
        schema_id = schema_id_of(topic_name)
        strategy = self.strategy(topic_name)
        try:
            if self.registry.has_schema(schema_id) or topic_active:
                try:
                    self.registry.check_consumer(schema_id, schema, strategy)
                except SchemaNotFoundError:
                    if strategy == Strategy.ALWAYS_COMPATIBLE:
                        return None
                    raise IncompatibleSchemaError(
                        f"Failed to add schema to an active topic with empty(BYTES) schema: new schema type {schema.type}"
                    ) from None
            else:
                added = self.registry.add_schema(schema_id, schema, strategy, self.allow_auto_update(topic_name))
                return _refused_as_broker_error(_none_after(added), topic_name) if isinstance(added, Awaitable) else None
        except IncompatibleSchemaError as exc:
            raise BrokerError(ServerError.IncompatibleSchema, f"{topic_name}: {exc}") from None
        return None

    def get_for_client(self, topic_name: TopicName, version: int | None) -> StoredSchema:
        """GET_SCHEMA: the latest schema, or one version; BrokerError TopicNotFound when none."""
        stored = self.registry.get(schema_id_of(topic_name), version)
        if stored is None:
            raise BrokerError(ServerError.TopicNotFound, f"Topic not found or no-schema: {topic_name}")
        return stored

    # -- the admin API (topic names; Pulsar's REST semantics) ----------------------------
    def latest(self, topic_name: TopicName) -> StoredSchema | None:
        """GET .../schema: the current schema, or None."""
        return self.registry.latest(schema_id_of(topic_name))

    def version(self, topic_name: TopicName, version: int) -> StoredSchema | None:
        """GET .../schema/{version}: one version (since the last delete), or None."""
        return self.registry.get(schema_id_of(topic_name), version)

    def all_versions(self, topic_name: TopicName) -> list[StoredSchema]:
        """GET .../schemas: the versions since the last delete, oldest first."""
        return self.registry.active(schema_id_of(topic_name))

    def post(self, topic_name: TopicName, schema: SchemaData, user: str = "") -> Pending[int]:
        """POST .../schema: register (or find) a schema under the topic's strategy.

        IncompatibleSchemaError (HTTP 409 in Pulsar) when refused. Automatic-update settings do
        not apply to the admin API.
        """
        return self.registry.put_if_absent(schema_id_of(topic_name), schema, self.strategy(topic_name), user)

    def delete(self, topic_name: TopicName, force: bool = False, user: str = "") -> Pending[int | None]:
        """DELETE .../schema: soft delete (returns the delete marker's version, None when there
        was no schema), or with ``force`` forget the whole history (returns None)."""
        schema_id = schema_id_of(topic_name)
        if force:
            deleted = self.registry.delete_all(schema_id)
            return _none_after(deleted) if isinstance(deleted, Awaitable) else None
        return self.registry.delete(schema_id, user)

    def test_compatibility(self, topic_name: TopicName, schema: SchemaData) -> tuple[bool, Strategy, str]:
        """POST .../compatibility: (compatible?, strategy applied, reason when not)."""
        strategy = self.strategy(topic_name)
        ok, reason = self.registry.is_compatible(schema_id_of(topic_name), schema, strategy)
        return ok, strategy, reason

    def version_of(self, topic_name: TopicName, schema: SchemaData) -> int | None:
        """PUT .../version: the version holding this definition, or None."""
        return self.registry.find_version(schema_id_of(topic_name), schema)


def _refused_as_broker_error(value: Pending[T], topic_name: TopicName) -> Pending[T]:
    """``value``; when it is a write under way, its IncompatibleSchemaError (a check made again once
    another write of the id was done) raised as BrokerError IncompatibleSchema."""
    if not isinstance(value, Awaitable):
        return value

    async def converted() -> T:
        try:
            return await value  # type: ignore[no-any-return]
        except IncompatibleSchemaError as exc:
            raise BrokerError(ServerError.IncompatibleSchema, f"{topic_name}: {exc}") from None

    return converted()


async def _none_after(pending: Awaitable[object]) -> None:
    await pending


def topic_is_active(topic: Any) -> bool:  # noqa: ANN401 - a persistent or non-persistent Topic
    """Whether a topic has producers, consumers, or ever stored a message (Pulsar then refuses
    to let a consumer register the topic's first schema)."""
    if topic.producers:
        return True
    if any(sub.consumers for sub in topic.subscriptions.values()):
        return True
    return getattr(topic, "last_readable_id", -1) >= 0 or getattr(topic, "msg_in_counter", 0) > 0
