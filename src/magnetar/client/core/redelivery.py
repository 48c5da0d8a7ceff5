"""The timers behind a consumer's redeliveries: negative acks and the ack timeout.

:class:`RedeliveryTimers` owns the consumer's :class:`~.trackers.NegativeAckTracker` and (when
an ack timeout is set) :class:`~.trackers.UnackedMessageTracker`, and arms loop timers for them:
one at the next negative-ack deadline, and a periodic tick that collects timed-out entries and
runs the consumer's other periodic work. Due entries go to ``redeliver``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from magnetar.client.api.config import ConsumerConfig
from magnetar.client.core.trackers import NegativeAckTracker, UnackedMessageTracker

log = logging.getLogger("magnetar.client.core.consumer")

EntryKey = tuple[int, int]


class RedeliveryTimers:
    """Negative-ack and ack-timeout trackers of one consumer, with their loop timers."""

    def __init__(
        self, config: ConsumerConfig, label: str, redeliver: Callable[[list[EntryKey]], None], periodic: Callable[[], None]
    ) -> None:
        clock = config.clock
        self.nacks = NegativeAckTracker(config.negative_ack_redelivery_delay_ms, config.negative_ack_redelivery_backoff, clock)
        self.unacked: UnackedMessageTracker | None = None
        if config.unacked_messages_timeout_ms:
            self.unacked = UnackedMessageTracker(
                config.unacked_messages_timeout_ms, config.tick_duration_ms, config.ack_timeout_redelivery_backoff, clock
            )
        #: "consumer <name> on <topic>", for messages
        self.label = label
        self._redeliver = redeliver
        self._periodic = periodic
        self._nack_timer: asyncio.TimerHandle | None = None
        #: loop time the nack timer fires at (uvloop's handles of a 0 s delay have no ``when()``)
        self._nack_timer_when = 0.0
        self._tick_timer: asyncio.TimerHandle | None = None
        self._stopped = False
        #: False only when no entry can be tracked (no ack timeout, no negative ack pending):
        #: acknowledgements then skip :meth:`forget`, which runs once per acknowledged entry
        self.tracking = self.unacked is not None

    def stop(self) -> None:
        """Cancel both timers for good (the consumer is closed)."""
        self._stopped = True
        for timer in (self._nack_timer, self._tick_timer):
            if timer is not None:
                timer.cancel()

    def clear(self) -> None:
        """Forget every tracked entry (seek, reconnection, redelivery of everything)."""
        self.nacks.clear()
        if self.unacked is not None:
            self.unacked.clear()
        self.tracking = self.unacked is not None

    def forget(self, key: EntryKey) -> None:
        """An entry was acknowledged: no redelivery for it."""
        if not self.tracking:
            return
        self.nacks.remove(key)
        if self.unacked is not None:
            self.unacked.remove(key)
        elif not self.nacks:
            self.tracking = False

    def forget_through(self, upto: EntryKey) -> None:
        """Every entry up to ``upto`` was acknowledged (cumulatively)."""
        self.nacks.remove_through(upto)
        if self.unacked is not None:
            self.unacked.remove_through(upto)

    def nack(self, keys: Iterable[EntryKey], redelivery_count: int) -> None:
        """Negatively acknowledged entries: redelivered after their delay, not on ack timeout."""
        deadline = None
        self.tracking = True
        for key in keys:
            if self.unacked is not None:
                self.unacked.remove(key)
            deadline = self.nacks.add(key, redelivery_count)
        if deadline is not None:
            self.arm_nack_timer()

    def arm_nack_timer(self) -> None:
        """(Re)arm the timer at the earliest negative-ack deadline."""
        deadline = self.nacks.next_deadline()
        if deadline is None or self._stopped:
            return
        delay = max(0.0, deadline - self.nacks.clock())
        loop = asyncio.get_running_loop()
        when = loop.time() + delay
        if self._nack_timer is not None:
            if self._nack_timer_when <= when:
                return
            self._nack_timer.cancel()
        self._nack_timer_when = when
        self._nack_timer = loop.call_later(delay, self.nack_due)

    def nack_due(self) -> None:
        """Redeliver the negatively acknowledged entries whose delay passed."""
        self._nack_timer = None
        due = self.nacks.pop_due()
        if self.unacked is None and not self.nacks:
            self.tracking = False
        if due:
            self._redeliver(due)
        self.arm_nack_timer()

    def arm_tick(self) -> None:
        """Arm the next periodic tick (every tick_duration_ms with an ack timeout, else 1 s)."""
        if self._stopped:
            return
        tick = self.unacked.tick if self.unacked is not None else 1.0
        self._tick_timer = asyncio.get_running_loop().call_later(tick, self.on_tick)

    def on_tick(self) -> None:
        """Ack timeout check, then the consumer's periodic work."""
        self._tick_timer = None
        if self.unacked is not None:
            due = self.unacked.pop_due()
            if due:
                log.info("%s: %d messages not acknowledged in time, redelivering", self.label, len(due))
                self._redeliver(due)
        self._periodic()
        self.arm_tick()
