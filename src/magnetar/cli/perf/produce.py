"""The producing side of ``magnetar perf``: producers sending on a schedule, receipts timed.

Every topic is resolved to its partitions and each partition gets its own producers, which take
the messages in turn. Each message has an intended send time: its slot in the rate schedule, or,
without a rate, the moment its chunk of messages was handed to the client. The publish latency is
the receipt time minus that, so a broker that makes the sender wait shows as latency. Without a
rate, a producer's receipts are counted as it settles them, per batch (:mod:`.send_groups`).
Sequence ids are set here, 0, 1, 2... per producer, so that an end-to-end run can tell by
(producer name, sequence id) when a received message was meant to be sent.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from magnetar.cli.perf.options import ProducerSettings
from magnetar.cli.perf.rate_limiter import NANOS, RateSchedule, wait_until_due
from magnetar.cli.perf.recorder import LatencyRecorder
from magnetar.cli.perf.report import Rate, Snapshot
from magnetar.cli.perf.runner import Output, drive, open_client
from magnetar.cli.perf.send_groups import ProducerReceipts, group_limit

if TYPE_CHECKING:
    from magnetar.cli.messaging import Connection

#: messages handed to the client between two yields to the loop when there is no rate
UNLIMITED_CHUNK = 1000
#: how often a sender waiting for room (--max-outstanding) looks at its limits again
SPACE_TICK_S = 0.1
#: a hook told of every message sent: (producer index, sequence id, intended send time ns)
SendHook = Callable[[int, int, int], None]


class ProducerLoad:
    """The producers of a run and their counters: sent, acknowledged, failed, publish latency."""

    def __init__(self, settings: ProducerSettings, on_send: SendHook | None = None) -> None:
        self.settings = settings
        self.on_send = on_send
        self.producers: list[Any] = []
        self.names: list[str] = []
        self.latency = LatencyRecorder()
        self.sent = 0
        self.sent_bytes = 0
        self.acked = 0
        self.acked_bytes = 0
        self.errors = 0
        self.first_error: str | None = None
        self.start_ns = 0
        #: when the sender stopped, and when the last receipt (or error) came
        self.send_end_ns = 0
        self.end_ns = 0
        self._sequences: list[int] = []
        #: per producer, when messages are sent in groups: its receipts, and their callback
        self._receipts: list[ProducerReceipts] = []
        self._results: list[Callable[[Exception | None, Any], None]] = []
        #: what the sender awaits while --max-outstanding messages are pending: resolved by the
        #: receipt that makes room, or by the tick of a stalled run
        self._space: asyncio.Future[None] | None = None
        self._tick_handle: asyncio.TimerHandle | None = None
        self._reported = (0, 0)
        payloads = settings.payloads
        #: the size of every payload, when they all have one
        self._payload_size = len(payloads[0]) if len({len(p) for p in payloads}) == 1 else None
        #: most messages of a producer in one send group (1: every message has its own callback)
        self._group_limit = group_limit(settings.batching, settings.rate > 0, settings.batch_max_messages,
                                        settings.batch_max_bytes, max(len(p) for p in payloads), UNLIMITED_CHUNK)
        self._key_of = self._key_function()

    @property
    def settled(self) -> int:
        """Messages with a receipt or an error."""
        return self.acked + self.errors

    @property
    def pending(self) -> int:
        """Messages sent and awaiting their receipt."""
        return self.sent - self.settled

    async def start(self, client: Any) -> None:
        """Create the producers: ``producers_per_topic`` on each topic, or on each of its partitions."""
        s = self.settings
        options = s.producer_options()
        for topic in s.topics:
            for partition in await client.get_topic_partitions(topic):
                for _ in range(s.producers_per_topic):
                    name = f"{s.producer_name_prefix}-{len(self.producers)}" if s.producer_name_prefix else None
                    producer = await client.create_producer(partition, producer_name=name, **options)
                    self.producers.append(producer)
                    self.names.append(producer.name)
        self._sequences = [0] * len(self.producers)
        if self._group_limit > 1:
            for producer in self.producers:
                receipts = ProducerReceipts(self, len(self.producers), self._payload_size)
                producer.settled_hook = receipts.settled
                self._receipts.append(receipts)
                self._results.append(receipts.on_result)

    async def run(self, stop: asyncio.Event) -> None:
        """Send until the count or time limit is reached or ``stop`` is set; receipts may still be due."""
        s = self.settings
        schedule = RateSchedule(s.rate, time.perf_counter_ns(), s.max_messages, s.duration_s)
        self.start_ns = self.end_ns = schedule.start_ns
        try:
            await self._send_on_schedule(schedule, stop)
        finally:
            self.send_end_ns = time.perf_counter_ns()

    async def _send_on_schedule(self, schedule: RateSchedule, stop: asyncio.Event) -> None:
        limit = self.settings.max_outstanding
        if limit:
            self._tick_handle = asyncio.get_running_loop().call_later(SPACE_TICK_S, self._tick)
        try:
            await self._send_loop(schedule, stop, limit)
        finally:
            if self._tick_handle is not None:
                self._tick_handle.cancel()
                self._tick_handle = None

    async def _send_loop(self, schedule: RateSchedule, stop: asyncio.Event, limit: int) -> None:
        while not stop.is_set():
            now = time.perf_counter_ns()
            if schedule.finished(self.sent, now):
                break
            due = schedule.due(now) if schedule.limited else min(schedule.due(now), self.sent + UNLIMITED_CHUNK)
            if limit:
                due = min(due, self.settled + limit)
            if due > self.sent:
                self._send(self.sent, due, schedule)
            if limit and self.pending >= limit:
                await self._wait_for_space()
            elif schedule.limited:
                await wait_until_due(schedule, self.sent)
            else:
                await asyncio.sleep(0)

    async def _wait_for_space(self) -> None:
        """Until a receipt makes room, or the next tick (the caller checks its limits again).

        A bare future per wait: with ``-o 1`` this runs once per message, and ``asyncio.wait_for``
        cost a task, a timer and two more loop iterations each time."""
        self._space = space = asyncio.get_running_loop().create_future()
        try:
            await space
        finally:
            self._space = None

    def _tick(self) -> None:
        """Every SPACE_TICK_S while sending: wake a sender waiting for room (time limits, stop)."""
        space = self._space
        if space is not None and not space.done():
            space.set_result(None)
        self._tick_handle = asyncio.get_running_loop().call_later(SPACE_TICK_S, self._tick)

    def _send(self, first: int, end: int, schedule: RateSchedule) -> None:
        """Hand messages ``first`` .. ``end - 1`` to the producers, in turn."""
        if self._group_limit > 1:
            self._send_grouped(first, end)
        else:
            self._send_each(first, end, schedule)
        self.sent = end
        size = self._payload_size
        if size is not None:
            self.sent_bytes += (end - first) * size
        else:
            payloads = self.settings.payloads
            self.sent_bytes += sum(len(payloads[i % len(payloads)]) for i in range(first, end))

    def _send_each(self, first: int, end: int, schedule: RateSchedule) -> None:
        """Each message with its own intended send time and receipt callback."""
        producers, sequences, on_send = self.producers, self._sequences, self.on_send
        payloads = self.settings.payloads
        n_producers, n_payloads = len(producers), len(payloads)
        settled = self._settled_one
        clock = time.perf_counter_ns
        start_ns = schedule.start_ns
        step = NANOS / schedule.rate if schedule.limited else 0.0
        key_of = self._key_of
        for i in range(first, end):
            k = i % n_producers
            intended = start_ns + int(i * step) if step else clock()
            seq = sequences[k]
            sequences[k] = seq + 1
            if on_send is not None:
                on_send(k, seq, intended)
            producers[k].send_nowait(
                payloads[i % n_payloads], partial(settled, intended, i), sequence_id=seq,
                partition_key=None if key_of is None else key_of(i),
            )

    def _send_grouped(self, first: int, end: int) -> None:
        """Without a rate: each producer's messages of the chunk as one run with one intended time,
        a receipt callback on the last message of each group (:mod:`.send_groups`)."""
        intended = time.perf_counter_ns()
        payloads = self.settings.payloads
        if self.on_send is None and self._key_of is None and len(payloads) == 1:
            self._send_plain_runs(first, end, intended, payloads[0])
            return
        n_producers = len(self.producers)
        for k in range(n_producers):
            index = first + (k - first) % n_producers
            if index < end:
                self._send_run(k, index, (end - 1 - index) // n_producers + 1, intended)

    def _send_plain_runs(self, first: int, end: int, intended: int, payload: bytes) -> None:
        """:meth:`_send_grouped` of one payload without keys or a send hook, what ``perf produce``
        does by default: :meth:`_send_run`'s work with what is the same for every message looked up
        once (with 100 producers a chunk makes 100 runs of 10 messages)."""
        producers, sequences, limit = self.producers, self._sequences, self._group_limit
        receipts, results = self._receipts, self._results
        n_producers = len(producers)
        for k in range(n_producers):
            index = first + (k - first) % n_producers
            if index >= end:
                continue
            remaining = (end - 1 - index) // n_producers + 1
            receipts[k].add_run(intended, index, remaining)
            send, on_result = producers[k].send_nowait, results[k]
            seq = sequences[k]
            last = sequences[k] = seq + remaining
            while seq < last:
                group_end = seq + limit if seq + limit < last else last
                for s in range(seq, group_end - 1):
                    send(payload, None, s)
                send(payload, on_result, group_end - 1)
                seq = group_end

    def _send_run(self, k: int, index: int, n: int, intended: int) -> None:
        """Messages ``index``, ``index + producers``... (``n`` of them) to producer ``k``."""
        send, on_result = self.producers[k].send_nowait, self._results[k]
        self._receipts[k].add_run(intended, index, n)
        seq = self._sequences[k]
        self._sequences[k] = seq + n
        payloads, on_send, key_of, limit = self.settings.payloads, self.on_send, self._key_of, self._group_limit
        n_payloads, stride, last = len(payloads), len(self.producers), n - 1
        for j in range(n):
            i = index + j * stride
            if on_send is not None:
                on_send(k, seq + j, intended)
            callback = on_result if j == last or (j + 1) % limit == 0 else None
            send(payloads[i % n_payloads], callback, seq + j, partition_key=None if key_of is None else key_of(i))

    def _key_function(self) -> Callable[[int], str] | None:
        mode = self.settings.key_mode
        if mode == "autoIncrement":
            return str
        if mode == "random":
            rng = random.Random()
            return lambda _i: str(rng.getrandbits(31))
        return None

    def _settled_one(self, intended_ns: int, index: int, error: Exception | None, _message_id: Any) -> None:
        """Receipt callback of a message sent on its own (with a rate, or not batched)."""
        self.settle_part(intended_ns, index, 1, error, time.perf_counter_ns())

    def settle_part(self, intended_ns: int, index: int, count: int, error: Exception | None, now_ns: int) -> None:
        """``count`` messages of one producer, from message ``index`` of the run on, got their receipt
        (or ``error``) at ``now_ns``: count them, and time them from their intended send time."""
        if error is None:
            self.acked += count
            size = self._payload_size
            self.acked_bytes += count * size if size is not None else self.bytes_of(index, count)
            micros = (now_ns - intended_ns) // 1000
            counts = self.latency.counts
            counts[micros] = counts.get(micros, 0) + count
        else:
            self.errors += count
            if self.first_error is None:
                self.first_error = f"{type(error).__name__}: {error}"
        self._settled_at(now_ns)

    def _settled_at(self, now_ns: int) -> None:
        """Receipts (or errors) came in at ``now_ns``: the run's end moves, and a send waiting for
        room below --max-outstanding may go on."""
        if now_ns > self.end_ns:
            self.end_ns = now_ns
        space = self._space
        if space is not None and not space.done() and self.pending < self.settings.max_outstanding:
            space.set_result(None)

    def count_acknowledged(self, count: int, size: int, now_ns: int) -> None:
        """``count`` messages of ``size`` bytes in all got their receipt at ``now_ns`` (their latencies
        are counted by the caller)."""
        self.acked += count
        self.acked_bytes += size
        self._settled_at(now_ns)

    def count_failed(self, count: int, size: int, error: Exception) -> None:
        """``count`` messages counted as acknowledged (``size`` bytes) failed with ``error`` instead."""
        self.acked -= count
        self.acked_bytes -= size
        self.errors += count
        if self.first_error is None:
            self.first_error = f"{type(error).__name__}: {error}"

    def bytes_of(self, index: int, count: int) -> int:
        """Payload bytes of messages ``index``, ``index + producers``... (``count`` of them)."""
        payloads, stride = self.settings.payloads, len(self.producers)
        return sum(len(payloads[(index + j * stride) % len(payloads)]) for j in range(count))

    async def drain(self, timeout_s: float) -> None:
        """Send the open batches and wait (at most ``timeout_s``) until every receipt is in."""
        if not self.producers:
            return
        try:
            await asyncio.wait_for(asyncio.gather(*(producer.flush() for producer in self.producers)), timeout_s)
        except TimeoutError:
            pass

    def interval_rate(self, seconds: float) -> Rate:
        """Messages and bytes acknowledged since the previous call."""
        messages, size = self.acked - self._reported[0], self.acked_bytes - self._reported[1]
        self._reported = (self.acked, self.acked_bytes)
        return Rate(messages, size, seconds)

    def total_rate(self) -> Rate:
        """Messages and bytes acknowledged from the first send to the last receipt."""
        return Rate(self.acked, self.acked_bytes, (self.end_ns - self.start_ns) / NANOS)

    def send_rate(self) -> Rate:
        """Messages and bytes handed to the client from the first send until the sender stopped:
        the rate the schedule achieved."""
        return Rate(self.sent, self.sent_bytes, (self.send_end_ns - self.start_ns) / NANOS)

    async def close(self) -> None:
        """Close the producers (the client closes anything left)."""
        for producer in self.producers:
            try:
                await producer.close()
            except Exception:  # noqa: BLE001 - closing is best effort at the end of a run
                pass


class ProduceRun:
    """The figures of ``perf produce``: produced rate, pending receipts, errors, publish latency."""

    def __init__(self, load: ProducerLoad) -> None:
        self.load = load

    def interval(self, elapsed_s: float, seconds: float) -> Snapshot:
        """The figures since the previous interval."""
        load = self.load
        return Snapshot(elapsed_s, {"produced": load.interval_rate(seconds)},
                        {"pending": load.pending, "errors": load.errors}, {"publish": load.latency.interval()})

    def total(self) -> Snapshot:
        """The figures of the whole run, from the first send to the last receipt."""
        load = self.load
        rate = load.total_rate()
        return Snapshot(rate.seconds, {"sent": load.send_rate(), "produced": rate},
                        {"pending": load.pending, "errors": load.errors}, {"publish": load.latency.total()})


async def produce_main(connection: Connection, settings: ProducerSettings, output: Output, drain_timeout_s: float) -> bool:
    """``magnetar perf produce``: run, report; whether every message got its receipt."""
    async with open_client(connection) as client:
        load = ProducerLoad(settings)
        await load.start(client)
        stop = asyncio.Event()

        async def body() -> None:
            try:
                await load.run(stop)
            finally:
                await load.drain(drain_timeout_s)

        figures = ProduceRun(load)
        intervals = await drive(body(), figures, output, stop)
        output.final("produce", settings.describe(), figures.total(), intervals, settings.rate)
        if load.errors or load.pending:
            output.note(f"{load.errors} messages failed, {load.pending} without a receipt; first error: {load.first_error}")
        await load.close()
        return not (load.errors or load.pending)
