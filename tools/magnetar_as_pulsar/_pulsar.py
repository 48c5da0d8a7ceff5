"""The official client's C extension module, as far as the suite imports names from it: magnetar's
equivalents (its configuration objects are not the C++ ones: tests that call their setters fail)."""

from magnetar.client import ConsumerConfig as ConsumerConfiguration
from magnetar.client import MessageId, RegexSubscriptionMode, Result
from magnetar.client import ProducerConfig as ProducerConfiguration
from magnetar.protocol.enums import SchemaType

__all__ = ["ConsumerConfiguration", "MessageId", "ProducerConfiguration", "RegexSubscriptionMode", "Result", "SchemaType"]
