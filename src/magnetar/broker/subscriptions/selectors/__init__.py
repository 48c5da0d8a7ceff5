"""Key_Shared consumer selectors: which consumer owns each sticky-key hash.

* :class:`HashRangeAutoSplitSelector` (AUTO_SPLIT mode, broker setting
  ``key_shared_selector = "auto_split_hash_range"``, the default),
* :class:`ConsistentHashingSelector` (AUTO_SPLIT mode with ``key_shared_selector =
  "consistent_hashing"``),
* :class:`StickyRangeSelector` (STICKY mode: consumer-declared ranges).
"""

from __future__ import annotations

from magnetar.broker.subscriptions.selectors.base import HASH_RANGE_SIZE, ConsumerSelector, sticky_key_hash
from magnetar.broker.subscriptions.selectors.consistent_hashing import ConsistentHashingSelector
from magnetar.broker.subscriptions.selectors.hash_range import HashRangeAutoSplitSelector
from magnetar.broker.subscriptions.selectors.sticky import StickyRangeSelector, validate_ranges
from magnetar.protocol.enums import KeySharedMode

#: values of the broker setting ``key_shared_selector``
AUTO_SPLIT_SELECTORS = ("auto_split_hash_range", "consistent_hashing")

__all__ = [
    "AUTO_SPLIT_SELECTORS",
    "HASH_RANGE_SIZE",
    "ConsistentHashingSelector",
    "ConsumerSelector",
    "HashRangeAutoSplitSelector",
    "StickyRangeSelector",
    "make_selector",
    "sticky_key_hash",
    "validate_ranges",
]


def make_selector(mode: KeySharedMode, auto_split: str = "auto_split_hash_range") -> ConsumerSelector:
    """A new selector for a Key_Shared subscription of ``mode``."""
    if mode == KeySharedMode.STICKY:
        return StickyRangeSelector()
    if auto_split == "consistent_hashing":
        return ConsistentHashingSelector()
    if auto_split == "auto_split_hash_range":
        return HashRangeAutoSplitSelector()
    raise ValueError(f"unknown key_shared_selector {auto_split!r}; expected one of {AUTO_SPLIT_SELECTORS}")
