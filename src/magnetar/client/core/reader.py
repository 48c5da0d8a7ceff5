"""Readers: a topic read from a position, with no durable subscription."""

from __future__ import annotations

from magnetar.client.api.message import Message, MessageId
from magnetar.client.core.consumer import AsyncConsumer
from magnetar.client.core.multi_topic import AsyncMultiTopicsConsumer


class AsyncReader:
    """Reads a topic from a position, with no durable subscription."""

    def __init__(self, consumer: AsyncConsumer | AsyncMultiTopicsConsumer) -> None:
        self.consumer = consumer

    @property
    def topic(self) -> str:
        """The topic read."""
        return self.consumer.topic

    async def read_next(self, timeout_millis: int | None = None) -> Message:
        """The next message."""
        return await self.consumer.receive(timeout_millis)

    def __aiter__(self) -> AsyncConsumer | AsyncMultiTopicsConsumer:
        """``async for msg in reader``: each next message, until the reader is closed."""
        return self.consumer

    async def has_message_available(self) -> bool:
        """Whether a next message exists now."""
        return await self.consumer.has_message_available()

    async def seek(self, target: MessageId | int) -> None:
        """Move to a message id or publish time."""
        await self.consumer.seek(target)

    async def close(self) -> None:
        """Close the reader."""
        await self.consumer.close()

    def is_connected(self) -> bool:
        """Whether the reader is connected."""
        return self.consumer.is_connected()
