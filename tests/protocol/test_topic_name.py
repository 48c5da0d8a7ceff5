"""Topic names: short and full forms, domains, partitions, invalid names."""

from __future__ import annotations

import pytest

from magnetar.protocol.topic_name import PARTITION_SUFFIX, InvalidTopicNameError, TopicName


def test_short_name_goes_to_public_default() -> None:
    name = TopicName.parse("my-topic")
    assert name == TopicName("persistent", "public", "default", "my-topic")
    assert str(name) == "persistent://public/default/my-topic"
    assert name.namespace == "public/default"
    assert name.persistent


def test_three_part_short_name() -> None:
    name = TopicName.parse("tenant/ns/topic")
    assert str(name) == "persistent://tenant/ns/topic"
    assert name.tenant == "tenant" and name.namespace_part == "ns" and name.local_name == "topic"


def test_full_names() -> None:
    name = TopicName.parse("persistent://t1/ns.1/a_b:c=d.e-f")
    assert (name.domain, name.tenant, name.namespace_part, name.local_name) == (
        "persistent",
        "t1",
        "ns.1",
        "a_b:c=d.e-f",
    )
    assert TopicName.parse(str(name)) == name


def test_non_persistent() -> None:
    name = TopicName.parse("non-persistent://public/default/events")
    assert not name.persistent
    assert name.domain == "non-persistent"
    assert str(name) == "non-persistent://public/default/events"


def test_names_are_hashable_values() -> None:
    assert {TopicName.parse("x"), TopicName.parse("persistent://public/default/x")} == {TopicName.parse("x")}


def test_partition_suffix_parsing() -> None:
    name = TopicName.parse("persistent://t/ns/orders-partition-12")
    assert name.partition_index == 12
    assert name.partitioned_parent == TopicName.parse("persistent://t/ns/orders")
    assert TopicName.parse("t/ns/orders").partition_index == -1


def test_partition_parent_of_a_plain_topic_is_itself() -> None:
    name = TopicName.parse("plain")
    assert name.partitioned_parent is name


def test_only_the_last_partition_suffix_counts() -> None:
    name = TopicName.parse("a-partition-2-partition-5")
    assert name.partition_index == 5
    assert name.partitioned_parent.local_name == "a-partition-2"


@pytest.mark.parametrize("local", ["t-partition-", "t-partition-x", "t-partition--1", "t-partitions-3"])
def test_not_a_partition(local: str) -> None:
    assert TopicName.parse(local).partition_index == -1


def test_partition_creation_round_trips() -> None:
    parent = TopicName.parse("non-persistent://t/ns/topic")
    for i in (0, 1, 99):
        part = parent.partition(i)
        assert str(part) == f"non-persistent://t/ns/topic{PARTITION_SUFFIX}{i}"
        assert part.partition_index == i
        assert part.partitioned_parent == parent
        assert TopicName.parse(str(part)) == part


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "bad://t/ns/topic",
        "PERSISTENT://t/ns/topic",
        "http://t/ns/topic",
        "persistent://t/ns",
        "persistent://t/cluster/ns/topic",
        "persistent://topic",
        "t/ns",
        "a/b/c/d",
        "persistent:///ns/topic",
        "/ns/topic",
        "persistent://t//topic",
        "persistent://t/ns/",
        "t/ns/",
        "persistent://t t/ns/topic",
        "persistent://t/n$s/topic",
        " topic",
        "topic ",
        "persistent://t/ns/top\x00ic",
    ],
)
def test_invalid_names_raise(bad: str) -> None:
    with pytest.raises(InvalidTopicNameError):
        TopicName.parse(bad)


def test_non_string_raises_invalid_topic_name() -> None:
    with pytest.raises(InvalidTopicNameError):
        TopicName.parse(b"persistent://t/ns/topic")  # type: ignore[arg-type]
    with pytest.raises(InvalidTopicNameError):
        TopicName.parse(None)  # type: ignore[arg-type]


def test_invalid_topic_name_error_is_a_value_error() -> None:
    assert issubclass(InvalidTopicNameError, ValueError)


def test_tenant_and_namespace_are_ascii_only() -> None:
    with pytest.raises(InvalidTopicNameError):
        TopicName.parse("persistent://tenänt/ns/topic")
