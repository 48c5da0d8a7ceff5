"""A persistent topic whose ledger is recovered off the loop after a failed sync (topics/recovery.py):
the publishes waiting fail and the producers close at once, the ledger is cut back on the read
thread, and a producer that re-registers meanwhile is answered "not ready" and made ready once the
ledger takes appends again, so no SEND meets a ledger being recovered."""

from __future__ import annotations

import errno
import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from magnetar.broker.commit_rounds import report
from magnetar.broker.config import BrokerConfig
from magnetar.broker.session.producers import SendContext
from magnetar.broker.topics.persistent import PersistentTopic
from magnetar.broker.topics.producer import Producer
from magnetar.broker.transactions.buffer import TransactionBuffer
from magnetar.protocol.enums import ProducerAccessMode
from magnetar.protocol.framing import crc32c, encode_entry
from magnetar.protocol.schema import MessageMetadata
from magnetar.protocol.topic_name import TopicName
from magnetar.storage import LedgerFencedError, ManagedLedger
from magnetar.storage.files import FaultyFileLayer
from magnetar.storage.read_thread import ReadThread
from tests.broker.topics.topic_harness import LEDGER_ID, TOPIC, FakeCommitter, FakeCursors, Wire


class GatedLayer(FaultyFileLayer):
    """Truncates wait for ``gate`` and record their thread."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gate.set()
        self.truncated_on: list[str] = []

    def truncate(self, fd: int, length: int) -> None:
        self.truncated_on.append(threading.current_thread().name)
        assert self.gate.wait(5)
        super().truncate(fd, length)


class Setup:
    """A topic on a ledger with a read thread whose completions the test runs, as the loop would."""

    def __init__(self, tmp_path: Path) -> None:
        self.files = GatedLayer()
        self.posted: queue.Queue[tuple[Callable[[Any], None], Any]] = queue.Queue()
        self.reads = ReadThread(lambda callback, arg: self.posted.put((callback, arg)))
        self.ledger = ManagedLedger.open(tmp_path / "ledger", LEDGER_ID, files=self.files, reads=self.reads)
        self.ledger.sync()
        self.topic = PersistentTopic(TopicName.parse(TOPIC), self.ledger, config=BrokerConfig(data_dir=tmp_path),
                                     committer=FakeCommitter(), cursors=FakeCursors(),  # type: ignore[arg-type]
                                     producer_name_prefix="unit")
        self.wire = Wire()
        self.producer = self.register(1)

    def register(self, producer_id: int) -> Producer:
        producer = Producer(self.wire, producer_id, "p", self.topic, ProducerAccessMode.Shared, True)  # type: ignore[arg-type]
        self.ready = self.topic.add_producer(producer)
        return producer

    def publish(self, sequence_id: int) -> bool:
        entry = encode_entry(MessageMetadata(producer_name="p", sequence_id=sequence_id, publish_time=1), b"m")
        context = SendContext(self.wire, self.producer, sequence_id, 0, 1)  # type: ignore[arg-type]
        return self.topic.publish(self.producer, entry, crc32c(entry), context)

    def failed_round(self) -> None:
        self.files.inject("datasync", errno.EIO, times=1)
        with pytest.raises(LedgerFencedError) as failed:
            self.ledger.sync()
        report(self.topic, failed.value)

    def run_posted(self) -> None:
        callback, arg = self.posted.get(timeout=5)
        callback(arg)

    def close(self) -> None:
        self.ledger.close()
        self.reads.shutdown()


def test_a_producer_registering_during_the_recovery_is_ready_once_the_ledger_takes_appends(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    buffer = setup.topic.txn_buffer = TransactionBuffer(setup.topic)
    assert setup.publish(0)
    report(setup.topic, setup.ledger.sync())
    assert setup.publish(1)
    buffer.appended((0, 1), setup.ledger.last_entry_id)  # entry 1 belongs to an open transaction
    setup.files.gate.clear()  # the cut waits on the read thread
    setup.failed_round()
    assert setup.wire.frames == [("receipt", 0, 0), ("close_producer", 1)]
    assert setup.ledger.fenced and setup.topic.recovery.under_way
    setup.producer = setup.register(2)  # the client re-registers at once
    assert setup.ready is False  # PRODUCER_SUCCESS "not ready": the client waits for the next one
    setup.files.gate.set()
    setup.run_posted()
    assert setup.wire.frames[2:] == [("ready", 2)]
    assert not setup.ledger.fenced and setup.ledger.last_entry_id == 0
    assert setup.files.truncated_on == ["magnetar-read_0"]
    assert setup.publish(1)  # the resend takes entry 1 again: the transaction forgot it
    report(setup.topic, setup.ledger.sync())
    assert setup.wire.frames[3:] == [("receipt", 1, 1)] and setup.topic.last_readable_id == 1
    assert not buffer.hidden(1)
    setup.close()


def test_a_failed_recovery_closes_the_producers_held_and_their_next_registration_retries(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    assert setup.publish(0)
    setup.files.gate.clear()
    setup.files.inject("truncate", errno.EIO, times=1)
    setup.failed_round()
    setup.producer = setup.register(2)
    assert setup.ready is False
    setup.files.gate.set()
    setup.run_posted()
    assert setup.wire.frames == [("close_producer", 1), ("close_producer", 2)]
    assert setup.ledger.fenced and not setup.topic.recovery.under_way
    setup.producer = setup.register(3)  # starts the recovery again
    assert setup.ready is False
    setup.run_posted()
    assert setup.wire.frames[2:] == [("ready", 3)] and not setup.ledger.fenced
    assert setup.publish(5)
    report(setup.topic, setup.ledger.sync())
    assert setup.wire.frames[3:] == [("receipt", 5, 0)]
    setup.close()
