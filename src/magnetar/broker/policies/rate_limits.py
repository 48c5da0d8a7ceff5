"""The rate limiters that enforce the publish, dispatch, subscribe and replicator rate policies.

As Pulsar's (``PublishRateLimiterImpl``, ``DispatchRateLimiter``, ``SubscribeRateLimiter``):

* :class:`RateLimiter` is a token bucket per dimension (messages, bytes) holding at most one
  period's worth, refilled continuously from the loop's clock. Use may take a bucket below zero
  (a batch counts all its messages); nothing more is allowed until it is back above zero.
* publish: the session asks :meth:`RateLimiter.consume_and_delay` once per SEND and, past the
  limit, stops reading from that connection for the delay it returns: nothing is refused, the
  producer slows down (Pulsar disables auto-read on the producer's channel).
* dispatch: a subscription's :class:`DispatchThrottle` combines the topic's limiter (shared by all
  its subscriptions) and its own; the dispatcher asks it once per read how many entries it may
  read, and tells it what went out; when nothing is allowed it reschedules the dispatch for when
  the buckets refill. The replicators read through the same kind of throttle.
* subscribe: :class:`SubscribeLimiter` counts subscribes per (client host, consumer name, consumer
  id) in fixed windows of the period, as Pulsar's per-consumer ``RateLimiter``.

Nothing here runs for a topic without limits: its limiters are None and the hot paths check that once.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable

from magnetar.broker.errors import BrokerError
from magnetar.broker.policies.rate_values import RateLimit, RatePolicies
from magnetar.protocol.enums import ServerError

Clock = Callable[[], float]
#: the permits answered when only the bytes are limited (an entry count no read reaches)
UNLIMITED = 1 << 30


def loop_clock() -> Clock:
    """The running loop's clock (monotonic seconds), or ``time.monotonic`` outside a loop."""
    try:
        return asyncio.get_running_loop().time
    except RuntimeError:
        return time.monotonic


class _Bucket:
    """One token bucket: ``capacity`` tokens, refilled at ``capacity / period`` a second."""

    __slots__ = ("capacity", "rate", "tokens", "stamp")

    def __init__(self, capacity: int, period: float, now: float) -> None:
        self.capacity = float(capacity)
        self.rate = capacity / period
        self.tokens = float(capacity)
        self.stamp = now

    def refill(self, now: float) -> float:
        if now > self.stamp:
            self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
            self.stamp = now
        return self.tokens

    def wait(self) -> float:
        """Seconds until the bucket holds a whole token again (after a refill)."""
        return 0.0 if self.tokens >= 1 else (1 - self.tokens) / self.rate


class RateLimiter:
    """At most ``limit.messages`` messages and ``limit.size`` bytes per ``limit.period`` seconds."""

    def __init__(self, limit: RateLimit, clock: Clock | None = None) -> None:
        self.limit = limit
        self._clock = clock or loop_clock()
        now = self._clock()
        self._messages = _Bucket(limit.messages, limit.period, now) if limit.messages > 0 else None
        self._bytes = _Bucket(limit.size, limit.period, now) if limit.size > 0 else None

    def permits(self) -> int:
        """Messages that may go now (0: wait :meth:`wait_seconds`)."""
        now = self._clock()
        if self._bytes is not None and self._bytes.refill(now) < 1:
            return 0
        if self._messages is None:
            return UNLIMITED
        return max(0, math.floor(self._messages.refill(now)))

    def consume(self, messages: int, size: int) -> None:
        """``messages`` messages of ``size`` bytes went."""
        now = self._clock()
        for bucket, used in ((self._messages, messages), (self._bytes, size)):
            if bucket is not None:
                bucket.refill(now)
                bucket.tokens -= used

    def wait_seconds(self) -> float:
        """Seconds until something may go again (0: now)."""
        now = self._clock()
        waits = [b.wait() for b in (self._messages, self._bytes) if b is not None and b.refill(now) < 1]
        return max(waits, default=0.0)

    def consume_and_delay(self, messages: int, size: int) -> float:
        """Count a publish; the seconds its connection must pause reading (0: none)."""
        self.consume(messages, size)
        return self.wait_seconds()


def refreshed(current: RateLimiter | None, limit: RateLimit | None) -> RateLimiter | None:
    """The limiter for ``limit``: ``current`` when the limit did not change (its tokens are kept)."""
    if limit is None:
        return None
    if current is not None and current.limit == limit:
        return current
    return RateLimiter(limit)


