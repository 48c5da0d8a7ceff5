"""The schema registry: versioned schema histories keyed by schema id, in the metadata store.

A schema id is what Pulsar keys schemas by: the topic name without its domain, of the
partitioned parent (``tenant/ns/topic``), so every partition of a topic, and the persistent and
non-persistent topics of one name, share one history. Versions count from 0. Each version is one
row of the metadata key/value table (``schemas/<schema id>/<version, 12 digits>``, a JSON
object), so histories survive restarts.

Deleting a schema appends a *delete marker* version (Pulsar's soft delete): the topic has no
schema from then on, and the next schema starts a fresh compatibility chain — versions before the
marker are no longer served or checked against. A forced delete removes the whole history.

Every method runs on the broker's event loop. The registry reads every history once, when it is
made, and keeps them in memory in step with its own writes (it is the only writer of these rows):
a PRODUCER on a new topic then reads no database on the loop (benchmarks/PROFILES.md section 30).
A write (a new version, a delete marker, a forced delete) is checked on the loop and committed by a
job of the metadata thread (``jobs``, the store's one writer); the history in memory changes on the
loop once the job is done, and not at all when its commit failed. A write's methods then return an
awaitable of their result (:data:`Pending`); an answer found in memory (an existing version) is
returned at once. While a write of one schema id is under way, the next one of that id waits for it
and is then checked against the history it left: two registrations of one schema give one version.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import struct
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from magnetar.broker.schemas.compatibility import (
    IncompatibleSchemaError,
    SchemaData,
    Strategy,
    check_compatible,
    check_consumer_compatible,
    same_schema,
    split_key_value,
    validate_schema,
)
from magnetar.protocol.enums import SchemaType as WireSchemaType
from magnetar.protocol.topic_name import TopicName

if TYPE_CHECKING:
    from magnetar.storage import MetadataStore

__all__ = [
    "SCHEMA_KEY_PREFIX",
    "SchemaNotFoundError",
    "SchemaRegistry",
    "StoredSchema",
    "schema_id_of",
    "type_from_wire",
    "type_to_wire",
    "version_from_bytes",
    "version_to_bytes",
]

log = logging.getLogger("magnetar.broker.schemas")

SCHEMA_KEY_PREFIX = "schemas/"

T = TypeVar("T")
#: runs a job on the metadata thread and gives its result back on the loop (the service's
#: :meth:`~magnetar.broker.service.BrokerService.metadata_job`)
MetadataJobs = Callable[[Callable[[], Any]], Awaitable[Any]]
#: a write's result: at once when nothing had to be written (or without metadata jobs), else once committed
Pending = T | Awaitable[T]

#: schema types that carry no schema (a producer or consumer of raw bytes)
NO_SCHEMA_TYPES = frozenset({"NONE", "BYTES", "AUTO_CONSUME", "AUTO_PUBLISH", "AUTO"})


class SchemaNotFoundError(KeyError):
    """The topic has no schema (or not that version)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "schema not found"


def schema_id_of(topic: TopicName | str) -> str:
    """The schema id of a topic: ``tenant/ns/topic`` of its partitioned parent, without domain."""
    tn = topic if isinstance(topic, TopicName) else TopicName.parse(topic)
    parent = tn.partitioned_parent
    return f"{parent.tenant}/{parent.namespace_part}/{parent.local_name}"


def version_to_bytes(version: int) -> bytes:
    """A schema version as it travels on the wire: 8 bytes, big endian."""
    return struct.pack(">q", version)


def version_from_bytes(data: bytes) -> int | None:
    """The version in wire bytes; None when they are not 8 bytes."""
    if len(data) != 8:
        return None
    return struct.unpack(">q", data)[0]


def type_from_wire(value: int) -> str:
    """Registry type name of a wire ``Schema.type`` (unknown values count as NONE)."""
    try:
        return WireSchemaType(value).name
    except ValueError:
        return "NONE"


