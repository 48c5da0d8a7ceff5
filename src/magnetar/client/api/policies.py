"""Consumer policies, named as in the official Python client: batch receive, Key_Shared, dead
letters, redelivery backoff, regex subscription modes."""

from __future__ import annotations

import math
from enum import IntEnum

from magnetar.client.api.arguments import InvalidArgument
from magnetar.client.exceptions import InvalidConfiguration
from magnetar.protocol.enums import KeySharedMode, TopicsMode
from magnetar.protocol.hashing import HASH_RANGE_SIZE

#: suffixes of the default dead letter and retry letter topics (as the Java client)
DLQ_SUFFIX = "-DLQ"
RETRY_SUFFIX = "-RETRY"
#: max_redeliver_count when retries are enabled without a dead letter policy (Java's default)
DEFAULT_MAX_RECONSUME_TIMES = 16


#: the official Python client's name of each Key_Shared mode
_MODE_NAMES = {KeySharedMode.AUTO_SPLIT: "AutoSplit", KeySharedMode.STICKY: "Sticky"}


class RegexSubscriptionMode(IntEnum):
    """Which topics a pattern subscription considers (same values as TopicsMode)."""

    PersistentOnly = 0
    NonPersistentOnly = 1
    AllTopics = 2


def topics_mode(mode: int) -> TopicsMode:
    """The wire TopicsMode of a RegexSubscriptionMode or TopicsMode value."""
    try:
        return TopicsMode(int(mode))
    except ValueError:
        raise InvalidConfiguration(f"unknown regex subscription mode {mode!r}") from None


class ConsumerBatchReceivePolicy:
    """Limits of one ``batch_receive``: it returns once ``max_num_message`` messages or
    ``max_num_bytes`` bytes are there, or ``timeout_ms`` passed (whichever first). A value below
    1 means "no limit"; at least one limit must be set. Defaults as the Java client: -1
    messages, 10 MiB, 100 ms."""

    def __init__(self, max_num_message: int = -1, max_num_bytes: int = 10 * 1024 * 1024, timeout_ms: int = 100) -> None:
        if max_num_message <= 0 and max_num_bytes <= 0 and timeout_ms <= 0:
            raise InvalidConfiguration(
                "batch receive policy: at least one of max_num_message, max_num_bytes, timeout_ms must be positive"
            )
        self.max_num_message = int(max_num_message)
        self.max_num_bytes = int(max_num_bytes)
        self.timeout_ms = int(timeout_ms)

    def can_add(self, count: int, size: int, message_size: int) -> bool:
        """Whether a message of ``message_size`` bytes still fits a batch of ``count`` messages and
        ``size`` bytes (the first message always does)."""
        if count == 0:
            return True
        if 0 < self.max_num_message <= count:
            return False
        return not (self.max_num_bytes > 0 and size + message_size > self.max_num_bytes)

    def enough(self, count: int, size: int) -> bool:
        """Whether a batch of ``count`` messages and ``size`` bytes is complete."""
        return (0 < self.max_num_message <= count) or (0 < self.max_num_bytes <= size)

    def __repr__(self) -> str:
        return (f"ConsumerBatchReceivePolicy(max_num_message={self.max_num_message}, "
                f"max_num_bytes={self.max_num_bytes}, timeout_ms={self.timeout_ms})")


class ConsumerKeySharedPolicy:
    """Key_Shared options: the mode (auto split, or sticky hash ranges this consumer owns) and
    whether the broker may deliver out of order when consumers join."""

    def __init__(
        self,
        key_shared_mode: KeySharedMode = KeySharedMode.AutoSplit,
        allow_out_of_order_delivery: bool = False,
        sticky_ranges: list[tuple[int, int]] | None = None,
    ) -> None:
        mode = KeySharedMode(int(key_shared_mode))
        if mode == KeySharedMode.Sticky and not sticky_ranges:
            raise InvalidArgument("Key_Shared policy: the Sticky mode needs sticky_ranges")
        ranges = [(int(a), int(b)) for a, b in (sticky_ranges or [])]
        for start, end in ranges:
            if not 0 <= start <= end < HASH_RANGE_SIZE:
                raise InvalidArgument(
                    f"Key_Shared policy: range [{start}, {end}] is not within [0, {HASH_RANGE_SIZE - 1}] with start <= end"
                )
        ordered = sorted(ranges)
        for (s1, e1), (s2, e2) in zip(ordered, ordered[1:], strict=False):
            if s2 <= e1:
                raise InvalidArgument(f"Key_Shared policy: ranges [{s1}, {e1}] and [{s2}, {e2}] overlap")
        self.key_shared_mode = mode
        self.allow_out_of_order_delivery = bool(allow_out_of_order_delivery)
        self.sticky_ranges = ranges

    def fill(self, meta: object) -> None:
        """Fill a SUBSCRIBE command's KeySharedMeta."""
        meta.key_shared_mode = int(self.key_shared_mode)  # type: ignore[attr-defined]
        meta.allow_out_of_order_delivery = self.allow_out_of_order_delivery  # type: ignore[attr-defined]
        if self.key_shared_mode == KeySharedMode.Sticky:
            for start, end in self.sticky_ranges:
                r = meta.hash_ranges.add()  # type: ignore[attr-defined]
                r.start = start
                r.end = end

    def __repr__(self) -> str:
        return (f"ConsumerKeySharedPolicy({_MODE_NAMES[self.key_shared_mode]}, allow_out_of_order_delivery="
                f"{self.allow_out_of_order_delivery}, sticky_ranges={self.sticky_ranges})")