class DispatchThrottle:
    """The dispatch limiters a reader obeys (the topic's and its own): how much it may read now."""

    def __init__(self, limiters: tuple[RateLimiter, ...]) -> None:
        self.limiters = limiters
        self._retry: asyncio.TimerHandle | None = None

    def allowed(self, count: int, retry: Callable[[], None]) -> int:
        """At most ``count`` entries may be read, or fewer; 0: none, and ``retry`` runs once the
        buckets have refilled."""
        for limiter in self.limiters:
            count = min(count, limiter.permits())
        if count <= 0 and self._retry is None:
            delay = max(limiter.wait_seconds() for limiter in self.limiters)
            self._retry = asyncio.get_running_loop().call_later(max(delay, 0.001), self._retried, retry)
        return max(0, count)

    def _retried(self, retry: Callable[[], None]) -> None:
        self._retry = None
        retry()

    def consume(self, messages: int, size: int) -> None:
        """``messages`` messages of ``size`` bytes were dispatched."""
        for limiter in self.limiters:
            limiter.consume(messages, size)

    def wait_seconds(self) -> float:
        """Seconds until something may be read again (0: now)."""
        return max(limiter.wait_seconds() for limiter in self.limiters)

    def cancel(self) -> None:
        """Drop a pending retry (the throttle is replaced or its reader is gone)."""
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None


def dispatch_throttle(
    current: DispatchThrottle | None, limiters: tuple[RateLimiter | None, ...]
) -> DispatchThrottle | None:
    """The throttle of the given limiters (None among them: not limited there); ``current`` when
    they are the same objects, None when none limits."""
    present = tuple(limiter for limiter in limiters if limiter is not None)
    if current is not None and current.limiters == present:
        return current
    if current is not None:
        current.cancel()
    return DispatchThrottle(present) if present else None


class SubscribeLimiter:
    """Subscribes per consumer (client host, consumer name, consumer id): ``limit.messages`` per
    window of ``limit.period`` seconds."""

    def __init__(self, limit: RateLimit, clock: Clock | None = None) -> None:
        self.limit = limit
        self._clock = clock or loop_clock()
        #: consumer -> (start of its window, subscribes in it)
        self._windows: dict[tuple[str, str, int], tuple[float, int]] = {}

    def try_acquire(self, consumer: tuple[str, str, int]) -> bool:
        """Count one subscribe of ``consumer``; False when its window's subscribes are used up."""
        now = self._clock()
        period = self.limit.period
        if len(self._windows) > 1024:  # forget consumers whose window is over
            self._windows = {k: w for k, w in self._windows.items() if now - w[0] < period}
        start, used = self._windows.get(consumer, (now, 0))
        if now - start >= period:
            start, used = now, 0
        if used >= self.limit.messages:
            return False
        self._windows[consumer] = (start, used + 1)
        return True


def refreshed_subscribe(current: SubscribeLimiter | None, limit: RateLimit | None) -> SubscribeLimiter | None:
    """The subscribe limiter for ``limit`` (``current`` when unchanged)."""
    if limit is None or limit.messages <= 0:
        return None
    if current is not None and current.limit == limit:
        return current
    return SubscribeLimiter(limit)


class TopicRateLimits:
    """A topic's limiters, kept across policy changes that leave their limit as it was."""

    def __init__(self) -> None:
        #: the publish rate of the topic's producers together (None: no limit)
        self.publish: RateLimiter | None = None
        #: the topic's dispatch rate, shared by its subscriptions
        self.dispatch: RateLimiter | None = None
        self.subscribe: SubscribeLimiter | None = None
        self.policies = RatePolicies()

    def update(self, policies: RatePolicies) -> None:
        """Take newly resolved rate policies."""
        self.policies = policies
        self.publish = refreshed(self.publish, policies.publish)
        self.dispatch = refreshed(self.dispatch, policies.dispatch)
        self.subscribe = refreshed_subscribe(self.subscribe, policies.subscribe)

    def check_subscribe(self, host: str, consumer_name: str, consumer_id: int) -> None:
        """Count a SUBSCRIBE from ``host``; refuse it as Pulsar does past the subscribe rate."""
        limiter = self.subscribe
        if limiter is not None and not limiter.try_acquire((host, consumer_name, consumer_id)):
            raise BrokerError(ServerError.NotAllowedError, "Subscribe limited by subscribe rate limit per consumer.")