def type_to_wire(name: str) -> int:
    """Wire ``Schema.type`` of a registry type name (BYTES and other non-wire types: None)."""
    try:
        return int(WireSchemaType[name])
    except KeyError:
        return int(WireSchemaType.NONE)


@dataclass(frozen=True)
class StoredSchema:
    """One version of a schema history (a schema, or a delete marker)."""

    schema_id: str
    version: int
    type: str
    data: bytes
    properties: dict[str, str] = field(default_factory=dict)
    #: when the version was stored, in milliseconds since the epoch
    timestamp: int = 0
    deleted: bool = False
    user: str = ""

    @property
    def schema(self) -> SchemaData:
        """The schema of this version."""
        return SchemaData(self.type, self.data, self.properties)

    @property
    def version_bytes(self) -> bytes:
        """The version on the wire."""
        return version_to_bytes(self.version)

    def to_json(self) -> bytes:
        """The stored form."""
        return json.dumps(
            {
                "type": self.type,
                "data": base64.b64encode(self.data).decode("ascii"),
                "properties": self.properties,
                "timestamp": self.timestamp,
                "deleted": self.deleted,
                "user": self.user,
            },
            sort_keys=True,
        ).encode()

    @classmethod
    def from_json(cls, schema_id: str, version: int, raw: bytes) -> StoredSchema:
        """Read the stored form."""
        obj = json.loads(raw)
        return cls(
            schema_id,
            version,
            str(obj.get("type", "NONE")),
            base64.b64decode(obj.get("data", "")),
            {str(k): str(v) for k, v in (obj.get("properties") or {}).items()},
            int(obj.get("timestamp", 0)),
            bool(obj.get("deleted", False)),
            str(obj.get("user", "")),
        )

    def data_text(self) -> str:
        """The definition as the admin API shows it ("data"): the text of the schema, and for
        KEY_VALUE a JSON object ``{"key": ..., "value": ...}`` of the two components."""
        if self.type == "KEY_VALUE":
            try:
                key, value = split_key_value(self.schema)
            except IncompatibleSchemaError:
                return self.data.decode("utf-8", "replace")

            def component(s: SchemaData) -> Any:
                text = s.data.decode("utf-8", "replace")
                try:
                    return json.loads(text)
                except ValueError:
                    return text

            return json.dumps({"key": component(key), "value": component(value)})
        return self.data.decode("utf-8", "replace")

    def to_rest(self) -> dict[str, Any]:
        """Pulsar's GetSchemaResponse: version, type, timestamp, data, properties."""
        return {
            "version": self.version,
            "type": self.type,
            "timestamp": self.timestamp,
            "data": self.data_text(),
            "properties": dict(self.properties),
        }


def _key(schema_id: str, version: int) -> str:
    return f"{SCHEMA_KEY_PREFIX}{schema_id}/{version:012d}"


