"""Time-driven client bookkeeping: reconnection backoff, negative acks, ack timeouts.

Every class here is pure: it reads the time from an injected ``clock`` (seconds, monotonic)
and never sleeps or schedules anything itself. The consumer asks ``next_deadline()`` to arm
its timer and ``pop_due()`` when it fires; tests drive the same objects with a fake clock.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Hashable
from typing import Any

from magnetar.client.api.policies import RedeliveryBackoff

Clock = Callable[[], float]


class Backoff:
    """Delays between reconnection attempts: ``initial`` doubling up to ``maximum`` seconds,
    each randomly shortened by up to 10% so that many clients do not retry in lockstep (never
    below ``initial``)."""

    def __init__(self, initial: float = 0.1, maximum: float = 60.0, rng: random.Random | None = None) -> None:
        self.initial = initial
        self.maximum = maximum
        self._next = initial
        self._rng = rng or random.Random()

    def next(self) -> float:
        """The delay before the next attempt."""
        current = self._next
        self._next = min(self._next * 2, self.maximum)
        current -= self._rng.uniform(0, current / 10)
        return max(self.initial, current)

    def reset(self) -> None:
        """Start again from ``initial`` (after a success)."""
        self._next = self.initial


class NegativeAckTracker:
    """Messages negatively acknowledged and when each is due for redelivery.

    The delay is ``delay_ms``, or ``backoff.next(redelivery_count)`` with a backoff. A key is an
    entry, ``(ledger_id, entry_id)``: the broker redelivers whole entries.
    """

    def __init__(self, delay_ms: int, backoff: RedeliveryBackoff | None = None, clock: Clock = time.monotonic) -> None:
        self.delay_ms = max(0, int(delay_ms))
        self.backoff = backoff
        self.clock = clock
        self._due: dict[Hashable, float] = {}

    def delay_for(self, redelivery_count: int) -> float:
        """Seconds before a message redelivered ``redelivery_count`` times comes back."""
        ms = self.backoff.next(redelivery_count) if self.backoff is not None else self.delay_ms
        return ms / 1000.0

    def add(self, key: Hashable, redelivery_count: int = 0) -> float:
        """Track a negative ack; returns when it is due (clock time)."""
        due = self.clock() + self.delay_for(redelivery_count)
        self._due[key] = due
        return due

    def remove(self, key: Hashable) -> None:
        """Forget a key (acknowledged after all)."""
        self._due.pop(key, None)

    def remove_through(self, upto: Any) -> None:
        """Forget every key up to ``upto`` (a cumulative acknowledgement)."""
        for k in [k for k in self._due if k <= upto]:
            del self._due[k]

    def pop_due(self) -> list[Hashable]:
        """Keys whose delay has passed, oldest first; they are forgotten."""
        now = self.clock()
        due = sorted((t, k) for k, t in self._due.items() if t <= now) if self._due else []
        for _, k in due:
            del self._due[k]
        return [k for _, k in due]

    def next_deadline(self) -> float | None:
        """Earliest due time, or None when nothing is tracked."""
        return min(self._due.values()) if self._due else None

    def clear(self) -> None:
        """Forget everything (seek, redelivery of everything)."""
        self._due.clear()

    def __len__(self) -> int:
        return len(self._due)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._due


class UnackedMessageTracker:
    """Ack timeout: messages handed to the application and not acknowledged within
    ``timeout_ms`` (or ``backoff.next(redelivery_count)``) are redelivered.

    The consumer checks every ``tick_ms``, so a message comes back between its timeout and its
    timeout plus one tick after it was received, as in the Java client.
    """

    def __init__(
        self, timeout_ms: int, tick_ms: int = 1000, backoff: RedeliveryBackoff | None = None, clock: Clock = time.monotonic
    ) -> None:
        self.timeout_ms = int(timeout_ms)
        self.tick = max(1, int(tick_ms)) / 1000.0
        self.backoff = backoff
        self.clock = clock
        self._deadline: dict[Hashable, float] = {}

    def timeout_for(self, redelivery_count: int) -> float:
        """Seconds a message redelivered ``redelivery_count`` times may stay unacknowledged."""
        ms = self.backoff.next(redelivery_count) if self.backoff is not None else self.timeout_ms
        return ms / 1000.0

    def add(self, key: Hashable, redelivery_count: int = 0) -> None:
        """A message was handed to the application (a key already tracked keeps its deadline)."""
        if key not in self._deadline:
            self._deadline[key] = self.clock() + self.timeout_for(redelivery_count)

    def remove(self, key: Hashable) -> None:
        """The message was acknowledged (or negatively acknowledged)."""
        self._deadline.pop(key, None)

    def remove_through(self, upto: Any) -> None:
        """Forget every key up to ``upto`` (a cumulative acknowledgement)."""
        for k in [k for k in self._deadline if k <= upto]:
            del self._deadline[k]

    def pop_due(self) -> list[Hashable]:
        """Keys past their deadline, oldest first; they are forgotten."""
        now = self.clock()
        due = sorted((t, k) for k, t in self._deadline.items() if t <= now) if self._deadline else []
        for _, k in due:
            del self._deadline[k]
        return [k for _, k in due]

    def clear(self) -> None:
        """Forget everything."""
        self._deadline.clear()

    def __len__(self) -> int:
        return len(self._deadline)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._deadline


__all__ = ["Backoff", "Clock", "NegativeAckTracker", "UnackedMessageTracker"]
