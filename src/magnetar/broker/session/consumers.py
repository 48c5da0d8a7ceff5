"""Consumer commands of a session: SUBSCRIBE, FLOW, ACK, redelivery, seek, unsubscribe, stats."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from magnetar.broker.errors import BrokerError
from magnetar.broker.replication.names import RESERVED_SUBSCRIPTION, is_replicator
from magnetar.broker.schemas import declared_schema_from_wire
from magnetar.broker.schemas.topics import topic_is_active
from magnetar.broker.session.deferred import DeferredCommands, PendingRequest
from magnetar.broker.subscriptions.consumer import Consumer
from magnetar.broker.subscriptions.dispatchers.key_shared import check_key_shared_meta
from magnetar.broker.subscriptions.properties import store_properties
from magnetar.protocol.commands import u64
from magnetar.protocol.enums import AckType, CommandType, InitialPosition, ServerError, SubType
from magnetar.protocol.schema import BaseCommand, KeySharedMeta

if TYPE_CHECKING:
    from magnetar.broker.subscriptions.subscription import Subscription
    from magnetar.broker.topics.base import Topic
    from magnetar.protocol.framing import Frame
    from magnetar.protocol.schema import CommandSubscribe
    from magnetar.protocol.topic_name import TopicName


class _Subscribing:
    """What a SUBSCRIBE asks for, as checked before its topic is loaded."""

    __slots__ = ("req", "name", "sub_type", "consumer_name", "key_shared_meta")

    def __init__(
        self, req: CommandSubscribe, name: TopicName, sub_type: SubType, consumer_name: str,
        key_shared_meta: KeySharedMeta | None,
    ) -> None:
        self.req = req
        self.name = name
        self.sub_type = sub_type
        self.consumer_name = consumer_name
        self.key_shared_meta = key_shared_meta


class ConsumerCommands(DeferredCommands):
    """The consumer commands of a session."""

    def _on_subscribe(self, command: BaseCommand, frame: Frame) -> None:
        req = command.subscribe
        existing = self.consumers.get(req.consumer_id)
        if existing is not None:
            if existing.subscription.name == req.subscription and not existing.closed:
                self.send_success(req.request_id)
                return
            raise BrokerError(ServerError.ConsumerBusy, f"consumer id {req.consumer_id} is already in use on this connection")
        if not req.subscription:
            raise BrokerError(ServerError.InvalidTopicName, "subscription name is empty")
        if is_replicator(req.subscription):
            raise BrokerError(ServerError.ProducerBusy, RESERVED_SUBSCRIPTION)
        try:
            sub_type = SubType(req.sub_type)
        except ValueError:
            raise BrokerError(ServerError.NotAllowedError, f"unknown subscription type {req.sub_type}") from None
        consumer_name = req.consumer_name or f"consumer-{req.consumer_id}"
        key_shared_meta = None
        if sub_type == SubType.Key_Shared:
            if req.HasField("key_shared_meta"):
                key_shared_meta = KeySharedMeta()
                key_shared_meta.CopyFrom(req.key_shared_meta)
            check_key_shared_meta(key_shared_meta, consumer_name)
        self.refuse_if_pending(self.pending_consumers, req.consumer_id, "Consumer")
        name = self.service.parse_topic(req.topic)
        self.require_authorized(
            "SUBSCRIBE", lambda authz: authz.check_subscribe(name, self.role, req.subscription), name
        )
        subscribing = _Subscribing(req, name, sub_type, consumer_name, key_shared_meta)
        topic = self.service.topics.get(str(name))
        if topic is not None:
            registering = self._open_consumer(subscribing, topic)
            if registering is not None:
                request = self._hold(req.consumer_id)
                self.answer_later(command, self._open_consumer_when_registered(subscribing, registering, request))
            return
        self.answer_later(command, self._open_consumer_after_load(subscribing, self._hold(req.consumer_id)))

    async def _open_consumer_after_load(self, subscribing: _Subscribing, request: PendingRequest) -> None:
        """SUBSCRIBE to a topic not loaded: load it off the loop, then open the consumer."""
        req = subscribing.req
        try:
            topic = await self.service.load_topic(subscribing.name, create=req.force_topic_creation)
        finally:
            wanted = self.pending_done(self.pending_consumers, req.consumer_id, request)
        if wanted:
            registering = self._open_consumer(subscribing, topic)
            if registering is not None:
                await self._open_consumer_when_registered(subscribing, registering, self._hold(req.consumer_id))

    async def _open_consumer_when_registered(
        self, subscribing: _Subscribing, registering: Awaitable[None], request: PendingRequest
    ) -> None:
        """The consumer's schema is a new version being written: once it is durable, open the consumer
        as if the schema had been there (its checks made again on the topic then loaded)."""
        req = subscribing.req
        try:
            await self.durably_written(registering)
        finally:
            wanted = self.pending_done(self.pending_consumers, req.consumer_id, request)
        if not wanted:
            return
        topic = self.service.topics.get(str(subscribing.name))
        if topic is None or topic.closed:
            raise BrokerError(ServerError.ServiceNotReady, f"{subscribing.name} was unloaded meanwhile: retry")
        again = self._open_consumer(subscribing, topic)
        if again is not None:  # another write of the schema came in between: wait for it too
            await self._open_consumer_when_registered(subscribing, again, self._hold(req.consumer_id))

    def _hold(self, consumer_id: int) -> PendingRequest:
        """Hold a SUBSCRIBE's consumer id as pending (a CLOSE_CONSUMER meanwhile cancels it), at once."""
        request = self.pending_consumers[consumer_id] = PendingRequest()
        return request

    def _open_consumer(self, subscribing: _Subscribing, topic: Topic) -> Awaitable[None] | None:
        """Subscribe the consumer a SUBSCRIBE asks for on its loaded topic and answer; when its schema
        is a new version (an idle topic without one), the write under way is returned instead and
        nothing else is done (:meth:`_open_consumer_when_registered` goes on once it is durable)."""
        req, name, sub_type = subscribing.req, subscribing.name, subscribing.sub_type
        topic.check_subscribe(req.subscription, sub_type.name, req.durable)
        existing_sub = topic.subscriptions.get(req.subscription)
        if existing_sub is not None:
            existing_sub.check_can_add(sub_type)
        if topic.persistent:  # the subscribe rate policy, as Pulsar's PersistentTopic.subscribe
            topic.rate_limits.check_subscribe(self.peer_host, req.consumer_name, req.consumer_id)
        if req.HasField("schema"):
            registering = self.service.schemas.consumer_schema(
                name, declared_schema_from_wire(req.schema), topic_is_active(topic))
            if registering is not None:
                return registering
        start = None
        if req.HasField("start_message_id") and not req.durable:
            start = (req.start_message_id.ledger_id, req.start_message_id.entry_id)
        try:
            position = InitialPosition(req.initial_position)
        except ValueError:
            position = InitialPosition.Latest
        sub = topic.subscribe(
            req.subscription, durable=req.durable, initial_position=position, start_message_id=start,
            read_compacted=req.read_compacted,
        )
        consumer: Consumer[Subscription] = Consumer(
            self, req.consumer_id, subscribing.consumer_name, sub, sub_type, req.priority_level,
            req.read_compacted, {kv.key: kv.value for kv in req.metadata},
        )
        consumer.key_shared_meta = subscribing.key_shared_meta
        try:
            sub.add_consumer(consumer)
        except BrokerError:
            if not sub.consumers and not sub.durable:
                topic.remove_subscription(sub.name)
            raise
        self.consumers[req.consumer_id] = consumer
        if existing_sub is None and req.subscription_properties and req.durable and topic.persistent:
            self._keep_properties(topic.name, sub.name, {kv.key: kv.value for kv in req.subscription_properties})
        if req.replicate_subscription_state and req.durable and topic.persistent:
            self.service.replication.subscription_replicated(topic, sub.name)
        self.send_success(req.request_id)
        return None

    def _keep_properties(self, topic: str, subscription: str, properties: dict[str, str]) -> None:
        """The SUBSCRIBE that created a durable subscription gave it properties: stored off the loop."""
        metadata = self.service.metadata
        if metadata is not None:
            asyncio.get_running_loop().run_in_executor(None, store_properties, metadata, topic, subscription, properties)

    def _on_flow(self, command: BaseCommand, frame: Frame) -> None:
        flow = command.flow
        self.flow_received(flow.consumer_id, flow.message_permits)

    def flow_received(self, consumer_id: int, permits: int) -> None:
        """A FLOW: ``permits`` more messages for consumer ``consumer_id`` (the usual FLOW, read by
        hand, comes here straight from the connection)."""
        consumer = self.consumers.get(consumer_id)
        if consumer is not None:
            consumer.subscription.flow(consumer, permits)

    def _on_ack(self, command: BaseCommand, frame: Frame) -> None:
        ack = command.ack
        if ack.HasField("txnid_most_bits"):
            self.acknowledge_in_txn(command)  # type: ignore[attr-defined]  # session/transactions.py
            return
        consumer = self.consumers.get(ack.consumer_id)
        if consumer is not None:
            consumer.subscription.acknowledge(consumer, ack.ack_type == AckType.Cumulative, ack.message_id)
        if ack.HasField("request_id"):
            cmd = BaseCommand(type=CommandType.ACK_RESPONSE)
            cmd.ack_response.consumer_id = ack.consumer_id
            cmd.ack_response.request_id = ack.request_id
            if consumer is None:
                cmd.ack_response.error = ServerError.ConsumerNotFound
                cmd.ack_response.message = f"consumer {ack.consumer_id} not found"
            self.send_command(cmd)

    def _on_redeliver(self, command: BaseCommand, frame: Frame) -> None:
        req = command.redeliver_unacknowledged_messages
        consumer = self.consumers.get(req.consumer_id)
        if consumer is not None:
            ids = list(req.message_ids) if len(req.message_ids) else None
            consumer.subscription.redeliver_unacknowledged(consumer, ids)

    def _on_close_consumer(self, command: BaseCommand, frame: Frame) -> None:
        req = command.close_consumer
        self.cancel_pending(self.pending_consumers, req.consumer_id)
        consumer = self.consumers.pop(req.consumer_id, None)
        if consumer is not None:
            consumer.subscription.remove_consumer(consumer)
        self.send_success(req.request_id)

    def _on_unsubscribe(self, command: BaseCommand, frame: Frame) -> None:
        req = command.unsubscribe
        consumer = self._consumer(req.consumer_id)
        sub = consumer.subscription
        sub.topic.unsubscribe(sub, req.force, consumer)
        self.consumers.pop(req.consumer_id, None)
        self.send_success(req.request_id)

    def _consumer(self, consumer_id: int) -> Consumer[Subscription]:
        consumer = self.consumers.get(consumer_id)
        if consumer is None:
            raise BrokerError(ServerError.ConsumerNotFound, f"consumer {consumer_id} is not open on this connection")
        return consumer

    def _on_get_last_message_id(self, command: BaseCommand, frame: Frame) -> None:
        req = command.get_last_message_id
        consumer = self._consumer(req.consumer_id)
        sub = consumer.subscription
        ledger_id, entry_id, batch_index = sub.last_message_id(consumer.read_compacted)
        cmd = BaseCommand(type=CommandType.GET_LAST_MESSAGE_ID_RESPONSE)
        resp = cmd.get_last_message_id_response
        resp.request_id = req.request_id
        resp.last_message_id.ledger_id = ledger_id
        resp.last_message_id.entry_id = u64(entry_id)
        if batch_index >= 0:
            resp.last_message_id.batch_index = batch_index
        resp.consumer_mark_delete_position.ledger_id = ledger_id
        resp.consumer_mark_delete_position.entry_id = u64(sub.cursor.mark_delete)
        self.send_command(cmd)

    def _on_seek(self, command: BaseCommand, frame: Frame) -> None:
        req = command.seek
        consumer = self._consumer(req.consumer_id)
        sub = consumer.subscription
        topic = sub.topic
        if req.HasField("message_publish_time"):
            target = topic.find_entry_by_time(req.message_publish_time)
        elif req.HasField("message_id"):
            mid = req.message_id
            target = topic.start_position(mid.ledger_id, mid.entry_id)
        else:
            raise BrokerError(ServerError.NotAllowedError, "SEEK needs a message id or a publish time")
        sub.reset_cursor(target)
        self.send_success(req.request_id)

    def _on_consumer_stats(self, command: BaseCommand, frame: Frame) -> None:
        req = command.consumer_stats
        cmd = BaseCommand(type=CommandType.CONSUMER_STATS_RESPONSE)
        resp = cmd.consumer_stats_response
        resp.request_id = req.request_id
        consumer = self.consumers.get(req.consumer_id)
        if consumer is None:
            resp.error_code = ServerError.ConsumerNotFound
            resp.error_message = f"consumer {req.consumer_id} is not open on this connection"
        else:
            sub = consumer.subscription
            resp.consumer_name = consumer.name
            resp.available_permits = max(0, consumer.permits)
            resp.unacked_messages = consumer.unacked_messages
            resp.blocked_consumer_on_unacked_msgs = consumer.blocked
            resp.address = self.peer
            resp.connected_since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(consumer.connected_since))
            resp.type = sub.sub_type.name if sub.sub_type is not None else ""
            resp.msg_backlog = sub.backlog()
            resp.msg_rate_out = 0.0
            resp.msg_throughput_out = 0.0
            resp.msg_rate_redeliver = 0.0
            resp.msg_rate_expired = 0.0
        self.send_command(cmd)
