"""The sync face's blocking send: its answer, its errors and timeouts in the caller's thread, and
the order of sends made from several threads."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from magnetar.client import AlreadyClosed, Client, InitialPosition, Timeout

from ..conftest import RECEIVE_MS, ThreadedFake


def test_send_returns_the_id_the_consumer_sees(client: Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", initial_position=InitialPosition.Earliest)
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(b"m%d" % i) for i in range(20)]
    got = [consumer.receive(RECEIVE_MS) for _ in range(20)]
    assert [m.data() for m in got] == [b"m%d" % i for i in range(20)]
    assert [m.message_id() for m in got] == ids


def test_send_error_is_raised_in_the_callers_thread(client: Client, topic: str) -> None:
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"before")
    producer.close()
    with pytest.raises(AlreadyClosed):
        producer.send(b"after")


def test_send_times_out_when_the_broker_never_answers(
    threaded_fake: ThreadedFake, client_factory: Callable[..., Client]
) -> None:
    fake = threaded_fake.fake
    client = client_factory(fake.url)
    producer = client.create_producer("t", batching_enabled=False, send_timeout_millis=300)
    fake.answer_sends = False
    start = time.monotonic()
    with pytest.raises(Timeout):
        producer.send(b"never answered")
    assert time.monotonic() - start < 5
    fake.answer_sends = True
    assert producer.send(b"answered") is not None


def test_sends_from_several_threads_keep_each_threads_order(client: Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", initial_position=InitialPosition.Earliest)
    producer = client.create_producer(topic, batching_enabled=False)
    threads_n, per_thread = 4, 100
    ids: dict[int, list] = {t: [] for t in range(threads_n)}

    def send_all(t: int) -> None:
        for i in range(per_thread):
            ids[t].append(producer.send(b"%d:%d" % (t, i)))

    threads = [threading.Thread(target=send_all, args=(t,)) for t in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    received: dict[int, list[int]] = {t: [] for t in range(threads_n)}
    for _ in range(threads_n * per_thread):
        t, i = consumer.receive(RECEIVE_MS).data().split(b":")
        received[int(t)].append(int(i))
    assert received == {t: list(range(per_thread)) for t in range(threads_n)}
    for t in range(threads_n):
        assert ids[t] == sorted(ids[t])
