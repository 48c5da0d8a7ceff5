"""Option values: topic and subscription lists, payloads, enum names, limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from magnetar.cli.perf.options import (
    ConsumerSettings,
    PerfOptionError,
    ProducerSettings,
    expand_subscriptions,
    expand_topics,
    make_payloads,
    parse_compression,
    parse_key_mode,
    parse_position,
    parse_subscription_type,
)
from magnetar.protocol.enums import CompressionType, InitialPosition, SubType


def test_num_topics_numbers_one_name_as_pulsar_perf_does() -> None:
    assert expand_topics(["t"], 1) == ["t"]
    assert expand_topics(["t"], 3) == ["t-0", "t-1", "t-2"]
    assert expand_topics(["t"], 2, separator="_") == ["t_0", "t_1"]
    assert expand_topics(["a", "b"], 2) == ["a", "b"]
    with pytest.raises(PerfOptionError, match="needs one topic name"):
        expand_topics(["a", "b"], 3)
    with pytest.raises(PerfOptionError, match="at least 1"):
        expand_topics(["a"], 0)


def test_num_subscriptions_numbers_one_name() -> None:
    assert expand_subscriptions(["sub"], 1) == ["sub"]
    assert expand_subscriptions(["sub"], 2) == ["sub-0", "sub-1"]
    with pytest.raises(PerfOptionError):
        expand_subscriptions(["a", "b"], 3)


def test_payloads_are_random_capitals_of_the_size_or_the_records_of_a_file(tmp_path: Path) -> None:
    (payload,) = make_payloads(64)
    assert len(payload) == 64 and payload.isalpha() and payload.isupper()
    assert make_payloads(0) == [b""]
    records = tmp_path / "records.txt"
    records.write_bytes(b"one\ntwo\n\nthree\n")
    assert make_payloads(10, records) == [b"one", b"two", b"three"]
    assert make_payloads(10, records, delimiter="t") == [b"one\n", b"wo\n\n", b"hree\n"]
    with pytest.raises(PerfOptionError, match="cannot read"):
        make_payloads(10, tmp_path / "missing")
    with pytest.raises(PerfOptionError, match="negative"):
        make_payloads(-1)


def test_enum_names_in_any_case() -> None:
    assert parse_compression("lz4") is CompressionType.LZ4
    assert parse_subscription_type("key-shared") is SubType.Key_Shared
    assert parse_subscription_type("KeyShared") is SubType.Key_Shared
    assert parse_position("earliest") is InitialPosition.Earliest
    assert parse_key_mode("AUTOINCREMENT") == "autoIncrement" and parse_key_mode(None) is None
    with pytest.raises(PerfOptionError, match="--compression: unknown value 'gzip'"):
        parse_compression("gzip")


def test_settings_refuse_impossible_values() -> None:
    with pytest.raises(PerfOptionError, match="--rate"):
        ProducerSettings(["t"], rate=-1)
    with pytest.raises(PerfOptionError, match="--num-producers"):
        ProducerSettings(["t"], producers_per_topic=0)
    with pytest.raises(PerfOptionError, match="--receiver-queue-size"):
        ConsumerSettings(["t"], ["s"], receiver_queue_size=0)


def test_producer_options_follow_the_flags() -> None:
    options = ProducerSettings(["t"], batch_max_messages=10, batch_delay_ms=2.5,
                               compression=CompressionType.ZSTD, batching=False).producer_options()
    assert options["batching_max_messages"] == 10 and options["batching_max_publish_delay_ms"] == 2.5
    assert options["compression_type"] is CompressionType.ZSTD and options["batching_enabled"] is False
