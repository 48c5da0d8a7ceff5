"""The PRODUCER command a producer registers (and re-registers after a reconnection) with."""

from __future__ import annotations

from magnetar.client.config import ProducerConfig
from magnetar.protocol.enums import CommandType
from magnetar.protocol.schema import BaseCommand, KeyValue


def producer_command(
    config: ProducerConfig, topic: str, producer_id: int, request_id: int, name: str, user_named: bool,
    topic_epoch: int | None,
) -> BaseCommand:
    """PRODUCER for ``topic``: the name held so far (if any), the access mode, the topic epoch of
    an exclusive producer coming back, its properties, initial subscription and schema."""
    cmd = BaseCommand(type=CommandType.PRODUCER)
    p = cmd.producer
    p.topic = topic
    p.producer_id = producer_id
    p.request_id = request_id
    if name:
        p.producer_name = name
    p.user_provided_producer_name = user_named
    p.producer_access_mode = config.access_mode
    if topic_epoch is not None:
        p.topic_epoch = topic_epoch
    for k, v in config.properties.items():
        p.metadata.append(KeyValue(key=k, value=v))
    if config.initial_subscription_name:
        p.initial_subscription_name = config.initial_subscription_name
    schema = config.schema
    info = schema.schema_info() if schema is not None and hasattr(schema, "schema_info") else None
    if info is not None:
        p.schema.CopyFrom(info)
    return cmd
