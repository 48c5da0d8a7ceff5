"""The sync face's wait for messages (client/sync/delivery.py): what a waiting application thread
gets, and when the broker gets its permits back.

While a thread waits in ``receive()``, each run of MESSAGE frames is moved to the sync buffer on
the loop thread and counted as consumed; a FLOW this causes reaches the broker at once, while the
rest of the same read is still being decoded, with exactly half the queue's permits (the move stops
there). Messages come out exactly and in order, a timeout raises the client's Timeout, and closing
or unsubscribing wakes a waiting thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from magnetar.client import AlreadyClosed, Client, Timeout
from magnetar.protocol.batch import build_entry
from magnetar.protocol.enums import CommandType
from magnetar.protocol.framing import encode_payload_command
from magnetar.protocol.schema import BaseCommand, MessageMetadata

from ..conftest import RECEIVE_MS, ThreadedFake


def _entry(payload: bytes) -> bytes:
    return build_entry(MessageMetadata(producer_name="p", sequence_id=0, publish_time=1), payload)


def _frames(consumer_id: int, first: int, count: int) -> bytes:
    """MESSAGE frames of entries first..first+count-1 (payload m<entry id>) as one byte string."""
    out = []
    for entry_id in range(first, first + count):
        cmd = BaseCommand(type=CommandType.MESSAGE)
        cmd.message.consumer_id = consumer_id
        cmd.message.message_id.ledger_id = 1
        cmd.message.message_id.entry_id = entry_id
        out.append(encode_payload_command(cmd, _entry(b"m%d" % entry_id)))
    return b"".join(out)


def _flows(threaded_fake: ThreadedFake, consumer_id: int) -> list[int]:
    fake = threaded_fake.fake
    return [f.message_permits for f in threaded_fake.call(fake.commands, CommandType.FLOW) if f.consumer_id == consumer_id]


def _until(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)
    return True


def _receiving(consumer: object, count: int, got: list, errors: list) -> threading.Thread:
    """A thread receiving ``count`` messages into ``got`` (an exception into ``errors``)."""

    def receive() -> None:
        try:
            for _ in range(count):
                got.append(consumer.receive(RECEIVE_MS))  # type: ignore[attr-defined]
        except Exception as exc:  # noqa: BLE001 - the test reads it
            errors.append(exc)

    thread = threading.Thread(target=receive, daemon=True)
    thread.start()
    return thread


def test_flow_reaches_the_broker_while_the_rest_of_the_read_is_decoded(threaded_fake: ThreadedFake, client_factory) -> None:  # noqa: ANN001
    fake = threaded_fake.fake
    client: Client = client_factory(fake.url)
    consumer = client.subscribe("t", "sub", receiver_queue_size=200)
    core = consumer.core
    assert _until(lambda: _flows(threaded_fake, core.consumer_id) == [200])
    got: list = []
    errors: list = []
    thread = _receiving(consumer, 200, got, errors)
    assert _until(lambda: consumer._delivery._wanted)  # the thread waits for a delivery
    # runs of 64 frames: the second run crosses half the queue (a FLOW of 100); the third run is
    # handled only once the broker has that FLOW (or 2 s passed: the FLOW waited for the read)
    runs = []
    handle_run = core.on_message_frames

    def on_message_frames(frames: list) -> None:
        runs.append(len(frames))
        if len(runs) == 3:
            runs.append(_until(lambda: len(_flows(threaded_fake, core.consumer_id)) == 2, 2.0))
        handle_run(frames)

    core.on_message_frames = on_message_frames
    threaded_fake.call(fake.connections[0].send_raw, _frames(core.consumer_id, 0, 200))  # one write
    thread.join(RECEIVE_MS / 1000)
    assert not errors
    assert [m.data() for m in got] == [b"m%d" % i for i in range(200)]
    assert [m.message_id().entry_id for m in got] == list(range(200))
    if runs[:2] == [64, 64]:  # the 200 frames came in one read, as written
        assert runs[3] is True, "the FLOW was written only after the whole read was decoded"
    # half the queue's permits each time half the queue was consumed, as a per-message receive does
    assert _until(lambda: _flows(threaded_fake, core.consumer_id) == [200, 100, 100])


def test_order_and_permits_across_many_reads_while_a_thread_waits(threaded_fake: ThreadedFake, client_factory) -> None:  # noqa: ANN001
    fake = threaded_fake.fake
    client: Client = client_factory(fake.url)
    consumer = client.subscribe("t", "sub", receiver_queue_size=100)
    core = consumer.core
    total = 3000
    got: list = []
    errors: list = []
    thread = _receiving(consumer, total, got, errors)
    sent = 0
    sizes = [1, 7, 64, 65, 100, 3, 129, 50]
    i = 0
    while sent < total:
        # the broker's rule: never beyond the permits granted
        granted = sum(_flows(threaded_fake, core.consumer_id))
        n = min(sizes[i % len(sizes)], total - sent, granted - sent)
        i += 1
        if n <= 0:
            assert _until(lambda s=sent: sum(_flows(threaded_fake, core.consumer_id)) > s)
            continue
        threaded_fake.call(fake.connections[0].send_raw, _frames(core.consumer_id, sent, n))
        sent += n
    thread.join(RECEIVE_MS / 1000)
    assert not errors
    assert [m.data() for m in got] == [b"m%d" % i for i in range(total)]
    # the consumed messages' permits, once at least half the queue's worth was consumed
    assert _until(lambda: sum(_flows(threaded_fake, core.consumer_id)) > total + 50)
    flows = _flows(threaded_fake, core.consumer_id)
    assert flows[0] == 100
    assert all(f >= 50 for f in flows[1:])
    assert total - 50 < sum(flows[1:]) <= total


def test_receive_timeout_while_waiting_then_the_next_message(threaded_fake: ThreadedFake, client_factory) -> None:  # noqa: ANN001
    fake = threaded_fake.fake
    client: Client = client_factory(fake.url)
    consumer = client.subscribe("t", "sub", receiver_queue_size=10)
    core = consumer.core
    started = time.monotonic()
    with pytest.raises(Timeout):
        consumer.receive(150)
    assert 0.14 <= time.monotonic() - started < 5
    threaded_fake.call(fake.connections[0].send_raw, _frames(core.consumer_id, 0, 3))
    assert [consumer.receive(RECEIVE_MS).data() for _ in range(3)] == [b"m0", b"m1", b"m2"]
    with pytest.raises(Timeout):
        consumer.receive(0)


@pytest.mark.parametrize("how", ["close", "unsubscribe"])
def test_close_or_unsubscribe_wakes_a_waiting_receive(threaded_fake: ThreadedFake, client_factory, how: str) -> None:  # noqa: ANN001
    fake = threaded_fake.fake
    client: Client = client_factory(fake.url)
    consumer = client.subscribe("t", "sub", receiver_queue_size=10)
    got: list = []
    errors: list = []
    thread = _receiving(consumer, 1, got, errors)
    assert _until(lambda: consumer._delivery._wanted)
    started = time.monotonic()
    getattr(consumer, how)()
    thread.join(5)
    assert not thread.is_alive()
    assert time.monotonic() - started < 5
    assert got == []
    assert len(errors) == 1 and isinstance(errors[0], AlreadyClosed)


def test_short_timeouts_racing_deliveries_lose_nothing(threaded_fake: ThreadedFake, client_factory) -> None:  # noqa: ANN001
    fake = threaded_fake.fake
    client: Client = client_factory(fake.url)
    consumer = client.subscribe("t", "sub", receiver_queue_size=20)
    core = consumer.core
    total = 400
    got: list = []
    timeouts = [0]

    def receive() -> None:
        deadline = time.monotonic() + 30
        while len(got) < total and time.monotonic() < deadline:
            try:
                got.append(consumer.receive(1))
            except Timeout:
                timeouts[0] += 1

    thread = threading.Thread(target=receive, daemon=True)
    thread.start()
    sent = 0
    while sent < total:
        n = min(1 + sent % 5, total - sent)
        threaded_fake.call(fake.connections[0].send_raw, _frames(core.consumer_id, sent, n))
        sent += n
        time.sleep(0.0005 * (sent % 3))
    thread.join(35)
    assert [m.data() for m in got] == [b"m%d" % i for i in range(total)]
    assert timeouts[0] > 0  # the waits did time out in between
