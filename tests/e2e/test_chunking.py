"""Chunked messages: large payloads split by the producer, reassembled by the consumer."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import time
from collections.abc import Callable

import pulsar
import pytest

from magnetar.testing import BrokerProcess

from .helpers import QUIET_MS, RECEIVE_MS, assert_nothing_more

MiB = 1024 * 1024


def _payload(size: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(size)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _chunking_producer(client: pulsar.Client, topic: str, name: str | None = None) -> pulsar.Producer:
    return client.create_producer(
        topic, producer_name=name, chunking_enabled=True, batching_enabled=False, send_timeout_millis=20_000
    )


def test_12_mib_message_round_trip_and_ack(client: pulsar.Client, client2: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "big", consumer_type=pulsar.ConsumerType.Shared)
    producer = _chunking_producer(client2, topic)
    big = _payload(12 * MiB, 1)
    producer.send(big, properties={"kind": "big"})
    producer.send(b"small-after")
    msg = consumer.receive(timeout_millis=RECEIVE_MS)
    data = msg.data()
    assert len(data) == len(big)
    assert _digest(data) == _digest(big)
    assert msg.properties() == {"kind": "big"}
    consumer.acknowledge(msg)
    small = consumer.receive(timeout_millis=RECEIVE_MS)
    assert small.data() == b"small-after"
    consumer.acknowledge(small)
    assert_nothing_more(consumer, QUIET_MS // 2)
    consumer.close()
    # every chunk was acknowledged with the message: nothing comes back on re-subscribing
    again = client.subscribe(topic, "big", consumer_type=pulsar.ConsumerType.Shared)
    assert_nothing_more(again)
    # a reader from the earliest still reassembles it from storage
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert _digest(reader.read_next(timeout_millis=RECEIVE_MS).data()) == _digest(big)
    assert reader.read_next(timeout_millis=RECEIVE_MS).data() == b"small-after"
    reader.close()


def _chunk_span(msg: pulsar.Message) -> tuple[int, int]:
    """(first, last) entry id of a chunked message, from the client's "(first);(last)" id text."""
    first, last = str(msg.message_id()).split(";")
    return int(first.strip("()").split(",")[1]), int(last.strip("()").split(",")[1])


def test_interleaved_chunked_messages_from_two_producers(
    dedicated_broker: Callable[..., BrokerProcess],
    client_factory: Callable[[str], pulsar.Client],
    topic: str,
) -> None:
    # small chunks (the broker's max message size sizes them) make the producers interleave
    broker = dedicated_broker(env={"MAGNETAR_MAX_MESSAGE_SIZE": str(128 * 1024)})
    client = client_factory(broker.service_url)
    client2 = client_factory(broker.service_url)
    consumer = client.subscribe(topic, "mix", consumer_type=pulsar.ConsumerType.Exclusive)
    p1 = _chunking_producer(client, topic, "chunker-1")
    p2 = _chunking_producer(client2, topic, "chunker-2")
    interleaved = False
    # a round whose chunks happened not to interleave is repeated (at most three rounds), so
    # the consumer's reassembly of interleaved chunks is really exercised
    for round_no in range(3):
        payloads = {
            "a0": _payload(3 * MiB, 10 + round_no),
            "b0": _payload(3 * MiB + 17, 20 + round_no),
            "a1": _payload(2 * MiB, 30 + round_no),
            "b1": _payload(2 * MiB + 5, 40 + round_no),
        }
        results: dict[str, object] = {}

        def sent(key: str, results: dict[str, object] = results):  # noqa: ANN202
            return lambda res, msg_id: results.__setitem__(key, res)

        # both clients' chunks pile up in the sockets while the broker is paused; resumed, it
        # reads the two connections in turn, so the chunks of the two producers interleave
        os.kill(broker.proc.pid, signal.SIGSTOP)
        try:
            for key in ("a0", "b0", "a1", "b1"):
                producer = p1 if key.startswith("a") else p2
                producer.send_async(payloads[key], sent(key), properties={"key": key})
            time.sleep(0.5)
        finally:
            os.kill(broker.proc.pid, signal.SIGCONT)
        p1.flush()
        p2.flush()
        assert results == dict.fromkeys(payloads, pulsar.Result.Ok)
        got: dict[str, str] = {}
        spans: dict[str, tuple[int, int]] = {}
        order = []
        for _ in payloads:
            msg = consumer.receive(timeout_millis=RECEIVE_MS)
            key = msg.properties()["key"]
            assert key not in got, f"{key} delivered twice"
            got[key] = _digest(msg.data())
            spans[key] = _chunk_span(msg)
            order.append(key)
            consumer.acknowledge(msg)
        assert got == {k: _digest(v) for k, v in payloads.items()}
        # each producer's messages arrive in its own order
        assert order.index("a0") < order.index("a1")
        assert order.index("b0") < order.index("b1")
        assert_nothing_more(consumer, QUIET_MS // 2)
        interleaved = any(
            spans[a][0] < spans[b][1] and spans[b][0] < spans[a][1]
            for a in ("a0", "a1")
            for b in ("b0", "b1")
        )
        if interleaved:
            break
    assert interleaved, "the two producers' chunks never interleaved in the topic"


def test_oversized_message_without_chunking_is_refused(
    client: pulsar.Client, client2: pulsar.Client, topic: str
) -> None:
    consumer = client.subscribe(topic, "sub")
    producer = client2.create_producer(topic, batching_enabled=False)
    with pytest.raises(pulsar.MessageTooBig):
        producer.send(_payload(6 * MiB, 3))
    producer.send(b"small-1")
    producer.send(b"small-2")
    assert [consumer.receive(timeout_millis=RECEIVE_MS).data() for _ in range(2)] == [b"small-1", b"small-2"]
    assert_nothing_more(consumer, QUIET_MS // 2)


@pytest.fixture(scope="module")
def small_message_broker(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 - Iterator[BrokerProcess]
    """A broker whose maximum message size is 100 KiB, so that 350 KB messages go in 4 chunks."""
    data = tmp_path_factory.mktemp("chunks-shared") / "data"
    with BrokerProcess(data, env={"MAGNETAR_MAX_MESSAGE_SIZE": str(100 * 1024)}) as broker:
        yield broker


def test_every_chunk_of_a_message_goes_to_one_shared_consumer(
    small_message_broker: BrokerProcess, client_factory: Callable[[str], pulsar.Client]
) -> None:
    """Issue 12 defect 7: on a Shared subscription with two consumers, every chunk of a chunked
    message goes to the same consumer (as Pulsar since 2.11), so both consumers reassemble theirs."""
    topic = f"chunks-shared-{random.randrange(1 << 30)}"
    clients = [client_factory(small_message_broker.service_url) for _ in range(3)]
    consumers = [
        c.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared, consumer_name=f"c{i}")
        for i, c in enumerate(clients[:2])
    ]
    producer = _chunking_producer(clients[2], topic)
    payloads = [_payload(350_000, 100 + i) for i in range(4)]
    for payload in payloads:
        producer.send(payload)
    got: dict[str, int] = {}
    deadline = time.monotonic() + 30
    while len(got) < len(payloads) and time.monotonic() < deadline:
        for i, consumer in enumerate(consumers):
            try:
                msg = consumer.receive(timeout_millis=200)
            except pulsar.Timeout:
                continue
            consumer.acknowledge(msg)
            digest = _digest(msg.data())
            assert digest not in got, "a message was delivered twice"
            got[digest] = i
    assert set(got) == {_digest(p) for p in payloads}
    for consumer in consumers:
        assert_nothing_more(consumer, QUIET_MS // 2)
