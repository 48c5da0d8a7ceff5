"""Session commands that are not about one producer or consumer.

PING / PONG, PARTITIONED_METADATA, LOOKUP, GET_TOPICS_OF_NAMESPACE, GET_SCHEMA and
GET_OR_CREATE_SCHEMA: they ask the service about names, namespaces and schemas. Each one that
Pulsar authorizes is checked against the session's role first (CONNECT is in auth.py).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from magnetar.broker.errors import BrokerError
from magnetar.broker.schemas import schema_from_wire, version_from_bytes, version_to_bytes
from magnetar.broker.schemas.registry import type_to_wire
from magnetar.broker.session.deferred import DeferredCommands
from magnetar.protocol import commands
from magnetar.protocol.enums import (
    CommandType,
    LookupType,
    PartitionedMetadataResult,
    ServerError,
    TopicsMode,
)
from magnetar.protocol.schema import BaseCommand
from magnetar.protocol.topic_name import is_transaction_coordinator_assign

if TYPE_CHECKING:
    from magnetar.protocol.framing import Frame
    from magnetar.protocol.schema import CommandGetOrCreateSchema
    from magnetar.protocol.topic_name import TopicName

# The coordinator-assign topic has one partition per transaction coordinator, all served here; with
# transactions disabled it has none (as on a Pulsar broker without them), so that a client that
# enables transactions learns it from its own check or from TC_CLIENT_CONNECT's refusal.


class LookupCommands(DeferredCommands):
    """Connection-level, lookup and schema commands of a session."""

    def _on_ping(self, command: BaseCommand, frame: Frame) -> None:
        self.write(commands.PONG_FRAME)

    def _on_pong(self, command: BaseCommand, frame: Frame) -> None:
        pass

    def _on_partitioned_metadata(self, command: BaseCommand, frame: Frame) -> None:
        req = command.partition_metadata
        cmd = BaseCommand(type=CommandType.PARTITIONED_METADATA_RESPONSE)
        resp = cmd.partition_metadata_response
        resp.request_id = req.request_id
        try:
            name = self.service.parse_topic(req.topic)
            self.require_authorized(
                "PARTITIONED_METADATA", lambda authz: authz.check_lookup(name, self.role, "partitioned_metadata"), name
            )
            if is_transaction_coordinator_assign(name):
                transactions = self.service.transactions
                resp.partitions = transactions.count if transactions is not None else 0
            else:
                self.service.check_namespace(name)
                known = self.service.known_partitions(name, req.metadata_auto_creation_enabled)
                if known is None:  # may create a partitioned topic: a job of the metadata thread
                    self.after_metadata_job(command, partial(self._auto_create, name),
                                            lambda partitions: self._send_partitions(cmd, partitions))
                    return
                resp.partitions = known
            resp.response = PartitionedMetadataResult.Success
        except BrokerError as exc:
            resp.response = PartitionedMetadataResult.Failed
            resp.error = exc.code
            resp.message = exc.message
        self.send_command(cmd)

    def _auto_create(self, name: TopicName) -> int | BrokerError:
        """(the metadata thread) The partitions of a topic auto-creation may make partitioned, or the
        refusal (the namespace's topic limit)."""
        try:
            return self.service.auto_create_partitioned(name)
        except BrokerError as exc:
            return exc

    def _send_partitions(self, cmd: BaseCommand, partitions: int | BrokerError) -> None:
        """PARTITIONED_METADATA_RESPONSE with a topic's partition count (or its refusal)."""
        resp = cmd.partition_metadata_response
        if isinstance(partitions, BrokerError):
            resp.response = PartitionedMetadataResult.Failed
            resp.error = partitions.code
            resp.message = partitions.message
        else:
            resp.partitions = partitions
            resp.response = PartitionedMetadataResult.Success
        self.send_command(cmd)

    def _on_lookup(self, command: BaseCommand, frame: Frame) -> None:
        req = command.lookup_topic
        cmd = BaseCommand(type=CommandType.LOOKUP_RESPONSE)
        resp = cmd.lookup_topic_response
        resp.request_id = req.request_id
        try:
            if req.advertised_listener_name and req.advertised_listener_name != "internal":
                raise BrokerError(
                    ServerError.ServiceNotReady,
                    f"the broker do not have {req.advertised_listener_name} listener",
                )
            name = self.service.parse_topic(req.topic)
            self.require_authorized("LOOKUP", lambda authz: authz.check_lookup(name, self.role), name)
            if not is_transaction_coordinator_assign(name):
                self.service.check_namespace(name)
            config = self.service.config
            resp.response = LookupType.Connect
            # clients on pulsar+ssl:// connect to the TLS URL, the others to the plain one (as in Pulsar)
            resp.broker_service_url = config.broker_service_url
            resp.broker_service_url_tls = config.broker_service_url_tls or config.broker_service_url
            resp.authoritative = True
        except BrokerError as exc:
            resp.response = LookupType.Failed
            resp.error = exc.code
            resp.message = exc.message
        self.send_command(cmd)

    def _on_get_topics_of_namespace(self, command: BaseCommand, frame: Frame) -> None:
        req = command.get_topics_of_namespace
        self.require_authorized(
            "GET_TOPICS_OF_NAMESPACE", lambda authz: authz.check_topics_of_namespace(req.namespace, self.role)
        )
        cmd = BaseCommand(type=CommandType.GET_TOPICS_OF_NAMESPACE_RESPONSE)
        resp = cmd.get_topics_of_namespace_response
        resp.request_id = req.request_id
        resp.filtered = False
        resp.changed = True
        # a namespace that does not exist has no topics (as Pulsar answers; clients retry errors)
        if self.service.metadata.get_namespace(req.namespace) is None:
            self.send_command(cmd)
            return
        # the stored names are read in a worker thread: answered once they are in
        self.answer_later(command, self._send_topics(cmd, req.namespace, TopicsMode(req.mode)))

    async def _send_topics(self, cmd: BaseCommand, namespace: str, mode: TopicsMode) -> None:
        """GET_TOPICS_OF_NAMESPACE_RESPONSE with the namespace's topics (a closed session gets nothing)."""
        topics = await self.service.topics_of_namespace(namespace, mode)
        if not self.closed:
            cmd.get_topics_of_namespace_response.topics.extend(topics)
            self.send_command(cmd)

    def _on_get_schema(self, command: BaseCommand, frame: Frame) -> None:
        req = command.get_schema
        cmd = BaseCommand(type=CommandType.GET_SCHEMA_RESPONSE)
        resp = cmd.get_schema_response
        resp.request_id = req.request_id
        try:
            name = self.service.parse_topic(req.topic)
            self.require_authorized("GET_SCHEMA", lambda authz: authz.check_lookup(name, self.role, "schema"))
            version = None
            if req.HasField("schema_version") and req.schema_version:
                version = version_from_bytes(req.schema_version)
                if version is None:
                    raise BrokerError(
                        ServerError.TopicNotFound,
                        f"Topic not found or no-schema: {req.topic} (schema version must be 8 bytes)",
                    )
            stored = self.service.schemas.get_for_client(name, version)
        except BrokerError as exc:
            resp.error_code = exc.code if exc.code == ServerError.AuthorizationError else ServerError.TopicNotFound
            resp.error_message = exc.message
        else:
            resp.schema.name = stored.schema_id
            resp.schema.type = type_to_wire(stored.type)
            resp.schema.schema_data = stored.data
            for key, value in sorted(stored.properties.items()):
                kv = resp.schema.properties.add()
                kv.key = key
                kv.value = value
            resp.schema_version = stored.version_bytes
        self.send_command(cmd)

    def _on_get_or_create_schema(self, command: BaseCommand, frame: Frame) -> None:
        req = command.get_or_create_schema
        try:
            name = self.service.parse_topic(req.topic)
            self.require_authorized("GET_OR_CREATE_SCHEMA", lambda authz: authz.check_schema_update(name, self.role))
        except BrokerError as exc:
            self._send_schema_version(req.request_id, None, exc)
            return
        if str(name) in self.service.topics:
            self._get_or_create_schema(command, req, name)
        else:
            self.answer_later(command, self._get_or_create_schema_after_load(command, req, name))

    async def _get_or_create_schema_after_load(
        self, command: BaseCommand, req: CommandGetOrCreateSchema, name: TopicName
    ) -> None:
        """GET_OR_CREATE_SCHEMA of a topic not loaded: load it off the loop (it must exist), then answer."""
        try:
            await self.service.load_topic(name, create=False)
        except BrokerError as exc:
            self._send_schema_version(req.request_id, None, exc)
            return
        if not self.closed:
            self._get_or_create_schema(command, req, name)

    def _get_or_create_schema(self, command: BaseCommand, req: CommandGetOrCreateSchema, name: TopicName) -> None:
        """Register (or find) the schema a GET_OR_CREATE_SCHEMA carries for a loaded topic and answer
        (a new version once it is durable)."""
        try:
            schema = schema_from_wire(req.schema) if req.HasField("schema") else None
            self.after_metadata_write(
                command,
                lambda: self.service.schemas.producer_schema(name, schema),
                lambda version: self._send_schema_version(req.request_id, version, None),
                refused=lambda exc: self._send_schema_version(req.request_id, None, exc),
            )
        except BrokerError as exc:
            self._send_schema_version(req.request_id, None, exc)

    def _send_schema_version(self, request_id: int, version: int | None, error: BrokerError | None) -> None:
        cmd = BaseCommand(type=CommandType.GET_OR_CREATE_SCHEMA_RESPONSE)
        resp = cmd.get_or_create_schema_response
        resp.request_id = request_id
        if error is not None:
            resp.error_code = error.code
            resp.error_message = error.message
        else:
            resp.schema_version = version_to_bytes(version) if version is not None else b""
        self.send_command(cmd)
