"""The names replication reserves and how they are read."""

from __future__ import annotations

from magnetar.broker.replication.names import cursor_name, is_replicator, producer_name, source_cluster


def test_names_as_pulsar_spells_them() -> None:
    assert cursor_name("west") == "pulsar.repl.west"
    assert producer_name("east", "west") == "pulsar.repl.east-->west"
    assert source_cluster("pulsar.repl.east-->west") == "east"
    assert source_cluster("standalone-1-0") is None
    assert is_replicator("pulsar.repl") and is_replicator("pulsar.replicator") and not is_replicator("pulsar-repl")
