"""How a publish completes on the session side: receipts, send errors, backpressure bytes released."""

from __future__ import annotations

from magnetar.broker.session.producers import SendContext
from magnetar.protocol.enums import ServerError


class FakeProducer:
    producer_id = 4
    closed = False


class FakeSession:
    def __init__(self) -> None:
        self.sent: list[tuple] = []
        self.released: list[int] = []

    def publish_done(self, size: int) -> None:
        self.released.append(size)

    def send_receipt(self, producer_id: int, sequence_id: int, highest: int, ledger_id: int, entry_id: int) -> None:
        self.sent.append(("receipt", producer_id, sequence_id, highest, ledger_id, entry_id))

    def send_send_error(self, producer_id: int, sequence_id: int, code: ServerError, message: str) -> None:
        self.sent.append(("error", producer_id, sequence_id, code))


def context(session: FakeSession, producer: FakeProducer, pending: int = 0) -> SendContext:
    ctx = SendContext(session, producer, 7, 9, 3)  # type: ignore[arg-type]
    ctx.pending_bytes = pending
    return ctx


def test_completed_sends_the_receipt_and_releases_the_pending_bytes() -> None:
    session, producer = FakeSession(), FakeProducer()
    context(session, producer, pending=100).completed(5, 42)
    assert session.sent == [("receipt", 4, 7, 9, 5, 42)] and session.released == [100]


def test_a_duplicate_gets_the_receipt_with_message_id_minus_one() -> None:
    session, producer = FakeSession(), FakeProducer()
    context(session, producer).duplicate()
    assert session.sent == [("receipt", 4, 7, 9, -1, -1)] and session.released == []


def test_failed_sends_a_send_error_naming_the_highest_sequence_id() -> None:
    # Pulsar's MessagePublishContext answers max(sequence id, highest sequence id): the Java
    # client matches a SEND_ERROR to its pending send by the highest one
    session, producer = FakeSession(), FakeProducer()
    context(session, producer, pending=10).failed(ServerError.PersistenceError, "disk")
    assert session.sent == [("error", 4, 9, ServerError.PersistenceError)] and session.released == [10]


def test_a_closed_producer_gets_nothing_but_its_bytes_are_released() -> None:
    session, producer = FakeSession(), FakeProducer()
    producer.closed = True
    context(session, producer, pending=8).completed(5, 1)
    context(session, producer, pending=8).failed(ServerError.PersistenceError, "disk")
    assert session.sent == [] and session.released == [8, 8]
