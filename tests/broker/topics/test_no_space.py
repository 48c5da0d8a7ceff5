"""The no-space state of a persistent topic: producers closed, registrations refused with the error
the official clients treat as final, lifted by the probe once space is back."""

from __future__ import annotations

import asyncio
import errno
from pathlib import Path

import pytest

from magnetar.broker.config import BrokerConfig
from magnetar.broker.errors import BrokerError
from magnetar.broker.topics import no_space
from magnetar.broker.topics.no_space import NoSpaceGuard
from magnetar.broker.topics.persistent import PersistentTopic
from magnetar.broker.topics.producer import Producer
from magnetar.protocol.enums import ProducerAccessMode, ServerError
from magnetar.protocol.framing import crc32c, encode_entry
from magnetar.protocol.schema import MessageMetadata
from magnetar.protocol.topic_name import TopicName
from magnetar.storage import ManagedLedger
from magnetar.storage.files import FaultyFileLayer
from magnetar.storage.health import storage_health
from tests.broker.topics.topic_harness import (
    LEDGER_ID,
    TOPIC,
    FakeCommitter,
    FakeCursors,
    RecordingContext,
    RecordingSession,
    TopicHarness,
)


def test_the_guard_refuses_producers_until_the_probe_finds_space(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(no_space, "PROBE_SECONDS", 0.01)
    free = {"bytes": 0}
    monkeypatch.setattr(no_space, "free_bytes", lambda _directory: free["bytes"])
    closed: list[int] = []
    storage_health.reset()

    async def run() -> None:
        guard = NoSpaceGuard("persistent://public/default/t", tmp_path, lambda: closed.append(1))
        guard.check_producer()  # nothing wrong yet
        guard.enter(OSError(errno.ENOSPC, "No space left on device"))
        assert closed == [1] and guard.active and storage_health.disk_full
        with pytest.raises(BrokerError) as refused:
            guard.check_producer()
        assert refused.value.code == ServerError.ProducerBlockedQuotaExceededException
        assert "no space left on the device" in str(refused.value)
        storage_health.write_succeeded()  # a small write that fits does not end it
        assert storage_health.disk_full
        await asyncio.sleep(0.05)
        assert guard.active
        free["bytes"] = no_space.RESUME_FREE_BYTES
        for _ in range(100):
            if not guard.active:
                break
            await asyncio.sleep(0.01)
        assert not guard.active and not storage_health.disk_full
        guard.check_producer()
        guard.close()

    asyncio.run(run())
    storage_health.reset()


def test_a_sync_failing_for_want_of_space_closes_the_producers_and_refuses_them(harness: TopicHarness) -> None:
    storage_health.reset()
    producer = harness.producer("p")
    harness.topic.add_producer(producer)
    harness.publish(producer, 0)
    harness.publish(producer, 1)
    harness.topic.on_sync_failed(OSError(errno.ENOSPC, "No space left on device"))
    assert harness.session.calls == [("closed", producer.producer_id)]
    assert producer.closed  # the session sends no SEND_ERROR for it (SendContext.failed)
    assert harness.log == [("error", 0, ServerError.PersistenceError), ("error", 1, ServerError.PersistenceError)]
    assert harness.topic.no_space.active and not harness.ledger.fenced
    with pytest.raises(BrokerError) as refused:
        harness.topic.add_producer(harness.producer("p"))
    assert refused.value.code == ServerError.ProducerBlockedQuotaExceededException
    assert harness.topic.producers == {}
    storage_health.reset()


def test_another_failure_closes_the_producers_and_lets_them_register_again(harness: TopicHarness) -> None:
    """As Pulsar's PersistentTopic.addFailed: the producers are closed (their publishes fail without a
    SEND_ERROR, the clients resend them once registered again), and nothing refuses them."""
    producer = harness.producer("p")
    harness.topic.add_producer(producer)
    harness.publish(producer, 0)
    harness.topic.on_sync_failed(OSError(errno.EIO, "Input/output error"))
    assert harness.session.calls == [("closed", producer.producer_id)] and producer.closed
    assert harness.log == [("error", 0, ServerError.PersistenceError)] and not harness.topic.no_space.active
    again = harness.producer("p")
    assert harness.topic.add_producer(again) and harness.topic.producers == {"p": again}


def test_an_append_failing_for_want_of_space_fails_the_publish_and_closes_the_producers(tmp_path: Path) -> None:
    storage_health.reset()
    files = FaultyFileLayer()
    ledger = ManagedLedger.open(tmp_path / "ledger", LEDGER_ID, segment_max_bytes=4096, files=files, write_behind=False)
    topic = PersistentTopic(TopicName.parse(TOPIC), ledger, config=BrokerConfig(data_dir=tmp_path),
                            committer=FakeCommitter(), cursors=FakeCursors(), producer_name_prefix="unit")  # type: ignore[arg-type]
    session, log = RecordingSession(), []
    producer = Producer(session, 1, "p", topic, ProducerAccessMode.Shared, True)
    topic.add_producer(producer)
    files.inject("open", errno.ENOSPC, times=-1)  # the next segment cannot be created
    big = encode_entry(MessageMetadata(producer_name="p", sequence_id=0, publish_time=1), b"x" * 3000)
    assert topic.publish(producer, big, crc32c(big), RecordingContext(log, 0))
    topic.on_durable(0)
    assert not topic.publish(producer, big, crc32c(big), RecordingContext(log, 1))  # rolls over: ENOSPC
    assert log == [("receipt", 0, LEDGER_ID, 0), ("error", 1, ServerError.PersistenceError)]
    assert session.calls == [("closed", 1)] and topic.no_space.active
    files.clear()
    topic.close()
    storage_health.reset()


def _topic_on_faulty_files(tmp_path: Path) -> tuple[PersistentTopic, FaultyFileLayer, RecordingSession, Producer]:
    files = FaultyFileLayer()
    ledger = ManagedLedger.open(tmp_path / "ledger", LEDGER_ID, segment_max_bytes=4096, files=files, write_behind=False)
    topic = PersistentTopic(TopicName.parse(TOPIC), ledger, config=BrokerConfig(data_dir=tmp_path),
                            committer=FakeCommitter(), cursors=FakeCursors(), producer_name_prefix="unit")  # type: ignore[arg-type]
    session = RecordingSession()
    producer = Producer(session, 1, "p", topic, ProducerAccessMode.Shared, True)
    topic.add_producer(producer)
    return topic, files, session, producer


def _one_publish_waiting_then_no_space(
    tmp_path: Path,
) -> tuple[PersistentTopic, FaultyFileLayer, RecordingSession, Producer, list[tuple], bytes]:
    """A topic with entry 0 appended and waiting for its round, whose next segment cannot be created."""
    storage_health.reset()
    topic, files, session, producer = _topic_on_faulty_files(tmp_path)
    log: list[tuple] = []
    big = encode_entry(MessageMetadata(producer_name="p", sequence_id=0, publish_time=1), b"x" * 3000)
    assert topic.publish(producer, big, crc32c(big), RecordingContext(log, 0))
    files.inject("open", errno.ENOSPC, times=-1)
    return topic, files, session, producer, log, big


def test_an_append_without_space_waits_for_the_publishes_before_it_to_complete(tmp_path: Path) -> None:
    """The producers are closed only once the entries appended before are durable: their receipts
    reach the client before it fails what it has pending (a receipt after the close is lost, and the
    client would count a stored, readable entry as failed)."""
    topic, files, session, producer, log, big = _one_publish_waiting_then_no_space(tmp_path)
    assert not topic.publish(producer, big, crc32c(big), RecordingContext(log, 1))  # rolls over: ENOSPC
    assert not topic.publish(producer, big, crc32c(big), RecordingContext(log, 2))
    assert log == [] and session.calls == [] and not topic.no_space.active
    topic.on_durable(0)
    assert log == [("receipt", 0, LEDGER_ID, 0), ("error", 1, ServerError.PersistenceError),
                   ("error", 2, ServerError.PersistenceError)]
    assert session.calls == [("closed", 1)] and topic.no_space.active
    files.clear()
    topic.close()
    storage_health.reset()


def test_an_append_without_space_fails_with_the_round_before_it_when_that_fails(tmp_path: Path) -> None:
    topic, files, session, producer, log, big = _one_publish_waiting_then_no_space(tmp_path)
    assert not topic.publish(producer, big, crc32c(big), RecordingContext(log, 1))
    topic.on_sync_failed(OSError(errno.ENOSPC, "No space left on device"))
    assert log == [("error", 0, ServerError.PersistenceError), ("error", 1, ServerError.PersistenceError)]
    assert session.calls == [("closed", 1)] and topic.no_space.active
    files.clear()
    topic.close()
    storage_health.reset()
