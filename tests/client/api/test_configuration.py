"""The official C extension's configuration objects: call-style accessors over magnetar's options."""

from __future__ import annotations

import pytest

from magnetar.client import (
    CompressionType,
    ConsumerConfig,
    ConsumerConfiguration,
    ConsumerType,
    ProducerConfig,
    ProducerConfiguration,
)
from magnetar.client.api.arguments import InvalidArgument
from magnetar.client.exceptions import InvalidConfiguration


def test_producer_options_read_their_defaults_and_what_was_set() -> None:
    conf = ProducerConfiguration()
    assert conf.send_timeout_millis() == 30000
    assert conf.compression_type() == CompressionType.NONE
    assert conf.producer_name() == ""
    assert conf.send_timeout_millis(12) is conf  # setters chain, as the C++ ones
    conf.compression_type(CompressionType.LZ4).max_pending_messages(120)
    assert (conf.send_timeout_millis(), conf.compression_type(), conf.max_pending_messages()) == (12, CompressionType.LZ4, 120)
    assert conf.options() == {"send_timeout_millis": 12, "compression_type": CompressionType.LZ4, "max_pending_messages": 120}
    built = conf.build()
    assert isinstance(built, ProducerConfig)
    assert (built.send_timeout_millis, built.compression_type, built.max_pending_messages, built.batching_max_messages) == (
        12, CompressionType.LZ4, 120, 1000,
    )


def test_consumer_options_read_their_defaults_and_what_was_set() -> None:
    conf = ConsumerConfiguration()
    assert conf.consumer_type() == ConsumerType.Exclusive
    assert conf.consumer_name() == ""
    assert conf.replicate_subscription_state_enabled() is False
    conf.consumer_type(ConsumerType.Shared).consumer_name("my-name").replicate_subscription_state_enabled(True)
    assert conf.consumer_type() == ConsumerType.Shared
    assert conf.consumer_name() == "my-name"
    assert conf.replicate_subscription_state_enabled() is True
    conf.consumer_type(3)  # a plain int is the wire value: Key_Shared
    assert conf.consumer_type() == ConsumerType.KeyShared
    built = conf.build()
    assert isinstance(built, ConsumerConfig)
    assert (built.consumer_type, built.consumer_name, built.replicate_subscription_state_enabled) == (ConsumerType.KeyShared, "my-name", True)


def test_a_bad_value_is_refused_at_once_and_the_option_kept() -> None:
    conf = ProducerConfiguration().send_timeout_millis(12)
    with pytest.raises(InvalidArgument, match="send_timeout_millis"):
        conf.send_timeout_millis("12")
    with pytest.raises(InvalidConfiguration):
        conf.send_timeout_millis(-1)
    assert conf.send_timeout_millis() == 12
    with pytest.raises(InvalidConfiguration, match="receiver_queue_size"):
        ConsumerConfiguration().receiver_queue_size(-5)
    with pytest.raises(TypeError):
        conf.send_timeout_millis(1, 2)


def test_an_unknown_option_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_option"):
        ProducerConfiguration().no_such_option(1)
    assert "send_timeout_millis" in dir(ProducerConfiguration())
    assert not hasattr(ConsumerConfiguration(), "send_timeout_millis")
