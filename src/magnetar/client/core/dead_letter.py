"""Dead letter and retry letter topics of a consumer (as the Java client does them).

A message redelivered ``max_redeliver_count`` times is published to the dead letter topic
(default ``<topic>-<subscription>-DLQ``) with REAL_TOPIC and ORIGIN_MESSAGE_ID, then
acknowledged. ``reconsume_later`` publishes a message to the retry letter topic (default
``<topic>-<subscription>-RETRY``) with RECONSUMETIMES and DELAY_TIME, delivered after the delay,
or to the dead letter topic once it was retried ``max_redeliver_count`` times. The producers are
created on first use and closed with the consumer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from magnetar.client.api.config import ProducerConfig
from magnetar.client.api.message import Message, MessageId
from magnetar.client.api.policies import ConsumerDeadLetterPolicy
from magnetar.client.exceptions import PulsarError
from magnetar.protocol.topic_name import TopicName

if TYPE_CHECKING:
    from magnetar.client.core.handler import ClientContext
    from magnetar.client.core.producer import AsyncProducer

log = logging.getLogger("magnetar.client.core.consumer")

EntryKey = tuple[int, int]

#: property names of dead letter and retry messages (as the Java client)
REAL_TOPIC = "REAL_TOPIC"
ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
RECONSUMETIMES = "RECONSUMETIMES"
DELAY_TIME = "DELAY_TIME"


class DeadLetterHandler:
    """The dead letter and retry letter producers of a consumer (created on first use)."""

    def __init__(self, client: ClientContext, policy: ConsumerDeadLetterPolicy, topic: str, subscription: str, consumer_name: str) -> None:
        base = str(TopicName.parse(topic).partitioned_parent)
        self.client = client
        self.policy = policy
        self.max_redeliver_count = policy.max_redeliver_count
        self.dead_letter_topic = policy.dead_letter_topic or f"{base}-{subscription}-DLQ"
        self.retry_letter_topic = policy.retry_letter_topic or f"{base}-{subscription}-RETRY"
        self.producer_name = f"{base}-{subscription}-{consumer_name}-DLQ"
        self._dlq: asyncio.Task | None = None
        self._retry: asyncio.Task | None = None
        self.schema: Any = None

    async def _make(self, topic: str, name: str | None, initial_subscription: str | None) -> AsyncProducer:
        config = ProducerConfig(
            producer_name=name, batching_enabled=False, chunking_enabled=True, block_if_queue_full=False,
            initial_subscription_name=initial_subscription, schema=self.schema,
        )
        return await self.client._new_producer(topic, config)

    async def dlq_producer(self) -> AsyncProducer:
        """The dead letter topic's producer."""
        if self._dlq is None or (self._dlq.done() and self._dlq.exception() is not None):
            self._dlq = asyncio.get_running_loop().create_task(
                self._make(self.dead_letter_topic, self.producer_name, self.policy.initial_subscription_name)
            )
        return await asyncio.shield(self._dlq)

    async def retry_producer(self) -> AsyncProducer:
        """The retry letter topic's producer."""
        if self._retry is None or (self._retry.done() and self._retry.exception() is not None):
            self._retry = asyncio.get_running_loop().create_task(self._make(self.retry_letter_topic, None, None))
        return await asyncio.shield(self._retry)

    async def send(self, producer: AsyncProducer, msg: Message, properties: dict[str, str], deliver_after: float | None = None) -> MessageId:
        """Publish ``msg`` (payload, key, ordering key, event time) with ``properties``."""
        return await producer.send(
            msg.data(),
            properties=properties,
            partition_key=msg.partition_key() if msg.has_key() else None,
            ordering_key=msg.ordering_key() or None,
            event_timestamp=msg.event_timestamp() or None,
            deliver_after=deliver_after if deliver_after else None,
            raw=True,
        )

    async def send_to_dlq(self, msg: Message, properties: dict[str, str] | None = None) -> MessageId:
        """Publish a message to the dead letter topic with REAL_TOPIC and ORIGIN_MESSAGE_ID."""
        props = dict(msg.properties()) if properties is None else properties
        props.setdefault(REAL_TOPIC, msg.topic_name())
        props.setdefault(ORIGIN_MESSAGE_ID, msg.message_id().java_str())
        return await self.send(await self.dlq_producer(), msg, props)

    async def dead_letter(
        self,
        keys: list[EntryKey],
        messages_of: dict[EntryKey, list[Message]],
        consumer_name: str,
        redeliver: Callable[[list[EntryKey]], None],
        acknowledge: Callable[[Message], None],
    ) -> None:
        """Publish the messages of these entries to the dead letter topic, then acknowledge them.

        ``messages_of`` maps each entry to the messages delivered from it (its chunks share
        one list); an entry that cannot be published is redelivered instead.
        """
        done: set[int] = set()
        for key in keys:
            messages = messages_of.get(key)
            if not messages or id(messages) in done:
                continue
            done.add(id(messages))
            entries = messages[0]._id.chunk_entries()
            try:
                for msg in messages:
                    await self.send_to_dlq(msg)
            except PulsarError as exc:
                log.warning("consumer %s: could not publish %s to the dead letter topic %s (%s): redelivering",
                            consumer_name, key, self.dead_letter_topic, exc)
                redeliver(entries)
                continue
            for k in entries:
                messages_of.pop(k, None)
            for msg in messages:
                acknowledge(msg)

    async def reconsume_later(self, message: Message, delay: Any, properties: dict[str, str] | None) -> None:
        """Publish ``message`` to the retry letter topic, to come back after ``delay`` seconds (or a
        timedelta), or to the dead letter topic once it was retried max_redeliver_count times."""
        seconds = delay.total_seconds() if hasattr(delay, "total_seconds") else float(delay)
        props = dict(message.properties())
        if properties:
            props.update(properties)
        times = int(props.get(RECONSUMETIMES, "0") or 0) + 1
        props[RECONSUMETIMES] = str(times)
        props[DELAY_TIME] = str(int(seconds * 1000))
        props.setdefault(REAL_TOPIC, message.topic_name())
        props.setdefault(ORIGIN_MESSAGE_ID, message.message_id().java_str())
        if times > self.max_redeliver_count:
            await self.send_to_dlq(message, props)
        else:
            await self.send(await self.retry_producer(), message, props, deliver_after=seconds)

    async def close(self) -> None:
        """Close the producers that were created."""
        for task in (self._dlq, self._retry):
            if task is not None and task.done() and task.exception() is None:
                await task.result().close()
            elif task is not None:
                task.cancel()
