"""What the driver asks the broker: topics, partitions, positions and schemas.

One magnetar client per query (created when first needed, closed by :meth:`Broker.close`).
Positions come from small non-durable readers ("probes") that receive nothing (a zero receiver
queue) and answer GET_LAST_MESSAGE_ID; they stay open between micro-batches, so that asking
for the latest offsets of N partitions is N requests, not N subscriptions.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Coroutine, Iterable
from typing import Any

from magnetar.protocol.enums import TopicsMode
from magnetar.protocol.topic_name import TopicName
from magnetar.spark.options import ClientSettings, SourceOptions
from magnetar.spark.positions import Position

log = logging.getLogger("magnetar.spark")


class Broker:
    """Driver-side access to the broker for one query."""

    def __init__(self, settings: ClientSettings, poll_timeout_ms: int = 30_000, prefix: str | None = None) -> None:
        self.client = settings.make()
        self.poll_timeout_ms = poll_timeout_ms
        self.prefix = prefix or "spark-probe"
        self._probes: dict[str, Any] = {}
        self._durable: dict[str, Any] = {}

    # -- plumbing --------------------------------------------------------------------------------
    def run(self, coro: Coroutine[Any, Any, Any], timeout: float | None = None) -> Any:
        """Run a coroutine on the client's loop and wait for it."""
        fut = asyncio.run_coroutine_threadsafe(coro, self.client.loop)
        return fut.result(timeout if timeout is not None else self.client.async_client.operation_timeout * 4 + 10)

    @property
    def core(self) -> Any:
        """The asyncio client."""
        return self.client.async_client

    def close(self) -> None:
        """Close every reader, consumer and the client."""
        self._probes.clear()
        self._durable.clear()
        self.client.close()

    # -- topics ----------------------------------------------------------------------------------
    def partitions_of(self, topics: Iterable[str]) -> list[str]:
        """Topic-partitions of the topics (a topic itself when not partitioned)."""
        topics = list(topics)

        async def all_partitions() -> list[list[str]]:
            return await asyncio.gather(*(self.core.get_topic_partitions(t) for t in topics))

        out: list[str] = []
        for parts in self.run(all_partitions()):
            out.extend(p for p in parts if p not in out)
        return out

    def discover(self, opts: SourceOptions) -> list[str]:
        """Topic-partitions the options designate now (a pattern is matched against the namespace)."""
        if opts.pattern is None:
            return self.partitions_of(opts.topics)
        pattern = re.compile(opts.pattern)
        names = self.run(self.core.lookup.topics_of_namespace(opts.namespace, TopicsMode.PERSISTENT))
        parents: list[str] = []
        for name in names:
            tn = TopicName.parse(name)
            if not tn.persistent:
                continue
            parent = tn.partitioned_parent
            candidates = [str(tn), str(parent)]
            if "://" not in opts.pattern:
                candidates += [tn.local_name, parent.local_name]
            if any(pattern.fullmatch(c) for c in candidates) and str(parent) not in parents:
                parents.append(str(parent))
        return sorted(self.partitions_of(parents))

    def schema_of(self, topic: str) -> Any:
        """The latest wire Schema of a topic (of its partitioned parent), or None."""
        parent = str(TopicName.parse(topic).partitioned_parent)
        return self.run(self.core.lookup.get_schema(parent))

    # -- positions -------------------------------------------------------------------------------
    async def _probe(self, tp: str) -> Any:
        # the client, when a query runs, not when the module loads: 200-350 ms CPU (python -X importtime)
        from magnetar.client import MessageId

        probe = self._probes.get(tp)
        if probe is None:
            probe = await self.core.create_reader(
                tp, MessageId.latest, receiver_queue_size=0, subscription_role_prefix=self.prefix
            )
            self._probes[tp] = probe
        return probe

    def ends(self, tps: Iterable[str]) -> dict[str, Position]:
        """Position right after the last message of each topic-partition."""
        tps = list(tps)

        async def one(tp: str) -> Position:
            probe = await self._probe(tp)
            try:
                last, _ = await probe.consumer.get_last_message_id()
            except Exception:  # noqa: BLE001 - a probe on a dead connection: make a new one once
                self._probes.pop(tp, None)
                probe = await self._probe(tp)
                last, _ = await probe.consumer.get_last_message_id()
            if last.entry_id < 0:
                return Position(last.ledger_id, 0, -1)
            return Position(last.ledger_id, last.entry_id + 1, -1)

        async def all_ends() -> list[Position]:
            return await asyncio.gather(*(one(tp) for tp in tps))

        return dict(zip(tps, self.run(all_ends()), strict=True))

    def earliest(self, tps: Iterable[str]) -> dict[str, Position]:
        """Position of the oldest message each topic-partition still stores (its end when empty)."""
        return self._first_positions(list(tps), None)

    def at_time(self, tps: Iterable[str], publish_time_ms: int) -> dict[str, Position]:
        """Position of the first message published at or after ``publish_time_ms`` (the end when none)."""
        return self._first_positions(list(tps), publish_time_ms)

    def _first_positions(self, tps: list[str], publish_time: int | None) -> dict[str, Position]:
        # the client, when a query runs, not when the module loads: 200-350 ms CPU (python -X importtime)
        from magnetar.client import MessageId, Timeout

        ends = self.ends(tps)

        async def one(tp: str) -> Position:
            end = ends[tp]
            if end.entry == 0:
                return end
            reader = await self.core.create_reader(
                tp, MessageId.earliest, receiver_queue_size=1, subscription_role_prefix=self.prefix
            )
            try:
                wait = self.poll_timeout_ms
                if publish_time is not None:
                    await reader.seek(publish_time)
                    # after the seek, a message arrives at once if one is that recent
                    wait = min(wait, 3000)
                try:
                    msg = await reader.read_next(wait)
                except Timeout:
                    return end
                mid = msg.message_id()
                first = mid.first_chunk_message_id()
                return Position(first.ledger_id, first.entry_id, -1)
            finally:
                await reader.close()

        async def all_first() -> list[Position]:
            return await asyncio.gather(*(one(tp) for tp in tps))

        return dict(zip(tps, self.run(all_first()), strict=True))

    # -- the durable subscription of predefinedSubscription ----------------------------------------
    def advance_subscription(self, subscription: str, positions: dict[str, Position]) -> None:
        """Acknowledge (cumulatively) everything before ``positions`` on a durable subscription."""
        # the client, when a query runs, not when the module loads: 200-350 ms CPU (python -X importtime)
        from magnetar.client import InitialPosition, MessageId

        async def one(tp: str, pos: Position) -> None:
            consumer = self._durable.get(tp)
            if consumer is None:
                consumer = await self.core.subscribe(
                    tp, subscription, receiver_queue_size=0, initial_position=InitialPosition.Earliest
                )
                self._durable[tp] = consumer
            if pos.is_earliest:
                return
            # whole entries only: the entry holding ``pos`` stays (a partly read batch is kept)
            last_entry = pos.entry - 1
            if last_entry < 0:
                return
            consumer.acknowledge_cumulative(MessageId(pos.ledger, last_entry))

        async def all_subs() -> None:
            await asyncio.gather(*(one(tp, pos) for tp, pos in positions.items()))

        self.run(all_subs())
