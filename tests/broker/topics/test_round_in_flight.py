"""A persistent topic while a commit round is in flight (begun, written, not ended): what reaches the
client, in which order, when a termination, a fenced ledger, a deletion or a transaction's marker
comes between the append of an entry and the end of its round.

The rule (Pulsar's): a client that got a receipt has the entry stored and readable; a client that got
an error for an entry never sees it dispatched; nothing acknowledged is lost. The official clients
close the connection on a SEND_ERROR (the receipts behind it are lost and the entries resent), and
fail everything pending when their closed producer is refused: so what refuses must reach the client
after the receipts of the entries appended before it. The session here is the real ``SendContext``
over a fake wire that records, in one list, what would be written to the client's socket.
"""

from __future__ import annotations

import errno
from pathlib import Path

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
from magnetar.storage.health import storage_health
from tests.broker.topics.topic_harness import LEDGER_ID, TOPIC, FakeCommitter, FakeCursors, Wire


class Setup:
    """One topic on a ledger whose files can fail, a producer on the fake wire, the commit rounds driven by hand."""

    def __init__(self, tmp_path: Path) -> None:
        storage_health.reset()
        self.files = FaultyFileLayer()
        self.ledger = ManagedLedger.open(tmp_path / "ledger", LEDGER_ID, files=self.files)
        self.ledger.sync()  # the new directory: not part of the rounds under test
        self.topic = PersistentTopic(TopicName.parse(TOPIC), self.ledger, config=BrokerConfig(data_dir=tmp_path),
                                     committer=FakeCommitter(), cursors=FakeCursors(),  # type: ignore[arg-type]
                                     producer_name_prefix="unit")
        self.wire = Wire()
        self.producer = Producer(self.wire, 1, "p", self.topic, ProducerAccessMode.Shared, True)  # type: ignore[arg-type]
        self.topic.add_producer(self.producer)

    def reregister(self) -> None:
        """The client's producer registers again after the broker closed it."""
        assert self.producer.closed
        self.producer = Producer(self.wire, 1, "p", self.topic, ProducerAccessMode.Shared, True)  # type: ignore[arg-type]
        self.topic.add_producer(self.producer)

    def publish(self, sequence_id: int) -> bool:
        """A SEND as the session makes it: the bytes count as pending while the entry waits for its round."""
        entry = encode_entry(MessageMetadata(producer_name="p", sequence_id=sequence_id, publish_time=1), b"m")
        context = SendContext(self.wire, self.producer, sequence_id, 0, 1)  # type: ignore[arg-type]
        appended = self.topic.publish(self.producer, entry, crc32c(entry), context)
        if appended:
            context.pending_bytes = len(entry)
            self.wire.pending_bytes += len(entry)
        return appended

    def round(self) -> None:
        """A whole commit round of the topic, reported."""
        report(self.topic, self.ledger.sync())

    def failed_round(self) -> None:
        """A commit round of the topic whose fdatasync fails (EIO), reported."""
        self.files.inject("datasync", errno.EIO, times=1)
        with pytest.raises(LedgerFencedError) as failed:
            self.ledger.sync()
        report(self.topic, failed.value)


def test_a_termination_completes_the_publishes_before_it_then_closes_the_producers(tmp_path: Path) -> None:
    """Terminating with entries waiting for their round: their receipts go out first, then the
    CLOSE_PRODUCER (the client, refused with TopicTerminated when it re-registers, fails what it still
    has pending: it must not have the stored entries pending then); the last message id given is the
    last entry stored, and a publish made meanwhile is refused after the receipts."""
    setup = Setup(tmp_path)
    assert setup.publish(0) and setup.publish(1)
    ended: list[tuple[int, int]] = []
    setup.topic.terminate(lambda *last: ended.append(last))
    assert not setup.publish(2)
    assert setup.wire.frames == [] and ended == [] and not setup.topic.terminated
    setup.round()
    assert setup.wire.frames == [("receipt", 0, 0), ("receipt", 1, 1), ("close_producer", 1)]
    assert ended == [(LEDGER_ID, 1)] and setup.topic.terminated and setup.topic.last_readable_id == 1
    assert setup.wire.pending_bytes == 0 and setup.ledger.last_entry_id == 1
    setup.ledger.close()


