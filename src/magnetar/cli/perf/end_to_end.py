"""``magnetar perf end-to-end``: producers and consumers in one process, publish-to-receive latency.

The consumers subscribe first; then every message sent is remembered by (producer, sequence id)
with its intended send time, and when it arrives the end-to-end latency is the arrival time minus
that, on the same monotonic clock (no clock agreement needed, sub-millisecond resolution). The
figures: produced and consumed rates, messages in flight, publish latency (until the receipt) and
end-to-end latency (until the consumer has it); at the end, messages that never arrived are lost.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from magnetar.cli.perf.consume import ConsumerLoad
from magnetar.cli.perf.options import ConsumerSettings, ProducerSettings
from magnetar.cli.perf.produce import ProducerLoad
from magnetar.cli.perf.rate_limiter import NANOS
from magnetar.cli.perf.recorder import LatencyRecorder
from magnetar.cli.perf.report import Rate, Snapshot
from magnetar.cli.perf.runner import Output, drive, open_client

if TYPE_CHECKING:
    from magnetar.cli.messaging import Connection


class EndToEndRun:
    """Producers and consumers of one run, and the messages in flight between them."""

    def __init__(self, producer_settings: ProducerSettings, consumer_settings: ConsumerSettings) -> None:
        self.producers = ProducerLoad(producer_settings, on_send=self._sent)
        self.consumers = ConsumerLoad(consumer_settings, on_receive=self._received)
        self.latency = LatencyRecorder()
        #: per producer: sequence id -> intended send time (perf_counter_ns) of messages not yet received
        self._in_flight: list[dict[int, int]] = []
        self._by_name: dict[str, dict[int, int]] = {}
        self.unexpected = 0

    async def start(self, client: Any) -> None:
        """Subscribe the consumers, then create the producers."""
        await self.consumers.start(client)
        await self.producers.start(client)
        self._in_flight = [{} for _ in self.producers.producers]
        self._by_name = dict(zip(self.producers.names, self._in_flight, strict=True))

    def _sent(self, producer: int, sequence_id: int, intended_ns: int) -> None:
        self._in_flight[producer][sequence_id] = intended_ns

    def _received(self, messages: list[Any], now_ns: int) -> None:
        by_name = self._by_name
        counts = self.latency.counts
        for message in messages:
            table = by_name.get(message.producer_name())
            intended = None if table is None else table.pop(message.sequence_id(), None)
            if intended is None:
                self.unexpected += 1
                continue
            micros = (now_ns - intended) // 1000
            counts[micros] = counts.get(micros, 0) + 1

    @property
    def in_flight(self) -> int:
        """Messages sent and not received yet."""
        return sum(len(table) for table in self._in_flight)

    async def run(self, stop: asyncio.Event, drain_timeout_s: float) -> None:
        """Send on schedule while receiving; then wait (at most ``drain_timeout_s``) for the rest."""
        consumers_done = asyncio.Event()
        receiving = asyncio.ensure_future(self.consumers.run(consumers_done))
        try:
            await self.producers.run(stop)
            await self.producers.drain(drain_timeout_s)
            deadline = time.monotonic() + drain_timeout_s
            while self.in_flight > self.producers.errors and time.monotonic() < deadline and not receiving.done():
                await asyncio.sleep(0.005)
        finally:
            consumers_done.set()
            await receiving

    def interval(self, elapsed_s: float, seconds: float) -> Snapshot:
        """The figures since the previous interval."""
        producers = self.producers
        return Snapshot(
            elapsed_s,
            {"produced": producers.interval_rate(seconds), "consumed": self.consumers.interval_rate(seconds)},
            {"in_flight": self.in_flight, "errors": producers.errors},
            {"publish": producers.latency.interval(), "end_to_end": self.latency.interval()},
        )

    def total(self) -> Snapshot:
        """The figures of the whole run; ``lost``: sent (without a send error) and never received."""
        producers, consumers = self.producers, self.consumers
        start = producers.start_ns
        end = max(producers.end_ns, consumers.end_ns)
        consumed = Rate(consumers.received, consumers.received_bytes, (consumers.end_ns - start) / NANOS)
        counters = {"errors": producers.errors, "lost": self.lost, "unexpected": self.unexpected}
        rates = {"sent": producers.send_rate(), "produced": producers.total_rate(), "consumed": consumed}
        return Snapshot((end - start) / NANOS, rates, counters,
                        {"publish": producers.latency.total(), "end_to_end": self.latency.total()})

    @property
    def lost(self) -> int:
        """Messages sent without a send error that were never received."""
        return max(0, self.in_flight - self.producers.errors)


async def end_to_end_main(connection: Connection, producer_settings: ProducerSettings,
                          consumer_settings: ConsumerSettings, output: Output, drain_timeout_s: float,
                          unsubscribe: bool) -> bool:
    """``magnetar perf end-to-end``: run, report; whether every message arrived."""
    async with open_client(connection) as client:
        run = EndToEndRun(producer_settings, consumer_settings)
        await run.start(client)
        stop = asyncio.Event()
        intervals = await drive(run.run(stop, drain_timeout_s), run, output, stop)
        settings = {"producers": producer_settings.describe(), "consumers": consumer_settings.describe()}
        output.final("end-to-end", settings, run.total(), intervals, producer_settings.rate)
        if run.lost or run.producers.errors:
            output.note(f"{run.lost} messages lost, {run.producers.errors} failed to send;"
                        f" first error: {run.producers.first_error}")
        await run.producers.close()
        await run.consumers.close(unsubscribe=unsubscribe)
        return not (run.lost or run.producers.errors)
