"""Readers: a topic read from a position, with no durable subscription."""

from __future__ import annotations

from magnetar.client.consumer import Consumer
from magnetar.client.message import Message, MessageId
from magnetar.client.multi_topic import MultiTopicsConsumer


class Reader:
    """Reads a topic from a position, with no durable subscription."""

    def __init__(self, consumer: Consumer | MultiTopicsConsumer) -> None:
        self.consumer = consumer

    @property
    def topic(self) -> str:
        """The topic read."""
        return self.consumer.topic

    async def read_next(self, timeout_millis: int | None = None) -> Message:
        """The next message."""
        return await self.consumer.receive(timeout_millis)

    def __aiter__(self) -> Consumer | MultiTopicsConsumer:
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
