"""Delayed delivery: entries held back until their ``deliver_at_time``.

The tracker is an index by time of entries a Shared or Key_Shared dispatcher met before they
were due. It lives in memory only: after a restart the subscription reads again from its first
unacknowledged entry and finds every still-delayed entry anew, so nothing is lost and nothing is
delivered early. Entries are released at tick granularity (never before they are due; at most
one tick late), or at their exact time in strict mode.
"""

from __future__ import annotations

import asyncio
import heapq
import math
import time
from collections.abc import Callable


class DelayedDeliveryTracker:
    """Entries of one subscription waiting for their delivery time."""

    def __init__(self, on_due: Callable[[list[int]], None], tick_seconds: float = 1.0, strict: bool = False) -> None:
        self._on_due = on_due
        self._tick = tick_seconds
        self._strict = strict
        self._heap: list[tuple[int, int]] = []
        self._ids: set[int] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = math.inf

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, entry_id: int) -> bool:
        return entry_id in self._ids

    def add(self, entry_id: int, deliver_at_ms: int) -> None:
        """Hold ``entry_id`` until ``deliver_at_ms`` (epoch milliseconds)."""
        if entry_id in self._ids:
            return
        self._ids.add(entry_id)
        heapq.heappush(self._heap, (deliver_at_ms, entry_id))
        self._arm()

    def clear(self) -> list[int]:
        """Drop everything held; returns the entry ids that were held."""
        ids = sorted(self._ids)
        self._heap.clear()
        self._ids.clear()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
            self._timer_at = math.inf
        return ids

    def _arm(self) -> None:
        if not self._heap:
            return
        due_ms = self._heap[0][0]
        delay = max(0.0, due_ms / 1000.0 - time.time())
        if not self._strict and self._tick > 0:
            delay = math.ceil(delay / self._tick) * self._tick
        loop = asyncio.get_running_loop()
        fire_at = loop.time() + delay
        if self._timer is not None and self._timer_at <= fire_at:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = fire_at
        self._timer = loop.call_at(fire_at, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._timer_at = math.inf
        now_ms = int(time.time() * 1000)
        due: list[int] = []
        heap = self._heap
        while heap and heap[0][0] <= now_ms:
            _, entry_id = heapq.heappop(heap)
            if entry_id in self._ids:
                self._ids.discard(entry_id)
                due.append(entry_id)
        if due:
            self._on_due(due)
        self._arm()
