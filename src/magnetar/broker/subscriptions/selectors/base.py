"""What every Key_Shared consumer selector offers, and the sticky-key hash they work on.

A selector maps the hash of a message's sticky key to the consumer that owns it. Hashes are
Pulsar's: Murmur3 32-bit (seed 0) of the key's bytes with the sign bit cleared (Java's
``Murmur3_32Hash.makeHash``). The hash-range selectors use the hash modulo 65536, its *slot*;
the consistent-hashing selector places it on a ring of 2^31 positions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from magnetar.broker.errors import BrokerError
from magnetar.protocol.enums import ServerError
from magnetar.protocol.hashing import HASH_RANGE_SIZE, murmur3_32

if TYPE_CHECKING:
    from magnetar.broker.subscriptions.consumer import Consumer

__all__ = [
    "HASH_RANGE_SIZE",
    "MAX_SLOT",
    "ConsumerSelector",
    "assign_error",
    "sticky_key_hash",
]

#: highest slot of the Key_Shared hash range (ranges cover 0 .. MAX_SLOT inclusive)
MAX_SLOT = HASH_RANGE_SIZE - 1

_INT31 = 0x7FFFFFFF


def sticky_key_hash(key: bytes) -> int:
    """Hash of a sticky key: Murmur3 32-bit of ``key`` with the sign bit cleared (0 .. 2^31 - 1).

    ``sticky_key_hash(key) % 65536`` is the key's slot on the hash range, the same value as
    :func:`magnetar.protocol.hashing.key_shared_hash`.
    """
    return murmur3_32(key) & _INT31


def assign_error(message: str) -> BrokerError:
    """The error refusing a consumer the selector cannot place."""
    return BrokerError(ServerError.ConsumerAssignError, message)


class ConsumerSelector(Protocol):
    """Picks the consumer for a sticky-key hash; tracks which part of the key space each owns."""

    def add_consumer(self, consumer: Consumer) -> None:
        """Give the consumer a share of the keys; raise ConsumerAssignError (changing nothing) if impossible."""

    def remove_consumer(self, consumer: Consumer) -> None:
        """Hand the consumer's keys to the others (no-op for an unknown consumer)."""

    def select(self, hash_: int) -> Consumer | None:
        """The consumer owning ``hash_`` (a :func:`sticky_key_hash`), or None when nobody does."""

    def ranges(self) -> dict[Consumer, list[tuple[int, int]]]:
        """Inclusive (start, end) ranges owned by each consumer, in ascending order (for stats)."""
