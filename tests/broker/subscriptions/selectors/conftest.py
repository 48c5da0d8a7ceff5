"""Stand-in consumers for selector tests: a name and an optional KeySharedMeta."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from magnetar.protocol.enums import KeySharedMode
from magnetar.protocol.schema import KeySharedMeta


@dataclass(eq=False)
class FakeConsumer:
    """What selectors look at: ``name`` and ``key_shared_meta``."""

    name: str
    key_shared_meta: KeySharedMeta | None = field(default=None)

    def __repr__(self) -> str:
        return self.name


def sticky_meta(*ranges: tuple[int, int]) -> KeySharedMeta:
    meta = KeySharedMeta(key_shared_mode=KeySharedMode.STICKY)
    for start, end in ranges:
        r = meta.hash_ranges.add()
        r.start = start
        r.end = end
    return meta


@pytest.fixture
def make_consumer():
    def make(name: str, *ranges: tuple[int, int]) -> FakeConsumer:
        return FakeConsumer(name, sticky_meta(*ranges) if ranges else None)

    return make
