"""The official client's C extension module, as far as the suite imports names from it: magnetar's
equivalents (the configuration objects with the C++ ones' call-style accessors)."""

from magnetar.client import (
    ConsumerConfiguration,
    MessageId,
    ProducerConfiguration,
    RegexSubscriptionMode,
    Result,
)
from magnetar.protocol.enums import SchemaType

__all__ = ["ConsumerConfiguration", "MessageId", "ProducerConfiguration", "RegexSubscriptionMode", "Result", "SchemaType"]