def test_a_termination_whose_round_fails_ends_at_what_is_durable(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    assert setup.publish(0)
    setup.round()
    assert setup.publish(1)
    ended: list[tuple[int, int]] = []
    setup.topic.terminate(lambda *last: ended.append(last))
    setup.failed_round()
    assert setup.wire.frames == [("receipt", 0, 0), ("close_producer", 1)]  # 1 failed, without a SEND_ERROR
    assert ended == [(LEDGER_ID, 0)] and setup.topic.terminated and setup.wire.pending_bytes == 0
    assert setup.ledger.last_entry_id == 0 and not setup.ledger.fenced
    setup.ledger.close()


def test_a_publish_on_a_ledger_fenced_by_the_next_rounds_write_is_refused_after_the_receipts_before_it(
    tmp_path: Path,
) -> None:
    """Round k is written and fdatasyncing when round k+1's write fails (EIO) and fences the ledger. A
    SEND then must not be answered before k's receipts: a SEND_ERROR makes the official clients close
    the connection, k's receipts would be lost and its entries resent and stored twice."""
    setup = Setup(tmp_path)
    assert setup.publish(0)
    round_k = setup.ledger.begin_sync()  # written; its fdatasync to run
    assert setup.publish(1)
    setup.files.inject("write", errno.EIO, times=1)
    with pytest.raises(LedgerFencedError) as round_k1:
        setup.ledger.begin_sync()
    assert not setup.publish(2)  # on the fenced ledger
    assert setup.wire.frames == []
    round_k.run()
    setup.topic.on_durable(setup.ledger.end_sync(round_k))
    report(setup.topic, round_k1.value)
    # as Pulsar's addFailed: the producer is closed, 1 and 2 fail without a SEND_ERROR
    assert setup.wire.frames == [("receipt", 0, 0), ("close_producer", 1)]
    assert not setup.ledger.fenced and setup.ledger.last_entry_id == 0
    setup.reregister()
    assert setup.publish(1) and setup.publish(2)  # what the client had pending, resent
    setup.round()
    assert setup.wire.frames[2:] == [("receipt", 1, 1), ("receipt", 2, 2)]
    assert setup.ledger.last_entry_id == 2 and setup.wire.pending_bytes == 0
    setup.ledger.close()


def test_a_deleted_topic_releases_the_bytes_of_the_publishes_waiting(tmp_path: Path) -> None:
    """The committer reports nothing to a closed topic: the publishes waiting as it is deleted fail
    (their producers closed, no SEND_ERROR), or the connection's backpressure would count their bytes
    for ever (and pause it, and the broker's other connections, once enough were lost so)."""
    setup = Setup(tmp_path)
    assert setup.publish(0) and setup.publish(1)
    assert setup.wire.pending_bytes > 0
    setup.producer.close_by_broker()  # as the service does first
    setup.topic.delete_ledger()
    assert setup.wire.frames == [("close_producer", 1)]
    assert setup.wire.pending_bytes == 0 and setup.topic.closed


def test_a_transaction_marker_refused_by_a_fenced_ledger_fails_the_end_and_the_next_end_writes_it(
    tmp_path: Path,
) -> None:
    """END_TXN while the ledger is fenced with publishes waiting: the marker cannot be appended. The
    end fails (the coordinator retries it), and the retry, after the recovery, appends the marker and
    succeeds; before, the transaction stayed 'ending' for ever and every retry waited for good."""
    setup = Setup(tmp_path)
    buffer = setup.topic.txn_buffer = TransactionBuffer(setup.topic)
    assert setup.publish(0)
    setup.files.inject("write", errno.EIO, times=1)
    with pytest.raises(LedgerFencedError) as failed:
        setup.ledger.begin_sync()
    answers: list[str | None] = []
    buffer.end((0, 1), True, answers.append)
    assert len(answers) == 1 and answers[0] is not None and "fenced" in answers[0]
    report(setup.topic, failed.value)  # the failed round's report: 0 fails, the ledger recovers
    buffer.end((0, 1), True, answers.append)
    setup.round()
    assert answers[1:] == [None] and buffer.ended == {(0, 1): True}
    assert setup.ledger.last_entry_id == 0 and buffer.hidden(0)  # the marker, where entry 0 was cut
    setup.ledger.close()


def test_an_entry_that_takes_the_place_of_a_lost_marker_or_transaction_message_is_delivered(tmp_path: Path) -> None:
    """A round that held a transaction's marker and another transaction's message fails: after the
    recovery the next appends get their entry ids. A plain message stored there, with its receipt,
    must not be hidden as the lost marker was, nor held back (then hidden at the abort) as the lost
    message of the open transaction."""
    setup = Setup(tmp_path)
    buffer = setup.topic.txn_buffer = TransactionBuffer(setup.topic)
    assert setup.publish(0)
    setup.round()
    answers: list[str | None] = []
    buffer.end((0, 1), True, answers.append)  # its marker: entry 1
    assert setup.publish(1)  # entry 2, a message of the open transaction (0, 2)
    buffer.appended((0, 2), setup.ledger.last_entry_id)
    setup.failed_round()
    assert len(answers) == 1 and "Input/output error" in str(answers[0]) and setup.ledger.last_entry_id == 0
    setup.reregister()
    assert setup.publish(7) and setup.publish(8)  # entries 1 and 2 again
    setup.round()
    assert setup.wire.frames[-2:] == [("receipt", 7, 1), ("receipt", 8, 2)]
    assert setup.topic.last_readable_id == 2 and not buffer.hidden(1) and not buffer.hidden(2)
    buffer.end((0, 2), False, answers.append)  # the open transaction aborts: its lost message hid nothing
    setup.round()
    assert answers[1:] == [None] and not buffer.hidden(2) and buffer.hidden(3)
    setup.ledger.close()