class ConsumerDeadLetterPolicy:
    """Dead letters: after ``max_redeliver_count`` redeliveries a message is published to
    ``dead_letter_topic`` (default ``<topic>-<subscription>-DLQ``) and acknowledged. With retries
    enabled, ``retry_letter_topic`` (default ``<topic>-<subscription>-RETRY``) receives what
    ``reconsume_later`` sends. ``initial_subscription_name`` is created on the dead letter topic
    with its producer, so nothing published there is lost before someone subscribes. A topic or
    subscription name not given reads as "" (as in the official client): the default."""

    def __init__(
        self,
        max_redeliver_count: int,
        dead_letter_topic: str | None = None,
        initial_subscription_name: str | None = None,
        retry_letter_topic: str | None = None,
    ) -> None:
        if not isinstance(max_redeliver_count, int) or max_redeliver_count < 1:
            raise InvalidArgument(f"dead letter policy: max_redeliver_count must be greater than 0, not {max_redeliver_count!r}")
        self.max_redeliver_count = int(max_redeliver_count)
        self.dead_letter_topic = dead_letter_topic or ""
        self.initial_subscription_name = initial_subscription_name or ""
        self.retry_letter_topic = retry_letter_topic or ""

    def __repr__(self) -> str:
        return (f"ConsumerDeadLetterPolicy(max_redeliver_count={self.max_redeliver_count}, "
                f"dead_letter_topic={self.dead_letter_topic!r}, retry_letter_topic={self.retry_letter_topic!r})")


class RedeliveryBackoff:
    """Delay before a message is redelivered, as a function of its redelivery count."""

    def next(self, redelivery_count: int) -> int:
        """Delay in milliseconds."""
        raise NotImplementedError


class MultiplierRedeliveryBackoff(RedeliveryBackoff):
    """``min_delay_ms * multiplier ** redelivery_count``, capped at ``max_delay_ms`` (the Java
    client's MultiplierRedeliveryBackoff; defaults 1 s, 60 s, 2: 1, 2, 4, 8, 16, 32, 60, 60 ... s)."""

    def __init__(self, min_delay_ms: int = 1000, max_delay_ms: int = 60000, multiplier: float = 2.0) -> None:
        if min_delay_ms < 0 or max_delay_ms < min_delay_ms:
            raise InvalidConfiguration(
                f"redelivery backoff: need 0 <= min_delay_ms <= max_delay_ms, got {min_delay_ms} and {max_delay_ms}"
            )
        if multiplier <= 1:
            raise InvalidConfiguration(f"redelivery backoff: multiplier must be greater than 1, got {multiplier}")
        self.min_delay_ms = int(min_delay_ms)
        self.max_delay_ms = int(max_delay_ms)
        self.multiplier = float(multiplier)

    def next(self, redelivery_count: int) -> int:
        if redelivery_count <= 0 or self.min_delay_ms <= 0:
            return self.min_delay_ms
        if redelivery_count * math.log(self.multiplier) >= math.log(self.max_delay_ms / self.min_delay_ms):
            return self.max_delay_ms  # also keeps huge counts from overflowing the float below
        return int(min(self.min_delay_ms * self.multiplier**redelivery_count, self.max_delay_ms))

    def __repr__(self) -> str:
        return f"MultiplierRedeliveryBackoff({self.min_delay_ms}, {self.max_delay_ms}, {self.multiplier:g})"


__all__ = [
    "DEFAULT_MAX_RECONSUME_TIMES",
    "DLQ_SUFFIX",
    "RETRY_SUFFIX",
    "ConsumerBatchReceivePolicy",
    "ConsumerDeadLetterPolicy",
    "ConsumerKeySharedPolicy",
    "KeySharedMode",
    "MultiplierRedeliveryBackoff",
    "RedeliveryBackoff",
    "RegexSubscriptionMode",
    "topics_mode",
]