class SchemaRegistry:
    """Schema histories by schema id, persisted in a :class:`MetadataStore`."""

    def __init__(self, metadata: MetadataStore, clock: Callable[[], float] = time.time,
                 jobs: MetadataJobs | None = None) -> None:
        """Histories kept in ``metadata``, written by ``jobs`` (the metadata thread; inline without)."""
        self.metadata = metadata
        self.clock = clock
        self.jobs = jobs
        #: schema id -> its write under way (a new version or a delete), done once the history changed
        self._writing: dict[str, asyncio.Future[Any]] = {}
        #: schema id -> its history, oldest first (only ids with stored versions)
        self._cache: dict[str, list[StoredSchema]] = {}
        for key, raw in metadata.list_kv(SCHEMA_KEY_PREFIX).items():
            schema_id, _, suffix = key[len(SCHEMA_KEY_PREFIX) :].rpartition("/")
            if schema_id and suffix.isdigit():
                self._cache.setdefault(schema_id, []).append(StoredSchema.from_json(schema_id, int(suffix), raw))
        for versions in self._cache.values():
            versions.sort(key=lambda s: s.version)

    # -- reading -------------------------------------------------------------------------
    def history(self, schema_id: str) -> list[StoredSchema]:
        """Every version, delete markers included, oldest first."""
        return list(self._cache.get(schema_id, ()))

    def active(self, schema_id: str) -> list[StoredSchema]:
        """The versions since the last delete marker (empty when the latest version is one)."""
        history = self.history(schema_id)
        for i in range(len(history) - 1, -1, -1):
            if history[i].deleted:
                return history[i + 1 :]
        return history

    def latest(self, schema_id: str) -> StoredSchema | None:
        """The current schema, or None when there is none (never stored, or deleted)."""
        history = self.history(schema_id)
        if not history or history[-1].deleted:
            return None
        return history[-1]

    def get(self, schema_id: str, version: int | None = None) -> StoredSchema | None:
        """One version (the latest when ``version`` is None), or None.

        As in Pulsar, versions before the last delete are no longer served.
        """
        if version is None:
            return self.latest(schema_id)
        for stored in self.active(schema_id):
            if stored.version == version:
                return stored
        return None

    def has_schema(self, schema_id: str) -> bool:
        """Whether the id has a current schema."""
        return self.latest(schema_id) is not None

    def find_version(self, schema_id: str, schema: SchemaData) -> int | None:
        """The version holding the same definition as ``schema`` (since the last delete)."""
        for stored in self.active(schema_id):
            if same_schema(stored.schema, schema):
                return stored.version
        return None

    def schema_ids(self) -> list[str]:
        """Every schema id with a stored history, sorted."""
        return sorted(schema_id for schema_id, versions in self._cache.items() if versions)

    # -- checks --------------------------------------------------------------------------
    def check_compatible(self, schema_id: str, schema: SchemaData, strategy: Strategy) -> None:
        """IncompatibleSchemaError unless ``schema`` could be added under ``strategy``.

        A schema equal to an existing version is compatible (it would reuse that version).
        """
        validate_schema(schema)
        active = self.active(schema_id)
        if any(same_schema(s.schema, schema) for s in active):
            return
        check_compatible(_labeled(active), schema, strategy)

    def is_compatible(self, schema_id: str, schema: SchemaData, strategy: Strategy) -> tuple[bool, str]:
        """(compatible?, reason when not) — for the admin API's compatibility test."""
        try:
            self.check_compatible(schema_id, schema, strategy)
        except IncompatibleSchemaError as exc:
            return False, str(exc)
        return True, ""

    def check_consumer(self, schema_id: str, schema: SchemaData, strategy: Strategy) -> None:
        """IncompatibleSchemaError unless a consumer with ``schema`` can read the current schema.

        SchemaNotFoundError when there is no current schema.
        """
        active = self.active(schema_id)
        if not active:
            raise SchemaNotFoundError(f"{schema_id} has no schema")
        validate_schema(schema)
        check_consumer_compatible(_labeled(active), schema, strategy)

    # -- writing ---------------------------------------------------------------------------
    def put_if_absent(self, schema_id: str, schema: SchemaData, strategy: Strategy, user: str = "") -> Pending[int]:
        """The version of ``schema``: an existing one with the same definition, else a new
        version after the compatibility check (IncompatibleSchemaError when it fails)."""
        if schema_id in self._writing:
            return self._after_write(schema_id, partial(self.put_if_absent, schema_id, schema, strategy, user))
        validate_schema(schema)
        existing = self.find_version(schema_id, schema)
        if existing is not None:
            return existing
        active = self.active(schema_id)
        check_compatible(_labeled(active), schema, strategy)
        return self._append(schema_id, schema.type, schema.data, dict(schema.properties), False, user)

    def add_schema(
        self, schema_id: str, schema: SchemaData, strategy: Strategy, allow_auto_update: bool = True, user: str = ""
    ) -> Pending[int]:
        """What a producer's schema gets: :meth:`put_if_absent` when automatic updates are
        allowed, else only an existing version (IncompatibleSchemaError otherwise)."""
        if allow_auto_update:
            return self.put_if_absent(schema_id, schema, strategy, user)
        if schema_id in self._writing:
            return self._after_write(schema_id, partial(self.add_schema, schema_id, schema, strategy, False, user))
        existing = self.find_version(schema_id, schema)
        if existing is None:
            raise IncompatibleSchemaError("Schema not found and schema auto updating is disabled.")
        return existing

    def delete(self, schema_id: str, user: str = "") -> Pending[int | None]:
        """Soft delete: append a delete marker and return its version (None when there was no
        current schema, and nothing is written)."""
        if schema_id in self._writing:
            return self._after_write(schema_id, partial(self.delete, schema_id, user))
        if self.latest(schema_id) is None:
            return None
        return self._append(schema_id, "NONE", b"", {}, True, user)

    def delete_all(self, schema_id: str) -> Pending[bool]:
        """Forced delete: forget the whole history; versions start at 0 again afterwards.
        Returns False when there was nothing stored."""
        if schema_id in self._writing:
            return self._after_write(schema_id, partial(self.delete_all, schema_id))
        history = self.history(schema_id)
        if not history:
            return False
        keys = [_key(schema_id, stored.version) for stored in history]
        return self._write(schema_id, partial(_delete_keys, self.metadata, keys),
                           partial(self._cache.pop, schema_id, None), True)

    def _append(
        self, schema_id: str, type_: str, data: bytes, properties: dict[str, str], deleted: bool, user: str
    ) -> Pending[int]:
        history = self.history(schema_id)
        version = history[-1].version + 1 if history else 0
        stored = StoredSchema(
            schema_id, version, type_, bytes(data), properties, int(self.clock() * 1000), deleted, user
        )

        def appended() -> None:
            self._cache[schema_id] = [*self.history(schema_id), stored]
            if deleted:
                log.info("schema of %s deleted (version %d)", schema_id, version)
            else:
                log.info("schema of %s: new version %d (%s)", schema_id, version, type_)

        return self._write(schema_id, partial(self.metadata.put_kv, _key(schema_id, version), stored.to_json()),
                           appended, version)

    def _write(self, schema_id: str, job: Callable[[], object], then: Callable[[], object], result: T) -> Pending[T]:
        """Commit ``job`` (a metadata job when the registry has them), then ``then()`` on the loop (the
        history in memory) and ``result``; what the commit raised propagates and ``then`` is not run."""
        if self.jobs is None:
            job()
            then()
            return result
        written = asyncio.ensure_future(self.jobs(job))
        self._writing[schema_id] = written

        def done(_: object) -> None:
            if self._writing.get(schema_id) is written:
                del self._writing[schema_id]
            if not written.cancelled() and written.exception() is None:
                then()

        written.add_done_callback(done)
        return _result_of(written, result)

    async def _after_write(self, schema_id: str, again: Callable[[], Pending[T]]) -> T:
        """``again()`` (and its write) once the write of ``schema_id`` under way is done, whatever its outcome."""
        while (writing := self._writing.get(schema_id)) is not None:
            await asyncio.wait([writing])
        result = again()
        return await result if isinstance(result, Awaitable) else result  # type: ignore[return-value]


async def resolved(value: Pending[T]) -> T:
    """A write's result (:data:`Pending`), awaited when it is under way."""
    return await value if isinstance(value, Awaitable) else value  # type: ignore[return-value]


async def _result_of(written: Awaitable[object], result: T) -> T:
    await written
    # the history changes in the future's done callback, which runs before this coroutine resumes
    return result


def _delete_keys(metadata: MetadataStore, keys: list[str]) -> None:
    """(a metadata job) Delete every key of a history."""
    for key in keys:
        metadata.delete_kv(key)


def _labeled(versions: list[StoredSchema]) -> list[tuple[str, SchemaData]]:
    return [(f"version {s.version}", s.schema) for s in versions]
