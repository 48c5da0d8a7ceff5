"""The hand-written serialized message ids are byte for byte MessageIdData's."""

from __future__ import annotations

import random

import pytest

from magnetar.protocol.message_id_bytes import (
    message_id_bytes,
    message_id_prefix,
    message_id_suffix,
    message_id_suffixes,
)
from magnetar.protocol.schema import MessageIdData

EDGES = [0, 1, 127, 128, 16383, 16384, 2**28 - 1, 2**28, 2**31 - 1, 2**35, 2**63 - 1, 2**64 - 1]


def protobuf(ledger: int, entry: int, batch: int, partition: int, batch_size: int) -> bytes:
    mid = MessageIdData(ledger_id=ledger, entry_id=entry)
    if partition >= 0:
        mid.partition = partition
    if batch >= 0:
        mid.batch_index = batch
    if batch_size:
        mid.batch_size = batch_size
    return mid.SerializeToString()


@pytest.mark.parametrize("value", EDGES)
def test_edge_values_present_and_absent(value: int) -> None:
    small = min(value, 2**31 - 1)
    for args in [(value, value, -1, -1, 0), (1, value, small, -1, small), (value, 2, -1, small, 0), (3, 4, 0, 0, 1)]:
        assert message_id_bytes(*args) == protobuf(*args), args


def test_random_ids_and_batch_tables() -> None:
    rng = random.Random(22)
    for _ in range(3000):
        ledger, entry = rng.getrandbits(rng.choice([7, 20, 40, 64])), rng.getrandbits(rng.choice([7, 20, 64]))
        partition = rng.choice([-1, 0, rng.randrange(2**20)])
        size = rng.choice([0, 1, rng.randrange(1, 2000)])
        batch = rng.randrange(size) if size else -1
        assert message_id_bytes(ledger, entry, batch, partition, size) == protobuf(ledger, entry, batch, partition, size)
        if size:
            prefix = message_id_prefix(ledger, entry, partition)
            table = message_id_suffixes(size)
            assert prefix + table[batch] == protobuf(ledger, entry, batch, partition, size)
            assert table[batch] == message_id_suffix(batch, size)
